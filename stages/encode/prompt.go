package encode

import (
	"errors"
	"fmt"

	kencode "dragonx/kernels/encode"
	"dragonx/kernels/ir"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

// ConstructionPrompt returns the token ids of a construction task's prompt
// for the unscheduled function f, as encode writes a held-out construction
// task's: the kernel text of f (the harvest's kernel text is that, checked
// above) with no source script and no latency bucket, tokenized with voc and
// checked to decode back. Tasks from outside the harvest (kernels/taskset)
// get their prompts here.
func ConstructionPrompt(voc *vocab.Vocab, f *ir.PrimFunc) ([]int, error) {
	kernel, err := kencode.Kernel(f)
	if err != nil {
		return nil, fmt.Errorf("the workload has no kernel text: %w", err)
	}
	p := kencode.Prompt{Kernel: kernel, Bucket: -1}
	text, err := p.Format()
	if err != nil {
		return nil, err
	}
	ids, err := voc.Encode(string(text))
	if err != nil {
		return nil, fmt.Errorf("the prompt text does not tokenize: %w", err)
	}
	if len(ids) == 0 {
		return nil, errors.New("the prompt has no tokens")
	}
	if err := checkTokens(voc, "prompt", text, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// DecisionsConstructionPrompt returns the token ids of a construction
// task's prompt in the decisions format, as encode writes a held-out
// construction task's with format = "decisions": spec's numbers and f's
// block domains (kernels/encode.DecisionsPrompt), no source, no latency
// bucket; checked to parse back into the same function.
func DecisionsConstructionPrompt(voc *vocab.Vocab, spec *workload.Spec, f *ir.PrimFunc) ([]int, error) {
	p := kencode.DecisionsPrompt{Spec: spec, Func: f, Bucket: -1}
	ids, err := p.Format(voc)
	if err != nil {
		return nil, err
	}
	q, err := kencode.ParseDecisionsPrompt(voc, ids)
	if err != nil {
		return nil, fmt.Errorf("the prompt does not parse: %w", err)
	}
	if q.Func == nil || ir.Hash(q.Func) != ir.Hash(f) || q.Source != nil || q.Bucket != -1 {
		return nil, errors.New("the prompt parses into other parts")
	}
	return ids, nil
}
