package sft

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"dragonx/dragon"
)

// TrainRecord is one line of the encode stage's train.jsonl.
type TrainRecord struct {
	Task   string `json:"task"`
	Hash   string `json:"hash"`
	Family string `json:"family"`
	Prompt []int  `json:"prompt"`
	Target []int  `json:"target"`
	// Format is the target's format ("script" when absent; see Format).
	Format string `json:"format,omitempty"`
}

// HeldoutRecord is one line of heldout.jsonl: a held-out task's prompt and
// workload (the fields the stage does not use, such as the reference
// latency, are skipped).
type HeldoutRecord struct {
	Task  string `json:"task"`
	Index int    `json:"index"`
	// Workload is the task's workload spec (kernels/workload JSON).
	Workload json.RawMessage `json:"workload"`
	Hash     string          `json:"hash"`
	Family   string          `json:"family"`
	Prompt   []int           `json:"prompt"`
	// ReferenceLatencyS and LatencySource are a construction task's
	// reference (the best latency harvest found) and its source label.
	ReferenceLatencyS *float64 `json:"reference_latency_s,omitempty"`
	LatencySource     string   `json:"latency_source,omitempty"`
	// Source is a refinement prompt's existing script and its latency.
	Source *SourceScript `json:"source,omitempty"`
	// Format is the format the policy writes its answer in ("script" when
	// absent; see Format).
	Format string `json:"format,omitempty"`
}

// SourceScript is the existing script of a refinement prompt.
type SourceScript struct {
	Script        string  `json:"script"`
	LatencyS      float64 `json:"latency_s"`
	LatencySource string  `json:"latency_source"`
}

// baseline returns the latency a sample of the task is compared with: the
// source script's for a refinement prompt, the reference for a
// construction task; ok is false when the task has none.
func (h HeldoutRecord) baseline() (latency float64, source string, ok bool) {
	switch {
	case h.Task == "refinement" && h.Source != nil && h.Source.LatencyS > 0:
		return h.Source.LatencyS, h.Source.LatencySource, true
	case h.Task == "construction" && h.ReferenceLatencyS != nil && *h.ReferenceLatencyS > 0:
		return *h.ReferenceLatencyS, h.LatencySource, true
	}
	return 0, "", false
}

// maxRecordLine bounds one JSON line (a record is a few thousand ids).
const maxRecordLine = 64 << 20

// readJSONLines calls f with each non-empty line of r and its line number.
func readJSONLines(r io.Reader, name string, f func(line []byte, n int) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxRecordLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := f(line, n); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: line %d: %w", name, n+1, err)
	}
	return nil
}

func decodeStrict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON object")
	}
	return nil
}

func checkIDs(what string, ids []int, vocabSize int) error {
	for i, t := range ids {
		if t < 0 || t >= vocabSize {
			return fmt.Errorf("%s token %d is %d, outside the vocabulary of %d", what, i, t, vocabSize)
		}
	}
	return nil
}

// ReadTrain reads train.jsonl: every record must have a task, a hash, a
// non-empty prompt and target, ids inside the vocabulary, and the format
// of the others.
func ReadTrain(r io.Reader, name string, vocabSize int) ([]TrainRecord, error) {
	var out []TrainRecord
	err := readJSONLines(r, name, func(line []byte, _ int) error {
		var rec TrainRecord
		if err := decodeStrict(line, &rec); err != nil {
			return err
		}
		switch {
		case rec.Task != "construction" && rec.Task != "refinement":
			return fmt.Errorf("task is %q; want construction or refinement", rec.Task)
		case rec.Hash == "":
			return fmt.Errorf("the record has no workload hash")
		case len(rec.Prompt) == 0:
			return fmt.Errorf("the prompt is empty")
		case len(rec.Target) == 0:
			return fmt.Errorf("the target is empty")
		}
		if err := checkIDs("prompt", rec.Prompt, vocabSize); err != nil {
			return err
		}
		if err := checkIDs("target", rec.Target, vocabSize); err != nil {
			return err
		}
		out = append(out, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := TrainFormat(out); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadHeldout reads heldout.jsonl: every record in the format of the
// others.
func ReadHeldout(r io.Reader, name string, vocabSize int) ([]HeldoutRecord, error) {
	var out []HeldoutRecord
	err := readJSONLines(r, name, func(line []byte, _ int) error {
		var rec HeldoutRecord
		if err := decodeStrict(line, &rec); err != nil {
			return err
		}
		if rec.Task != "construction" && rec.Task != "refinement" {
			return fmt.Errorf("task is %q; want construction or refinement", rec.Task)
		}
		if len(rec.Prompt) == 0 {
			return fmt.Errorf("the prompt is empty")
		}
		if len(rec.Workload) == 0 {
			return fmt.Errorf("the task has no workload")
		}
		if err := checkIDs("prompt", rec.Prompt, vocabSize); err != nil {
			return err
		}
		out = append(out, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := HeldoutFormat(out); err != nil {
		return nil, err
	}
	return out, nil
}

// inValidation says whether the examples of a workload (by its hash) are held
// out for the validation loss: a hash of the workload hash, read as a
// fraction of 2^64, below share. Every example of a workload falls on the
// same side, so the validation loss measures workloads the model has not
// seen; the split depends on nothing else.
func inValidation(hash string, share float64) bool {
	if share <= 0 {
		return false
	}
	h := sha256.Sum256([]byte("dragonx sft validation\x00" + hash))
	x := binary.BigEndian.Uint64(h[:8])
	return float64(x) < share*math.Exp2(64)
}

// Split applies the overlong policy (dragon.FitContext) to the records and
// splits the examples that fit into training and validation examples (by
// workload hash). Under "error" the first example longer than the context
// fails the split, named by its line, task and workload.
func Split(recs []TrainRecord, share float64, context int, policy dragon.Overlong) (train, val []dragon.Example, rep dragon.OverlongReport, err error) {
	exs := make([]dragon.Example, len(recs))
	for i, r := range recs {
		exs[i] = dragon.Example{Prompt: r.Prompt, Target: r.Target}
	}
	if _, rep, err = dragon.FitContext(exs, context, policy); err != nil {
		var tl *dragon.TooLongError
		if errors.As(err, &tl) {
			r := recs[tl.Index]
			return nil, nil, rep, fmt.Errorf("training example %d (%s, workload %s): %w", tl.Index+1, r.Task, r.Hash, err)
		}
		return nil, nil, rep, err
	}
	for i, r := range recs {
		if dragon.ExampleTokens(exs[i]) > context {
			continue // dropped, counted in rep
		}
		if inValidation(r.Hash, share) {
			val = append(val, exs[i])
		} else {
			train = append(train, exs[i])
		}
	}
	return train, val, rep, nil
}
