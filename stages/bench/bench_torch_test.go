//go:build torch

package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"dragonx/internal/progress"
	"dragonx/stages"
	_ "dragonx/stages/encode"
	_ "dragonx/stages/sft"
	"dragonx/stages/stagetest"
)

// TestMain builds dragonx-torch into a temporary directory and points
// $DRAGONX_TORCH at it: the stage runs its job in that real binary.
func TestMain(m *testing.M) { os.Exit(stagetest.RunWithTorch(m)) }

func loadTestdata(t *testing.T, edit func(string) string) *stages.Config {
	t.Helper()
	abs, _ := filepath.Abs("testdata/bench.hcl")
	src, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := stages.LoadSource(abs, []byte(edit(string(src))), stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg
}

func outputsOf(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, name := range []string{AttemptsFile, SummaryFile, PerTaskFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// TestTorchEndToEnd runs encode, a tiny sft and bench (two policies of a
// tiny model, unconstrained and under the grammar, numeric gate; three
// baselines, random_walk among them) through the engine
// and dragonx-torch, checks the outputs' schema and invariants, then reruns
// bench alone: interrupted after its first group and resumed, with
// another batch size and thread count, and in two shards; the outputs must
// be the same bytes.
func TestTorchEndToEnd(t *testing.T) {
	cfg := loadTestdata(t, func(s string) string { return s })
	root := t.TempDir()
	start := time.Now()
	stagetest.RunAll(t, cfg, root)
	t.Logf("encode, sft and bench ran in %.1f s", time.Since(start).Seconds())
	var st *Stage
	for _, inst := range cfg.Instances {
		if s, ok := inst.Stage.(*Stage); ok {
			st = s
		}
	}
	want := outputsOf(t, filepath.Join(root, "out", "bench"))
	checkInvariants(t, st.Spec(), want, 2)
	atts := readAttempts(t, want[AttemptsFile])
	decoded, sampled := 0, 0
	for _, a := range atts {
		if !strings.HasPrefix(a.Policy, BaselinePrefix) {
			sampled++
			if a.Tokens == 0 {
				t.Errorf("policy attempt %+v generated nothing", a)
			}
			if a.Phase != "decode" {
				decoded++
			}
		}
	}
	t.Logf("%d policy attempts, %d got past decode (unconstrained and under the grammar, tiny model)", sampled, decoded)

	// The stage alone, with the engine's upstream outputs as inputs.
	inputs := map[string]string{}
	for _, in := range st.Inputs() {
		inputs[in.Name] = in.Local
	}
	materialize := func(ctx context.Context, input, dst string) error {
		var src string
		switch input {
		case "policy.sft", "policy.again":
			src = filepath.Join(root, "out", "sft", "model.ckpt")
		case "heldout":
			src = filepath.Join(root, "out", "encode", "heldout.jsonl")
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
	state := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log1 bytes.Buffer
	rc := &stages.RunContext{Dir: t.TempDir(), Log: &log1, StateDir: state, Key: "test", Materialize: materialize,
		Progress: progress.Func(func(e progress.Event) {
			if e.Done >= 1 {
				cancel()
			}
		})}
	if err := st.Run(ctx, rc); err == nil {
		t.Fatalf("the interrupted run did not fail\nlog:\n%s", log1.String())
	}
	var log2 bytes.Buffer
	rc2 := &stages.RunContext{Dir: t.TempDir(), Log: &log2, StateDir: state, Key: "test", Materialize: materialize}
	if err := st.Run(context.Background(), rc2); err != nil {
		t.Fatalf("the resumed run: %v\nlog:\n%s", err, log2.String())
	}
	if !strings.Contains(log2.String(), "resuming: ") {
		t.Errorf("the rerun did not resume:\n%s", log2.String())
	}
	for name, b := range outputsOf(t, rc2.Dir) {
		if !bytes.Equal(b, want[name]) {
			t.Errorf("%s after an interruption and a resume differs from the uninterrupted run's", name)
		}
	}

	// Batch 1 and one thread: the same bytes.
	cfg1 := loadTestdata(t, func(s string) string {
		return strings.NewReplacer("batch       = 4", "batch       = 1", "threads     = 2", "threads     = 1").Replace(s)
	})
	var st1 *Stage
	for _, inst := range cfg1.Instances {
		if s, ok := inst.Stage.(*Stage); ok {
			st1 = s
		}
	}
	if st1.Spec().Batch != 1 {
		t.Fatal("the batch was not changed")
	}
	var log3 bytes.Buffer
	rc3 := &stages.RunContext{Dir: t.TempDir(), Log: &log3, Key: "test", Materialize: materialize}
	if err := st1.Run(context.Background(), rc3); err != nil {
		t.Fatalf("batch 1: %v\nlog:\n%s", err, log3.String())
	}
	for name, b := range outputsOf(t, rc3.Dir) {
		if !bytes.Equal(b, want[name]) {
			t.Errorf("%s with batch 1 and 1 thread differs from batch 4 and 2 threads", name)
		}
	}
	for _, m := range regexp.MustCompile(`policy \w+: \d+ attempts at .*`).FindAllString(log3.String(), -1) {
		t.Log(m)
	}

	// Two shards, each a dragonx-torch job: the same bytes.
	cfg2 := loadTestdata(t, func(s string) string {
		return strings.Replace(s, "batch       = 4", "batch       = 4\n  shards      = 2", 1)
	})
	var st2 *Stage
	for _, inst := range cfg2.Instances {
		if s, ok := inst.Stage.(*Stage); ok {
			st2 = s
		}
	}
	if st2.Shards() != 2 {
		t.Fatal("the shards were not changed")
	}
	var log4 bytes.Buffer
	rc4 := &stages.RunContext{Dir: t.TempDir(), Log: &log4, StateDir: t.TempDir(), Key: "test", Materialize: materialize, Progress: progress.Nop{}}
	if err := st2.Run(context.Background(), rc4); err != nil {
		t.Fatalf("2 shards: %v\nlog:\n%s", err, log4.String())
	}
	for name, b := range outputsOf(t, rc4.Dir) {
		if !bytes.Equal(b, want[name]) {
			t.Errorf("%s with 2 shards differs from 1 shard's", name)
		}
	}
}
