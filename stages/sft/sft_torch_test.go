//go:build torch

package sft_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"dragonx/cache"
	"dragonx/internal/progress"
	"dragonx/stages"
	"dragonx/stages/sft"
	"dragonx/stages/stagetest"
)

// TestMain builds dragonx-torch into a temporary directory and points
// $DRAGONX_TORCH at it: the stage runs its job in that real binary.
func TestMain(m *testing.M) { os.Exit(stagetest.RunWithTorch(m)) }

func loadExample(t *testing.T) *stages.Config {
	t.Helper()
	src, err := os.ReadFile("testdata/sft.hcl")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("testdata/sft.hcl")
	cfg, diags := stages.LoadSource(abs, src, stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg
}

// runEngine runs the example experiment through the engine and returns
// the directory of its outputs.
func runEngine(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	eng := &stages.Engine{Store: cache.NewMem(), Jobs: 1, OutDir: filepath.Join(root, "out"),
		WorkRoot: filepath.Join(root, "work"), StateRoot: filepath.Join(root, "state")}
	rep, err := eng.Run(context.Background(), loadExample(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Status != stages.StatusRan {
		t.Fatalf("sft: %v (%v)", r.Status, r.Err)
	}
	return filepath.Join(root, "out", "sft")
}

// TestEngineRunConstrained runs the example with eval.constrained: its
// metrics.json says so, and every held-out sample is a prefix the grammar
// allows (max_new = 40 cuts them before <eos>, so they fail at decode, but
// none fails its sampling).
func TestEngineRunConstrained(t *testing.T) {
	src := strings.Replace(string(mustRead(t, "testdata/sft.hcl")), "numeric = true", "numeric = true\n    constrained = true", 1)
	abs, _ := filepath.Abs("testdata/sft.hcl")
	cfg, diags := stages.LoadSource(abs, []byte(src), stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	root := t.TempDir()
	eng := &stages.Engine{Store: cache.NewMem(), Jobs: 1, OutDir: filepath.Join(root, "out"),
		WorkRoot: filepath.Join(root, "work"), StateRoot: filepath.Join(root, "state")}
	rep, err := eng.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Status != stages.StatusRan {
		t.Fatalf("sft: %v (%v)", r.Status, r.Err)
	}
	out := filepath.Join(root, "out", "sft")
	var m sft.Metrics
	if err := json.Unmarshal(mustRead(t, filepath.Join(out, "metrics.json")), &m); err != nil {
		t.Fatal(err)
	}
	if !m.Heldout.Constrained || m.Heldout.All.Sampled != 3 {
		t.Errorf("metrics.json heldout: constrained %v, %d sampled; want true and 3", m.Heldout.Constrained, m.Heldout.All.Sampled)
	}
	for i, l := range bytes.Split(bytes.TrimSpace(mustRead(t, filepath.Join(out, "samples.jsonl"))), []byte("\n")) {
		var s sft.SampleRecord
		if err := json.Unmarshal(l, &s); err != nil {
			t.Fatalf("samples.jsonl line %d: %v", i+1, err)
		}
		if s.SampleError != "" || s.Tokens == 0 {
			t.Errorf("samples.jsonl line %d: %d tokens, sample error %q", i+1, s.Tokens, s.SampleError)
		}
	}
}

func readCurve(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestEngineRun(t *testing.T) {
	out := runEngine(t)
	rows := readCurve(t, filepath.Join(out, "loss.csv"))
	if got := strings.Join(rows[0], ","); got != "step,lr,loss,eval_loss,grad_norm,tokens" {
		t.Errorf("loss.csv header %s", got)
	}
	if len(rows) != 31 {
		t.Fatalf("loss.csv has %d rows, want a header and 30 steps", len(rows))
	}
	first, _ := strconv.ParseFloat(rows[1][2], 64)
	last, _ := strconv.ParseFloat(rows[30][2], 64)
	if !(last < first-0.5) {
		t.Errorf("the loss went from %v to %v: it did not fall", first, last)
	}
	var m sft.Metrics
	b, err := os.ReadFile(filepath.Join(out, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Training.Steps != 30 || m.Examples.Train+m.Examples.Validation+m.Examples.DroppedOverlong != m.Examples.Records || m.Examples.Validation == 0 {
		t.Errorf("metrics: %+v", m.Examples)
	}
	if m.Validation.Loss == nil || *m.Validation.Loss <= 0 || *m.Validation.Loss > 10 {
		t.Errorf("validation loss %v; want a number in (0, 10]", m.Validation.Loss)
	}
	// No upper bound on MFU: the peak and the training are timed at
	// different moments, so on a loaded machine MFU can exceed 1 (a bound
	// would make this a timed test). The figures must be measured and
	// agree with each other.
	if sp := m.Speed; sp.Tokens <= 0 || sp.StepSeconds <= 0 || sp.MFU <= 0 || sp.SgemmPeakGFLOPS <= 0 ||
		math.Abs(sp.TokensPerS-float64(sp.Tokens)/sp.StepSeconds) > 1e-6*sp.TokensPerS {
		t.Errorf("speed %+v: tokens, seconds, MFU or the peak not measured, or tokens/s is not tokens over step seconds", m.Speed)
	}
	if h := m.Heldout.All; h.Tasks != 3 || h.Sampled != 3 || h.Judged == nil || h.Judged.Judged != 3 {
		t.Errorf("held-out figures %+v; want the 3 tasks of heldout.jsonl sampled and judged", h)
	}
	for _, name := range []string{"decode", "parse", "replay", "static", "numeric"} {
		r, ok := m.Heldout.All.Rates[name]
		if !ok || r < 0 || r > 1 {
			t.Errorf("held-out %s rate %v (present %v); want a share", name, r, ok)
		}
	}
	if !bytes.Contains(mustRead(t, filepath.Join(out, "metrics.json")), []byte(`"constrained": false`)) || m.Heldout.Constrained {
		t.Errorf("metrics.json does not say that the held-out samples were unconstrained")
	}
	if c, r := m.Heldout.Construction, m.Heldout.Refinement; c.Tasks != 2 || r.Tasks != 1 {
		t.Errorf("held-out: %d construction and %d refinement tasks; want 2 and 1", c.Tasks, r.Tasks)
	}
	lines := bytes.Split(bytes.TrimSpace(mustRead(t, filepath.Join(out, "samples.jsonl"))), []byte("\n"))
	if len(lines) != 3 {
		t.Errorf("samples.jsonl has %d lines, want 3", len(lines))
	}
	for i, l := range lines {
		var s sft.SampleRecord
		if err := json.Unmarshal(l, &s); err != nil {
			t.Fatalf("samples.jsonl line %d: %v", i+1, err)
		}
		// Every sample gets max_new tokens (40) or what its own prompt
		// leaves of the context (512), not what the longest prompt of its
		// batch leaves (the refinement prompt of 481 tokens leaves 32).
		if want := min(40, 512-s.PromptTokens+1); !s.Stopped && s.Tokens != want {
			t.Errorf("samples.jsonl line %d: %d tokens after a prompt of %d, not stopped; want %d", i+1, s.Tokens, s.PromptTokens, want)
		}
		// A sample cut by max_new (no <eos>) fails the decode phase.
		if s.Script == "" || s.Judgement == nil || s.Judgement.Verdict == nil || (!s.Stopped && (s.Judgement.OK || s.Judgement.Phase != "decode")) {
			t.Errorf("samples.jsonl line %d: %s; want a judgement, failing at decode when not stopped", i+1, l)
		}
	}
	ck := mustRead(t, filepath.Join(out, "model.ckpt"))
	if !bytes.HasPrefix(ck, []byte("DRAGONCK")) {
		t.Errorf("model.ckpt does not start with the checkpoint magic")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// deterministic returns the outputs that must not vary between runs:
// metrics.json without its measured speed.
func deterministic(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	return stagetest.Deterministic(t, dir, "model.ckpt", "loss.csv", "samples.jsonl")
}

func TestDeterminism(t *testing.T) {
	a, b := deterministic(t, runEngine(t)), deterministic(t, runEngine(t))
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// direct runs the stage's Run (the real child process) with the example's
// inputs, a state directory and a progress hook.
type direct struct {
	stage stages.Stage
	state string
	// replace maps an input name to bytes used instead of its testdata file.
	replace map[string][]byte
}

func (d *direct) run(ctx context.Context, t *testing.T, rep progress.Reporter) (dir, log string, err error) {
	dir = t.TempDir()
	var lb syncBuf
	rc := &stages.RunContext{Dir: dir, Log: &lb, Progress: rep, StateDir: d.state, Key: "test",
		Materialize: func(ctx context.Context, input, dst string) error {
			if b, ok := d.replace[input]; ok {
				return os.WriteFile(dst, b, 0o644)
			}
			b, err := os.ReadFile(filepath.Join("testdata", map[string]string{"train": "train.jsonl", "heldout": "heldout.jsonl", "vocab": "vocab.txt"}[input]))
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		}}
	err = d.stage.Run(ctx, rc)
	return dir, lb.String(), err
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestResumeAfterInterrupt interrupts the real child (SIGINT, through the
// context) after it has saved progress, reruns, and checks that the final
// model and loss curve are byte-identical to an uninterrupted run's; then
// that a corrupt resume file is ignored with a log line, not trusted.
func TestResumeAfterInterrupt(t *testing.T) {
	st := loadExample(t).Instances[0].Stage
	whole := &direct{stage: st, state: t.TempDir()}
	wantDir, _, err := whole.run(context.Background(), t, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := deterministic(t, wantDir)

	d := &direct{stage: st, state: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt once step 15 is done: the checkpoint of step 10 is saved,
	// and the interruption saves the state of the step it stops after.
	stop := progress.Func(func(e progress.Event) {
		if e.Unit == "steps" && e.Done >= 15 {
			cancel()
		}
	})
	_, log, err := d.run(ctx, t, stop)
	if err == nil {
		t.Fatalf("the interrupted run succeeded; log:\n%s", log)
	}
	if !strings.Contains(log, "interrupted after step") {
		t.Fatalf("the child did not save on SIGINT: %v\nlog:\n%s", err, log)
	}
	if _, err := os.Stat(filepath.Join(d.state, "trainer.ckpt")); err != nil {
		t.Fatalf("no resume checkpoint after the interruption: %v", err)
	}
	gotDir, log, err := d.run(context.Background(), t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log, "resuming from step ") || strings.Contains(log, "resuming from step 0 ") {
		t.Fatalf("the rerun did not resume:\n%s", log)
	}
	got := deterministic(t, gotDir)
	for name := range want {
		if !bytes.Equal(want[name], got[name]) {
			t.Errorf("%s after an interruption and a resume differs from an uninterrupted run's", name)
		}
	}

	// A corrupt resume file: ignored, said so, and the result is the same.
	c := &direct{stage: st, state: t.TempDir()}
	ck := mustRead(t, filepath.Join(d.state, "trainer.ckpt"))
	ck[len(ck)/2] ^= 0xff
	if err := os.WriteFile(filepath.Join(c.state, "trainer.ckpt"), ck, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.state, "loss.csv"), mustRead(t, filepath.Join(d.state, "loss.csv")), 0o644); err != nil {
		t.Fatal(err)
	}
	gotDir, log, err = c.run(context.Background(), t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log, "ignoring the resume state") {
		t.Errorf("a corrupt resume file was not reported:\n%s", log)
	}
	got = deterministic(t, gotDir)
	for name := range want {
		if !bytes.Equal(want[name], got[name]) {
			t.Errorf("%s after ignoring a corrupt resume file differs from an uninterrupted run's", name)
		}
	}
}

// TestForeignVocabulary: a vocabulary file other than kernels/vocab's is
// refused, saying so, before any training.
func TestForeignVocabulary(t *testing.T) {
	st := loadExample(t).Instances[0].Stage
	voc := mustRead(t, "testdata/vocab.txt")
	d := &direct{stage: st, state: t.TempDir(), replace: map[string][]byte{"vocab": append(voc, []byte("\"extra-token\"\n")...)}}
	_, log, err := d.run(context.Background(), t, nil)
	if err == nil || !strings.Contains(err.Error(), "is not this program's tokenizer vocabulary") {
		t.Fatalf("run with a foreign vocabulary = %v; want it refused\nlog:\n%s", err, log)
	}
}
