package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"dragonx/internal/progress"
	"dragonx/kernels/cudabench"
	"dragonx/stages"
	"dragonx/stages/bench"
	"dragonx/stages/stagetest"
)

// stageSrc wraps body lines in a bench stage whose inputs are local files;
// the stage block starts on line 1, so body line k is file line k+1.
func stageSrc(body string) string {
	return "stage \"bench\" {\n" + body + "\n  kind = \"bench\"\n  heldout = \"heldout.jsonl\"\n  vocab = \"vocab.txt\"\n" +
		"  construction_tasks = \"test_construction.jsonl\"\n  refinement_prompts = \"test_refinement.jsonl\"\n  db = \"db\"\n}\n"
}

// outsideSrc is stageSrc for a bench of the KernelBench level 1 set: no
// held-out task inputs.
func outsideSrc(body string) string {
	return "stage \"bench\" {\n" + body + "\n  kind = \"bench\"\n  outside = \"kernelbench-level1\"\n  vocab = \"vocab.txt\"\n}\n"
}

// An outside bench: outside in the key (nowhere when unset: see
// defaultParams), policies need only the vocabulary.
func TestDecodeOutside(t *testing.T) {
	cfg, diags := load(t, outsideSrc("  baselines = [\"unscheduled\", \"random\", \"search\"]\n  policy \"rl\" {\n    checkpoint = \"a.ckpt\"\n  }"))
	if cfg == nil {
		t.Fatalf("diagnostics: %v", diags)
	}
	s := cfg.Instances[0].Stage.(*bench.Stage)
	if got := params(s); !strings.Contains(got, "\noutside=\"kernelbench-level1\"\n") {
		t.Errorf("params:\n%s\nwant outside", got)
	}
	if err := s.Spec().Validate(); err != nil {
		t.Errorf("the decoded spec: %v", err)
	}
	// format: "script" is the key of no format; "decisions" is in it.
	paramsOf := func(extra string) string {
		cfg, diags := load(t, outsideSrc("  baselines = [\"unscheduled\"]"+extra))
		if cfg == nil {
			t.Fatalf("%q: diagnostics: %v", extra, diags)
		}
		return params(cfg.Instances[0].Stage.(*bench.Stage))
	}
	if none, script, dec := paramsOf(""), paramsOf("\n  format = \"script\""), paramsOf("\n  format = \"decisions\""); none != script || !strings.Contains(dec, "\nformat=\"decisions\"\n") {
		t.Errorf("params without format:\n%s\nwith format script:\n%s\nwith decisions:\n%s", none, script, dec)
	}
	sp := s.Spec()
	sp.Files["construction_tasks"] = "in/c.jsonl"
	if sp.Validate() == nil {
		t.Error("a spec with an outside set and a construction_tasks file is valid")
	}
}

func load(t *testing.T, src string) (*stages.Config, []string) {
	t.Helper()
	return stagetest.Load(t, "", src)
}

func TestDiagnostics(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      string // substring of one diagnostic
		line      int
	}{
		{"unknown attribute", stageSrc("  trials = 3"), "Unsupported argument", 2},
		{"unknown baseline", stageSrc("  baselines = [\"search\", \"tvm\"]"), `unknown baseline "tvm"`, 2},
		{"baseline twice", stageSrc("  baselines = [\"search\", \"search\"]"), `baseline "search" is listed twice`, 2},
		{"attempts negative", stageSrc("  attempts = -1"), "attempts is -1", 2},
		{"temperature zero", stageSrc("  temperature = 0"), "temperature is 0", 2},
		{"top_k negative", stageSrc("  top_k = -2"), "top_k is -2", 2},
		{"max_new zero", stageSrc("  max_new = 0"), "max_new is 0", 2},
		{"tasks negative", stageSrc("  tasks = -1"), "tasks is -1", 2},
		{"format without outside", stageSrc("  format = \"decisions\""), "Unused format", 2},
		{"format unknown", outsideSrc("  format = \"text\""), `format is "text"`, 2},
		{"task_pick unknown", stageSrc("  task_pick = \"random\""), `task_pick is "random"`, 2},
		{"search_trials zero", stageSrc("  search_trials = 0"), "search_trials is 0", 2},
		{"search_check unknown", stageSrc("  search_check = \"gate\""), "search_check is \"gate\"", 2},
		{"unknown target", stageSrc("  target = \"b200-model\""), `unknown target "b200-model"`, 2},
		{"threads zero", stageSrc("  threads = 0"), "threads is 0", 2},
		{"batch zero", stageSrc("  batch = 0"), "batch is 0", 2},
		{"shards zero", stageSrc("  shards = 0"), "shards is 0", 2},
		{"gpu_limits without constrained", stageSrc("  gpu_limits = true"), "gpu_limits = true needs constrained = true", 2},
		{"decoding unknown", stageSrc("  decoding = [\"grammar\", \"free\"]"), `unknown decoding mode "free"`, 2},
		{"decoding twice", stageSrc("  decoding = [\"grammar\", \"grammar\"]"), `decoding mode "grammar" is listed twice`, 2},
		{"decoding empty", stageSrc("  decoding = []"), "decoding is empty", 2},
		{"decoding and constrained", stageSrc("  constrained = true\n  decoding = [\"grammar\"]"), "decoding replaces constrained and gpu_limits", 3},
		{"random_walk unconstrained", stageSrc("  baselines = [\"random_walk\"]"), "No grammar to walk", 2},
		{"random_walk only unconstrained", stageSrc("  baselines = [\"random_walk\"]\n  decoding = [\"unconstrained\"]"), "No grammar to walk", 2},
		{"random_walk without vocab", strings.Replace(stageSrc("  baselines = [\"random_walk\"]\n  constrained = true"), "  vocab = \"vocab.txt\"\n", "", 1), "Missing vocab", 2},
		{"greedy not a bool", stageSrc("  greedy = 3"), "Unsuitable value", 2},
		{"policy name", stageSrc("  policy \"Baseline:x\" {\n    checkpoint = \"a.ckpt\"\n  }"), "Invalid policy name", 2},
		{"policy twice", stageSrc("  policy \"sft\" {\n    checkpoint = \"a.ckpt\"\n  }\n  policy \"sft\" {\n    checkpoint = \"b.ckpt\"\n  }"), "Duplicate policy block", 5},
		{"policy without checkpoint", stageSrc("  policy \"sft\" {\n  }"), "Missing required argument", 2},
		{"policy checkpoint a number", stageSrc("  policy \"sft\" {\n    checkpoint = 3\n  }"), "checkpoint must be an upstream output (stage.sft.out.checkpoint)", 3},
		{"policy unknown attribute", stageSrc("  policy \"sft\" {\n    checkpoint = \"a.ckpt\"\n    temperature = 1\n  }"), "Unsupported argument", 4},
		{"nothing sampled", stageSrc("  attempts = 0\n  greedy = false\n  policy \"sft\" {\n    checkpoint = \"a.ckpt\"\n  }"), "No attempts", 2},
		{"nothing to benchmark", stageSrc("  baselines = []"), "Nothing to benchmark", 1},
		{"dataset_best without db", strings.Replace(stageSrc("  baselines = [\"dataset_best\"]"), "  db = \"db\"\n", "", 1), "Missing db", 2},
		{"policies without heldout", strings.Replace(stageSrc("  policy \"rl\" {\n    checkpoint = \"a.ckpt\"\n  }"), "  heldout = \"heldout.jsonl\"\n", "", 1), "Missing heldout", 2},
		{"no construction tasks", strings.Replace(stageSrc(""), "  construction_tasks = \"test_construction.jsonl\"\n", "", 1), "Missing construction_tasks", 1},
		{"outside unknown", stageSrc("  outside = \"kernelbench-level9\""), `outside is "kernelbench-level9"`, 2},
		{"outside and held-out tasks", stageSrc("  outside = \"kernelbench-level1\"\n  baselines = [\"unscheduled\"]"), "Unused construction_tasks", 7},
		{"outside and heldout.jsonl", stageSrc("  outside = \"kernelbench-level1\"\n  baselines = [\"unscheduled\"]"), "Unused heldout", 5},
		{"outside and dataset_best", outsideSrc("  baselines = [\"dataset_best\"]"), "No dataset_best on an outside set", 2},
		{"outside policies without vocab", strings.Replace(outsideSrc("  policy \"rl\" {\n    checkpoint = \"a.ckpt\"\n  }"), "  vocab = \"vocab.txt\"\n", "", 1), "Missing vocab", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, got := load(t, c.src)
			for _, l := range got {
				if strings.Contains(l, c.want) && strings.HasSuffix(l, " @"+itoaLine(c.line)) {
					return
				}
			}
			t.Errorf("no diagnostic with %q on line %d; got:\n%s", c.want, c.line, strings.Join(got, "\n"))
		})
	}
}

func itoaLine(n int) string { b, _ := json.Marshal(n); return string(b) }

func stageOf(t *testing.T, body string) *bench.Stage {
	t.Helper()
	cfg, diags := load(t, stageSrc(body))
	if cfg == nil {
		t.Fatalf("diagnostics: %v", diags)
	}
	for _, inst := range cfg.Instances {
		if s, ok := inst.Stage.(*bench.Stage); ok {
			return s
		}
	}
	t.Fatal("no bench stage")
	return nil
}

func params(s *bench.Stage) string {
	var b strings.Builder
	for _, p := range s.Params() {
		b.WriteString(p.Name + "=" + p.Value + "\n")
	}
	return b.String()
}

// defaultParams are the params of a bench that sets none: the key of such a
// bench is the one it had before decoding and random_walk existed.
const defaultParams = `policies=[]
baselines=["unscheduled","random","search","dataset_best"]
attempts=4
temperature=0.8
top_k=0
greedy=true
max_new=768
constrained=false
gpu_limits=false
tasks=0
search_trials=32
search_check="static"
target="h100-model"
numeric=true
seed=1
`

func TestDecodeDefaultsAndKey(t *testing.T) {
	s := stageOf(t, "")
	if got := params(s); got != defaultParams {
		t.Errorf("default params:\n%s\nwant:\n%s", got, defaultParams)
	}
	sp := s.Spec()
	want := bench.DefaultParams()
	if !slices.Equal(sp.Baselines, []string{"unscheduled", "random", "search", "dataset_best"}) || sp.Attempts != 4 || sp.Temperature != 0.8 || !sp.Greedy || sp.Constrained ||
		sp.Tasks != 0 || sp.SearchTrials != 32 || sp.Target != "h100-model" || !sp.Numeric || sp.Seed != 1 || sp.MaxNew != want.MaxNew {
		t.Fatalf("defaults: %+v", sp)
	}
	if err := sp.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(s.Inputs()) != 5 || len(s.Outputs()) != 3 || len(sp.Policies) != 0 || s.Shards() != 1 || stageOf(t, "  shards = 3").Shards() != 3 {
		t.Fatalf("inputs %v outputs %v", s.Inputs(), s.Outputs())
	}

	// The policies: labelled, in order, each an input.
	two := stageOf(t, "  policy \"sft\" {\n    checkpoint = \"sft.ckpt\"\n  }\n  policy \"rl\" {\n    checkpoint = \"rl.ckpt\"\n  }")
	ps := two.Spec().Policies
	if len(ps) != 2 || ps[0].Name != "sft" || ps[1].Name != "rl" || len(two.Inputs()) != 7 || two.Inputs()[6].Name != "policy.rl" {
		t.Fatalf("policies %+v inputs %+v", ps, two.Inputs())
	}
	if !strings.Contains(params(two), "policies=[\"sft\",\"rl\"]\n") {
		t.Errorf("params without the policies' names:\n%s", params(two))
	}

	// threads, batch and shards are not in the key; baselines are in their
	// canonical order whatever the order written; everything else is.
	base := params(s)
	for _, body := range []string{"  threads = 7", "  batch = 3", "  shards = 4", "  baselines = [\"dataset_best\", \"search\", \"random\", \"unscheduled\"]", "  task_pick = \"first\""} {
		if got := params(stageOf(t, body)); got != base {
			t.Errorf("%q changes the params:\n%s\n%s", body, got, base)
		}
	}
	for _, body := range []string{"  attempts = 2", "  temperature = 1", "  top_k = 5", "  greedy = false", "  max_new = 9", "  constrained = true",
		"  constrained = true\n  gpu_limits = true",
		"  tasks = 3", "  task_pick = \"spread\"", "  search_trials = 5", "  search_check = \"numeric\"", "  target = \"h200-model\"", "  numeric = false", "  seed = 2", "  baselines = [\"search\"]"} {
		if got := params(stageOf(t, body)); got == base {
			t.Errorf("%q does not change the params", body)
		}
	}

	// decoding: one mode is the key of its constrained and gpu_limits
	// spelling; several modes are in the key (in their canonical order)
	// instead of constrained and gpu_limits.
	for _, c := range []struct{ decoding, flags string }{
		{`["unconstrained"]`, ""}, {`["grammar"]`, "  constrained = true"}, {`["grammar+gpu_limits"]`, "  constrained = true\n  gpu_limits = true"},
	} {
		if got, want := params(stageOf(t, "  decoding = "+c.decoding)), params(stageOf(t, c.flags)); got != want {
			t.Errorf("decoding = %s: params\n%s\nwant those of %q:\n%s", c.decoding, got, c.flags, want)
		}
	}
	all := stageOf(t, "  decoding = [\"grammar+gpu_limits\", \"unconstrained\", \"grammar\"]")
	if got := params(all); !strings.Contains(got, "decoding=[\"unconstrained\",\"grammar\",\"grammar+gpu_limits\"]\n") || strings.Contains(got, "constrained=") || strings.Contains(got, "gpu_limits=") {
		t.Errorf("three decoding modes: params\n%s", got)
	}
	if m := all.Spec().Modes(); !slices.Equal(m, bench.AllDecodings) || all.Spec().Validate() != nil {
		t.Errorf("three decoding modes: modes %v, %v", m, all.Spec().Validate())
	}
	walk := stageOf(t, "  baselines = [\"random_walk\", \"unscheduled\"]\n  decoding = [\"unconstrained\", \"grammar\"]")
	if b := walk.Spec().Baselines; !slices.Equal(b, []string{"unscheduled", "random_walk"}) || walk.Spec().Validate() != nil {
		t.Errorf("random_walk: baselines %v, %v", b, walk.Spec().Validate())
	}

	// search_check is in the key and the spec only with the search
	// baseline: the keys of benches without one are those from before it
	// existed.
	if sp.SearchCheck != bench.SearchStatic || !strings.Contains(base, "search_check=\"static\"\n") {
		t.Errorf("default search_check: %q, params:\n%s", sp.SearchCheck, base)
	}
	noSearch := "  baselines = [\"unscheduled\", \"random\"]"
	without := params(stageOf(t, noSearch))
	if strings.Contains(without, "search_check") || stageOf(t, noSearch).Spec().SearchCheck != "" {
		t.Errorf("search_check without the search baseline:\n%s", without)
	}
	if got := params(stageOf(t, noSearch+"\n  search_check = \"numeric\"")); got != without {
		t.Errorf("search_check changes the key of a bench without search:\n%s\n%s", got, without)
	}
}

// TestCUDAWithoutGPU: target cuda on a machine without a GPU fails before
// any work (no input placed), saying why.
func TestCUDAWithoutGPU(t *testing.T) {
	if dev, err := cudabench.CheckGPU(context.Background(), cudabench.Options{}); err == nil {
		t.Skipf("this machine has a GPU (%s)", dev)
	}
	s := stageOf(t, "  target = \"cuda\"\n  baselines = [\"unscheduled\"]")
	rc := &stages.RunContext{Dir: t.TempDir(), Log: io.Discard, Progress: progress.Nop{}, Key: "test",
		Materialize: func(context.Context, string, string) error {
			t.Error("an input was placed before the GPU check")
			return errors.New("no")
		}}
	err := s.Run(context.Background(), rc)
	if err == nil || !strings.Contains(err.Error(), "bench: target cuda: ") {
		t.Fatalf("target cuda without a GPU: %v", err)
	}
	t.Log(err)
}
