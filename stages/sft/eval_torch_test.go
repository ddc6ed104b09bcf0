//go:build torch

package sft

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"dragonx/dragon"
	"dragonx/internal/progress"
	"dragonx/stages/job"
)

// TestEvalConstrained samples the held-out tasks of testdata/heldout.jsonl
// greedily from one tiny untrained model, with and without eval.constrained.
// Under the workload's grammar every sample ends with <eos> and decodes and
// parses (the grammar only allows scripts of the design space); without it
// the same model never emits a script that decodes.
func TestEvalConstrained(t *testing.T) {
	ctx := context.Background()
	voc, err := loadVocab("testdata/vocab.txt")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/heldout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	held, err := ReadHeldout(f, "heldout.jsonl", voc.VocabSize())
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := dragon.NewRuntime(dragon.RuntimeOptions{Threads: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	cfg := dragon.DefaultConfig()
	cfg.Layers, cfg.Width, cfg.Heads, cfg.Context, cfg.Dropout, cfg.Vocab = 1, 32, 2, 1024, 0, voc.VocabSize()
	m, err := rt.NewModel(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	env := &job.Env{Progress: progress.Nop{}, Log: io.Discard}
	run := func(constrained bool) ([]SampleRecord, HeldoutFigures) {
		t.Helper()
		ev := EvalSpec{Tasks: 2, MaxNew: 512, Numeric: false, Target: "h100-model", Constrained: constrained}
		sp := Spec{Eval: ev, Seed: 1}
		sp.Model.Context = cfg.Context
		samples, phases, _, _, err := evaluate(ctx, m, voc, held, sp, env, t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		return samples, summarize(samples, phases)
	}

	samples, fig := run(true)
	if len(samples) != 3 {
		t.Fatalf("%d samples; want the 3 held-out tasks", len(samples))
	}
	for _, s := range samples {
		r := s.Judgement
		if r == nil || s.SampleError != "" || !s.Stopped {
			t.Fatalf("constrained %s task %d: stopped %v, error %q, judgement %v; want a sample ended by <eos>", s.Task, s.Index, s.Stopped, s.SampleError, r)
		}
		t.Logf("constrained %s task %d: %d tokens, judged to phase %q, ok %v", s.Task, s.Index, s.Tokens, r.Phase, r.OK)
	}
	if d, p, r := fig.All.Rates["decode"], fig.All.Rates["parse"], fig.All.Rates["replay"]; d != 1 || p != 1 || r != 1 {
		t.Errorf("constrained: decode, parse and replay rates %v, %v, %v; want 1 (the grammar's scripts are of the design space)", d, p, r)
	}

	_, fig = run(false)
	if d := fig.All.Rates["decode"]; d != 0 {
		t.Errorf("unconstrained: decode rate %v; want 0 from an untrained model (else the test shows nothing)", d)
	}

	// In decisions format (the same prompts, said to be of that format),
	// the constraint is the decision streams': every sample ends with
	// <eos>, is far shorter than a script, and expands into a script of the
	// design space, shown beside its stream; unconstrained, the untrained
	// model's streams do not expand, and fail at decode.
	for i := range held {
		held[i].Format = string(FormatDecisions)
	}
	samples, fig = run(true)
	for _, s := range samples {
		r := s.Judgement
		if r == nil || s.SampleError != "" || !s.Stopped || s.Stream == "" || s.Script == "" || s.Tokens >= 100 || r.Tokens != s.Tokens {
			t.Fatalf("decisions, constrained %s task %d: %+v; want a short stream ended by <eos>, expanded into a script", s.Task, s.Index, s)
		}
		t.Logf("decisions, constrained %s task %d: %d tokens %q, judged to phase %q, ok %v", s.Task, s.Index, s.Tokens, s.Stream, r.Phase, r.OK)
	}
	if d, p, r := fig.All.Rates["decode"], fig.All.Rates["parse"], fig.All.Rates["replay"]; d != 1 || p != 1 || r != 1 {
		t.Errorf("decisions, constrained: decode, parse and replay rates %v, %v, %v; want 1", d, p, r)
	}
	samples, fig = run(false)
	if d := fig.All.Rates["decode"]; d != 0 {
		t.Errorf("decisions, unconstrained: decode rate %v; want 0 from an untrained model", d)
	}
	for _, s := range samples {
		if r := s.Judgement; r == nil || r.Phase != "decode" || !strings.Contains(r.Error, "does not expand") || s.Script != "" {
			t.Errorf("decisions, unconstrained %s task %d: %+v; want a stream that does not expand", s.Task, s.Index, s)
		}
	}
}
