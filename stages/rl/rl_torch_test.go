//go:build torch

package rl_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"dragonx/internal/progress"
	"dragonx/stages"
	"dragonx/stages/rl"
	"dragonx/stages/stagetest"
)

// TestMain builds dragonx-torch into a temporary directory and points
// $DRAGONX_TORCH at it: the stages run their jobs in that real binary.
func TestMain(m *testing.M) { os.Exit(stagetest.RunWithTorch(m)) }

func loadExample(t *testing.T) *stages.Config {
	t.Helper()
	abs, _ := filepath.Abs("testdata/rl.hcl")
	src, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := stages.LoadSource(abs, src, stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg
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
// everything but metrics.json's measured speed.
func deterministic(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	return stagetest.Deterministic(t, dir, "model.ckpt", "curves.csv", "samples.jsonl", "eval_samples.jsonl")
}

// TestEngineRunAndResume runs encode, sft and rl through the engine, checks
// rl's outputs, then reruns rl alone with the same inputs: interrupted after
// step 3 (its state saved), and resumed; the outputs must be byte-identical
// to the uninterrupted run's.
func TestEngineRunAndResume(t *testing.T) {
	cfg := loadExample(t)
	root := runPipeline(t, cfg)
	out := filepath.Join(root, "out", "rl")

	rows, err := csv.NewReader(bytes.NewReader(mustRead(t, filepath.Join(out, "curves.csv")))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0], ","); got != "step,reward_mean,reward_std,correct_rate,mean_log_speedup,kl,entropy,clip_frac,loss,grad_norm,lr,skipped_groups,failed_samples" {
		t.Errorf("curves.csv header %s", got)
	}
	if len(rows) != 5 {
		t.Fatalf("curves.csv has %d rows; want a header and 4 steps", len(rows))
	}
	updated := false
	for _, r := range rows[1:] {
		rate, err := strconv.ParseFloat(r[3], 64)
		if err != nil || rate < 0 || rate > 1 {
			t.Errorf("step %s: correct rate %q", r[0], r[3])
		}
		if r[8] != "0" {
			updated = true
		}
	}
	if !updated {
		t.Errorf("no step updated the policy (every group skipped?):\n%v", rows)
	}
	lines := bytes.Split(bytes.TrimSpace(mustRead(t, filepath.Join(out, "samples.jsonl"))), []byte("\n"))
	if len(lines) != 4*2*3 {
		t.Fatalf("samples.jsonl has %d lines; want 4 steps x 2 prompts x 3 samples", len(lines))
	}
	gates := 0
	for i, l := range lines {
		var s rl.SampleLog
		if err := json.Unmarshal(l, &s); err != nil {
			t.Fatalf("samples.jsonl line %d: %v", i+1, err)
		}
		if s.Step != i/6+1 || s.Task == "" {
			t.Errorf("samples.jsonl line %d: step %d task %q", i+1, s.Step, s.Task)
		}
		if s.Gate {
			gates++
			if s.LatencyS == nil || s.LogSpeedup == nil || s.Baseline == nil || s.Total != 1+s.Bonus {
				t.Errorf("samples.jsonl line %d: a gate-passing sample without its latency, baseline or bonus: %s", i+1, l)
			}
		} else if s.Total != -1 || s.Bonus != 0 {
			t.Errorf("samples.jsonl line %d: a failing sample's reward: %s", i+1, l)
		}
	}
	// Under the grammar, most samples that finish are valid scripts.
	if gates == 0 {
		t.Errorf("no sample of %d passed the static gate under the grammar", len(lines))
	}
	var m rl.Metrics
	if err := json.Unmarshal(mustRead(t, filepath.Join(out, "metrics.json")), &m); err != nil {
		t.Fatal(err)
	}
	if m.Training.Steps != 4 || m.Training.Samples != 24 || m.Training.Tasks != 6 || m.Training.Baselines != 6 ||
		m.Heldout.All.Tasks != 2 || m.Heldout.All.Judged == nil {
		t.Errorf("metrics %+v", m.Training)
	}
	// The held-out samples were drawn under the grammar (eval.constrained),
	// as the training samples: every one ends with <eos> and decodes.
	if !m.Heldout.Constrained || m.Heldout.All.Sampled != 2 || m.Heldout.All.Rates["decode"] != 1 {
		t.Errorf("metrics.json heldout: constrained %v, %d sampled, decode rate %v; want true, 2 and 1", m.Heldout.Constrained, m.Heldout.All.Sampled, m.Heldout.All.Rates["decode"])
	}
	t.Logf("held-out rates under the grammar: %v", m.Heldout.All.Rates)
	t.Logf("curves:\n%v\nmetrics.training %+v, %d correct held-out attempts", rows, m.Training, len(m.Correct))
	want := deterministic(t, out)

	// Resume: rl alone, interrupted (SIGINT to the child) once step 2 is
	// reported: the child finishes the step it is in, saves its state and
	// stops; the rerun resumes from that step.
	st, materialize := rlAlone(t, cfg, root)
	log2, dir2 := interruptAndResume(t, st, materialize, func(e progress.Event) bool { return e.Unit == "steps" && e.Done >= 2 })
	var from int
	if i := strings.Index(log2, "resuming from step "); i < 0 {
		t.Fatalf("the rerun did not resume:\n%s", log2)
	} else if _, err := fmt.Sscanf(log2[i:], "resuming from step %d ", &from); err != nil || from < 2 || from >= 4 {
		t.Fatalf("the rerun resumed from step %d (%v); want 2 or 3:\n%s", from, err, log2)
	}
	got := deterministic(t, dir2)
	stagetest.SameBytes(t, want, got, "an interruption and a resume")
}

// rlAlone returns cfg's rl stage and a Materialize that places its inputs
// from the outputs of an engine run under root (the testdata files for the
// rest), to run the stage by itself.
func rlAlone(t *testing.T, cfg *stages.Config, root string) (stages.Stage, func(context.Context, string, string) error) {
	t.Helper()
	var st stages.Stage
	for _, inst := range cfg.Instances {
		if s, ok := inst.Stage.(*rl.Stage); ok {
			st = s
		}
	}
	inputs := map[string]string{}
	for _, in := range st.Inputs() {
		inputs[in.Name] = in.Local
	}
	return st, func(ctx context.Context, input, dst string) error {
		var src string
		switch input {
		case "checkpoint":
			src = filepath.Join(root, "out", "sft", "model.ckpt")
		case "train", "heldout":
			src = filepath.Join(root, "out", "encode", input+".jsonl")
		case "vocab":
			src = filepath.Join(root, "out", "encode", "vocab.txt")
		default:
			src = filepath.Join("testdata", inputs[input])
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	}
}

// TestRFTRound runs the pipeline with an rft round before GRPO: the round
// samples every training prompt, keeps what passes the gate and fine-tunes
// on it (metrics.json's rft), and GRPO starts from the result. Rerun alone
// and interrupted during GRPO, the stage reuses the saved round (it does
// not sample again) and ends with the uninterrupted run's bytes.
func TestRFTRound(t *testing.T) {
	cfg := withGRPOPrefix(t, "  rft {\n    prompts = 0\n    samples = 3\n    steps   = 3\n    batch   = 2\n    lr      = 1e-3\n  }\n  grpo {\n")
	root := runPipeline(t, cfg)
	out := filepath.Join(root, "out", "rl")
	var m rl.Metrics
	if err := json.Unmarshal(mustRead(t, filepath.Join(out, "metrics.json")), &m); err != nil {
		t.Fatal(err)
	}
	f := m.RFT
	if f == nil {
		t.Fatal("metrics.json has no rft figures")
	}
	if f.Prompts != m.Training.Prompts || f.Samples != 3*f.Prompts || f.Kept > f.Passed || f.Passed > f.Samples {
		t.Errorf("rft figures %+v for %d prompts", *f, m.Training.Prompts)
	}
	if n := f.ByKind["construction"].Samples + f.ByKind["refinement"].Samples; n != f.Samples {
		t.Errorf("rft by kind %+v: %d samples of %d", f.ByKind, n, f.Samples)
	}
	if f.Kept == 0 {
		t.Fatalf("no sample passed the gate under the grammar: %+v", *f)
	}
	if f.Steps != 3 || !(f.FirstLoss > 0) || !(f.LastLoss > 0) {
		t.Errorf("rft fine-tuning: %d steps, loss %v -> %v; want 3 steps with positive losses", f.Steps, f.FirstLoss, f.LastLoss)
	}
	if m.Training.Steps != 4 {
		t.Errorf("GRPO ran %d steps after the round; want 4", m.Training.Steps)
	}
	want := deterministic(t, out)

	st, materialize := rlAlone(t, cfg, root)
	// Interrupted in GRPO's first step (its progress notes start with
	// "reward"; the round's with "rft").
	log2, dir2 := interruptAndResume(t, st, materialize, func(e progress.Event) bool {
		return e.Unit == "steps" && strings.HasPrefix(e.Note, "reward ")
	})
	if !strings.Contains(log2, "rft: the round is done") || strings.Contains(log2, "distinct kept") {
		t.Errorf("the rerun did not reuse the saved round:\n%s", log2)
	}
	got := deterministic(t, dir2)
	stagetest.SameBytes(t, want, got, "an interruption and a resume")
}

// runPipeline runs cfg through an engine with a fresh in-memory cache
// under a temporary root, which it returns; every stage must run.
func runPipeline(t *testing.T, cfg *stages.Config) string {
	t.Helper()
	root := t.TempDir()
	stagetest.RunAll(t, cfg, root)
	return root
}

// interruptAndResume runs st alone with a resume state directory,
// interrupting it (SIGINT to the child) at the first progress event stop
// accepts: the child finishes the step it is in, saves its state and
// stops. It then reruns st with the same state directory and returns that
// run's log and output directory.
func interruptAndResume(t *testing.T, st stages.Stage, materialize func(context.Context, string, string) error, stop func(progress.Event) bool) (string, string) {
	t.Helper()
	state := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log1 bytes.Buffer
	rc := &stages.RunContext{Dir: t.TempDir(), Log: &log1, StateDir: state, Key: "test", Materialize: materialize,
		Progress: progress.Func(func(e progress.Event) {
			if stop(e) {
				cancel()
			}
		})}
	if err := st.Run(ctx, rc); err == nil || !strings.Contains(log1.String(), "interrupted after step ") {
		t.Fatalf("the interrupted run: %v\nlog:\n%s", err, log1.String())
	}
	var log2 bytes.Buffer
	rc2 := &stages.RunContext{Dir: t.TempDir(), Log: &log2, StateDir: state, Key: "test", Materialize: materialize}
	if err := st.Run(context.Background(), rc2); err != nil {
		t.Fatalf("the resumed run: %v\nlog:\n%s", err, log2.String())
	}
	return log2.String(), rc2.Dir
}

// TestMaskMassRun runs the pipeline with grpo's mask_mass: curves.csv
// ends with an allowed_mass column whose values are probabilities (the
// full distribution's mass on the grammar's tokens), and a run interrupted
// and resumed ends with the uninterrupted run's bytes (the resume reads
// the longer header back).
func TestMaskMassRun(t *testing.T) {
	cfg := withGRPOPrefix(t, "  grpo {\n    mask_mass = 1\n")
	root := runPipeline(t, cfg)
	out := filepath.Join(root, "out", "rl")
	rows, err := csv.NewReader(bytes.NewReader(mustRead(t, filepath.Join(out, "curves.csv")))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || rows[0][len(rows[0])-1] != "allowed_mass" {
		t.Fatalf("curves.csv: %d rows, header %v; want 4 steps and an allowed_mass column last", len(rows), rows[0])
	}
	updated := 0
	for _, r := range rows[1:] {
		if r[len(r)-1] == "" {
			continue // no update: every group's rewards were equal
		}
		updated++
		if v, err := strconv.ParseFloat(r[len(r)-1], 64); err != nil || !(v > 0 && v <= 1) {
			t.Errorf("step %s: allowed_mass %q; want a probability", r[0], r[len(r)-1])
		}
	}
	if updated == 0 {
		t.Errorf("no step made an update: the test checks nothing\n%v", rows)
	}
	want := deterministic(t, out)
	st, materialize := rlAlone(t, cfg, root)
	_, dir2 := interruptAndResume(t, st, materialize, func(e progress.Event) bool {
		return e.Unit == "steps" && e.Done == 2
	})
	got := deterministic(t, dir2)
	stagetest.SameBytes(t, want, got, "an interruption and a resume")
}

// withGRPOPrefix loads testdata/rl.hcl with its "  grpo {\n" line (the
// block starting with steps = 4) replaced by prefix, which must end with
// that line: a block inserted before it, or attributes added at its top.
func withGRPOPrefix(t *testing.T, prefix string) *stages.Config {
	t.Helper()
	abs, _ := filepath.Abs("testdata/rl.hcl")
	const at = "  grpo {\n    steps   = 4"
	src := string(mustRead(t, abs))
	if !strings.Contains(src, at) {
		t.Fatal("testdata/rl.hcl's grpo block moved: nothing was inserted")
	}
	src = strings.Replace(src, at, prefix+strings.TrimPrefix(at, "  grpo {\n"), 1)
	cfg, diags := stages.LoadSource(abs, []byte(src), stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg
}
