// Package judge judges what the language model wrote for a held-out task:
// a sequence of token ids, which should be a script (kernels/encode) of
// the task's workload followed by <eos>. It is what the sft stage's
// held-out metrics, the RL reward and the benchmark share.
//
// # Phases
//
// A judgement goes through the phases of kernels/verdict, preceded by one
// of its own, and stops at the first that fails; the Result is a
// verdict.Verdict naming the last phase reached:
//
//	decode    the ids become text (kernels/vocab): the sequence must end
//	          with <eos> (tokens after the first <eos> are ignored; a
//	          sequence without one was cut and fails), and hold no <pad>
//	          and no id outside the vocabulary before it
//	parse     the text is a script (kernels/encode's syntax)
//	replay    encode.Decode replays the script on the workload: every
//	          instruction applies, every sampling instruction carries a
//	          valid decision, and the script is the canonical text of the
//	          trace it gives
//	postproc  the CUDA postprocessors other than VerifyGPUCode accept the
//	          schedule (kernels/verdict)
//	verify    VerifyGPUCode accepts it: the static verdict passes
//	numeric   the numerical gate (kernels/numeric) accepts the lowered
//	          program (Options.Until = verdict.PhaseNumeric)
//	latency   a kernels/latency source gives its latency, labelled with the
//	          source: "model:h100" is a model's estimate, never a
//	          measurement (Options.Latency)
//
// parse and replay are one pass of encode.Decode (a syntax error is a
// parse failure, any other error a replay failure); postproc, verify,
// numeric and latency are verdict.CheckTrace on the decoded trace, so the
// judge's verdicts are the search's and the sampler's.
//
// A judgement is deterministic: it depends on the workload, the tokens and
// the options (the numeric gate's inputs come from Options.Numeric.Seed),
// except when it runs out of time. Only a failure of the judge itself (a
// cancelled context, no C compiler for the gate) is an error; anything the
// model wrote gives a Result.
//
// # Deadline
//
// A judgement returns a verdict within its deadline, the earlier of the
// context's and Options.Timeout after it starts: when the deadline passes
// first, the result is a failure of the phase in progress, whose error
// says so (with numeric_kind timeout in the numeric phase), and the
// programs the gate was running are killed. Cancelling the context
// (context.Canceled) is an error, not a verdict. Without a deadline a
// judgement is still bounded: the gate refuses or stops every program that
// would run too long or allocate too much (kernels/numeric, Bounds), with
// a resources or timeout verdict. Every such verdict is a failure, which
// the sft metrics, the RL reward and the bench count as incorrect.
package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"dragonx/kernels/encode"
	"dragonx/kernels/ir"
	"dragonx/kernels/latency"
	"dragonx/kernels/numeric"
	"dragonx/kernels/postproc"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

// PhaseDecode is the judge's own first phase: token ids to text.
const PhaseDecode verdict.Phase = "decode"

// allPhases are the judge's phases, in order.
var allPhases = [...]verdict.Phase{
	PhaseDecode, verdict.PhaseParse, verdict.PhaseReplay, verdict.PhasePostproc,
	verdict.PhaseVerify, verdict.PhaseNumeric, verdict.PhaseLatency,
}

// Options configure a Judge. The zero value judges up to the static
// verdict (verify).
type Options struct {
	// Until is the last phase to run: PhaseDecode, verdict.PhaseReplay
	// (parse and replay), verdict.PhasePostproc, verdict.PhaseVerify (the
	// static verdict; "" means this), verdict.PhaseNumeric or
	// verdict.PhaseLatency (the static verdict, then the latency), as in
	// verdict.Options. Parse alone is not a stopping point: it and replay
	// are one pass.
	Until verdict.Phase
	// Latency, when set, adds the latency phase after the last phase run
	// (verify or numeric); PhaseLatency needs it. It must be safe for
	// concurrent use if Judge is called concurrently (gpumodel's models
	// are).
	Latency latency.Source
	// Numeric configures the numerical gate (its seed, tolerances, cache
	// directory) when Gate is nil.
	Numeric numeric.Options
	// Gate is the numerical gate to share (its compiler and caches) across
	// judges; nil makes one from Numeric when Until is numeric.
	Gate *numeric.Gate
	// Vocab is the vocabulary of the ids; nil means vocab.Default().
	Vocab *vocab.Vocab
	// Timeout bounds each judgement (see Deadline in the package doc); 0
	// means the context's deadline alone.
	Timeout time.Duration
}

// phases returns the phases run with opts, in order, checking opts.
func (o *Options) phases() ([]verdict.Phase, error) {
	until := o.Until
	if until == "" {
		until = verdict.PhaseVerify
	}
	last := slices.Index(allPhases[:], until)
	if last < 0 || until == verdict.PhaseParse {
		return nil, fmt.Errorf("judge: Options.Until is %q; want %s, %s, %s, %s, %s or %s", string(o.Until),
			PhaseDecode, verdict.PhaseReplay, verdict.PhasePostproc, verdict.PhaseVerify, verdict.PhaseNumeric, verdict.PhaseLatency)
	}
	if until == verdict.PhaseLatency {
		if o.Latency == nil {
			return nil, fmt.Errorf("judge: Options.Until is %s without an Options.Latency source", verdict.PhaseLatency)
		}
		// The static verdict, then the latency: no numeric phase.
		return []verdict.Phase{PhaseDecode, verdict.PhaseParse, verdict.PhaseReplay, verdict.PhasePostproc, verdict.PhaseVerify, verdict.PhaseLatency}, nil
	}
	out := slices.Clone(allPhases[:last+1])
	if o.Latency != nil {
		if until != verdict.PhaseVerify && until != verdict.PhaseNumeric {
			return nil, fmt.Errorf("judge: Options.Latency needs Until %s, %s or %s, not %s", verdict.PhaseVerify, verdict.PhaseNumeric, verdict.PhaseLatency, until)
		}
		out = append(out, verdict.PhaseLatency)
	}
	return out, nil
}

// Judge judges token sequences for one workload. It is immutable and safe
// for concurrent use.
type Judge struct {
	spec   *workload.Spec
	f      *ir.PrimFunc
	v      *vocab.Vocab
	phases []verdict.Phase
	vopts  verdict.Options // for CheckTrace; Until "" when decode is the last phase
	eos    int
	pad    int
	// timeout is Options.Timeout.
	timeout time.Duration
}

// New builds the workload of spec once and returns its judge.
func New(spec *workload.Spec, opts Options) (*Judge, error) {
	if spec == nil {
		return nil, errors.New("judge: no workload spec")
	}
	phases, err := opts.phases()
	if err != nil {
		return nil, err
	}
	f, err := spec.Build()
	if err != nil {
		return nil, fmt.Errorf("judge: workload %s: %w", spec.Label(), err)
	}
	v := opts.Vocab
	if v == nil {
		if v, err = vocab.Default(); err != nil {
			return nil, fmt.Errorf("judge: %w", err)
		}
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("judge: Options.Timeout is %s; want a positive duration, or 0 for none", opts.Timeout)
	}
	j := &Judge{spec: spec, f: f, v: v, phases: phases, timeout: opts.Timeout}
	j.pad, _ = v.ID(vocab.Pad)
	j.eos, _ = v.ID(vocab.EOS)
	until := phases[len(phases)-1]
	if until == verdict.PhaseLatency && phases[len(phases)-2] == verdict.PhaseNumeric {
		until = verdict.PhaseNumeric // numeric, then the latency
	}
	if until != PhaseDecode {
		j.vopts = verdict.Options{Until: until, Latency: opts.Latency, Gate: opts.Gate}
		if until == verdict.PhaseNumeric && j.vopts.Gate == nil {
			if j.vopts.Gate, err = numeric.New(opts.Numeric); err != nil {
				return nil, fmt.Errorf("judge: %w", err)
			}
		}
	}
	return j, nil
}

// Spec returns the workload judged.
func (j *Judge) Spec() *workload.Spec { return j.spec }

// Phases returns the phases a judgement runs, in order (for NewSummary).
func (j *Judge) Phases() []verdict.Phase { return slices.Clone(j.phases) }

// Result is a judgement: the verdict (its Phase is the last phase reached,
// OK true when every phase run passed; see package verdict for its
// fields), the number of tokens judged and the script's text.
type Result struct {
	*verdict.Verdict
	// Tokens is the number of tokens judged: up to and including the first
	// <eos>, or all of them when there is none.
	Tokens int `json:"tokens"`
	// Script is the text of the tokens before <eos>, when they decode.
	Script string `json:"script,omitempty"`
}

// JSON returns the result as one line of JSON: the verdict's fields, then
// tokens and script.
func (r *Result) JSON() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		// Only a verdict's figures could fail, and those are finite.
		return []byte(fmt.Sprintf(`{"ok":false,"phase":%q,"error":%q}`, r.Phase, "judge: result does not marshal: "+err.Error()))
	}
	return b
}

// Judge judges tokens, the ids the model wrote after the prompt. The
// error is for a failure of the judge itself (ctx done, the gate's
// compiler missing); whatever the tokens, it returns a Result otherwise.
func (j *Judge) Judge(ctx context.Context, tokens []int) (*Result, error) {
	ctx, cancel := j.deadline(ctx)
	defer cancel()
	r := &Result{}
	if res, err := late(ctx, r, PhaseDecode, nil); res != nil || err != nil {
		return res, err
	}
	text, n, err := j.decode(tokens)
	r.Tokens = n
	if err != nil {
		r.Verdict = verdict.Fail(PhaseDecode, err)
		return r, nil
	}
	r.Script = text
	if j.phases[len(j.phases)-1] == PhaseDecode {
		r.Verdict = &verdict.Verdict{OK: true, Phase: PhaseDecode, Inst: -1}
		return r, nil
	}
	return j.script(ctx, r)
}

// JudgeScript judges a script's text from phase parse on (a script from
// a dataset, or a baseline's): the phases after decode, as Judge does
// with the text its tokens decode to. Tokens is 0.
func (j *Judge) JudgeScript(ctx context.Context, script []byte) (*Result, error) {
	ctx, cancel := j.deadline(ctx)
	defer cancel()
	r := &Result{Script: string(script)}
	if res, err := late(ctx, r, verdict.PhaseParse, nil); res != nil || err != nil {
		return res, err
	}
	if j.phases[len(j.phases)-1] == PhaseDecode {
		r.Verdict = &verdict.Verdict{OK: true, Phase: PhaseDecode, Inst: -1}
		return r, nil
	}
	return j.script(ctx, r)
}

// script runs the phases from parse on r.Script.
func (j *Judge) script(ctx context.Context, r *Result) (*Result, error) {
	tr, err := encode.Decode(ctx, j.f, []byte(r.Script), encode.Options{Postprocs: []postproc.Postproc{}})
	if err != nil {
		if res, err := late(ctx, r, verdict.PhaseReplay, nil); res != nil || err != nil {
			return res, err
		}
		p := verdict.PhaseReplay
		if errors.Is(err, encode.ErrSyntax) {
			p = verdict.PhaseParse
		}
		r.Verdict = verdict.Fail(p, err)
		return r, nil
	}
	if j.vopts.Until != verdict.PhaseReplay {
		// The sketch: CheckTrace appends EnterPostproc and runs the
		// postprocessors afresh.
		tr = tr.WithoutPostproc()
	}
	v := verdict.CheckTrace(ctx, j.f, tr, j.vopts)
	if !v.OK {
		if res, err := late(ctx, r, v.Phase, v); res != nil || err != nil {
			return res, err
		}
	}
	if !v.OK && v.Phase == verdict.PhaseNumeric && v.NumericKind == "" {
		// Not a verdict on the program: the gate could not run.
		return nil, fmt.Errorf("judge: the numerical gate failed: %s", v.Error)
	}
	r.Verdict = v
	return r, nil
}

// deadline returns ctx bounded by the judge's timeout.
func (j *Judge) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if j.timeout > 0 {
		return context.WithTimeout(ctx, j.timeout)
	}
	return context.WithCancel(ctx)
}

// late checks whether ctx ended before the judgement did, in phase p (v
// the phase's verdict so far, nil when none): after a deadline it returns
// r with a timeout failure, after a cancellation an error; nil and nil
// when ctx has not ended.
func late(ctx context.Context, r *Result, p verdict.Phase, v *verdict.Verdict) (*Result, error) {
	err := ctx.Err()
	switch {
	case err == nil:
		return nil, nil
	case !errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("judge: %w", err)
	}
	if v == nil {
		v = &verdict.Verdict{Phase: p, Inst: -1}
	}
	v.OK = false
	v.Error = fmt.Sprintf("judge: no verdict within the deadline: phase %s did not finish in time", p)
	if p == verdict.PhaseNumeric {
		v.NumericKind = string(numeric.KindTimeout)
		v.MaxAbsErr, v.MaxRelErr, v.Compared = nil, nil, 0
	}
	r.Verdict = v
	return r, nil
}

// decode turns tokens into the script's text, stopping at the first
// <eos>; n is the number of tokens judged.
func (j *Judge) decode(tokens []int) (text string, n int, err error) {
	end := -1
	for i, id := range tokens {
		switch {
		case id == j.eos:
			end = i
		case id == j.pad:
			return "", i + 1, fmt.Errorf("judge: token %d is %s, which never belongs in a script", i, vocab.Pad)
		case id < 0 || id >= j.v.VocabSize():
			return "", i + 1, fmt.Errorf("judge: token %d is id %d, outside the vocabulary of %d", i, id, j.v.VocabSize())
		}
		if end >= 0 {
			break
		}
	}
	if end < 0 {
		return "", len(tokens), fmt.Errorf("judge: no %s in %d tokens: the script was cut", vocab.EOS, len(tokens))
	}
	text, err = j.v.Decode(tokens[:end])
	if err != nil {
		return "", end + 1, fmt.Errorf("judge: %w", err)
	}
	return text, end + 1, nil
}
