package netbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/cache"
	"dragonx/kernels/corpus"
	"dragonx/kernels/dataset"
	kencode "dragonx/kernels/encode"
	"dragonx/kernels/ir"
	"dragonx/kernels/workload"
	"dragonx/stages"
	"dragonx/stages/netbench"
)

// taskLine is a construction task of harvest's test_construction.jsonl for
// spec.
func taskLine(t *testing.T, spec *workload.Spec) []byte {
	t.Helper()
	f, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	k, err := kencode.Kernel(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(dataset.ConstructionTask{Workload: dataset.Workload{Spec: spec, Hash: spec.Hash(), StructHash: fmt.Sprintf("%016x", ir.Hash(f)), Family: spec.Family(), Kernel: string(k)}})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// bertTiny returns BERT-tiny's subgraphs at its first variant (batch 1,
// sequence 64).
func bertTiny(t *testing.T) []corpus.Subgraph {
	t.Helper()
	n, err := corpus.NetworkByName("bert-tiny")
	if err != nil {
		t.Fatal(err)
	}
	vars, _, err := n.Variant(nil)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := n.Subgraphs(vars)
	if err != nil {
		t.Fatal(err)
	}
	return subs
}

// TestSmoke runs the stage through the engine on BERT-tiny at its smallest
// variant: the search at 1 and 2 trials per subgraph, and a bench block of
// two baselines on a task file that holds the subgraphs' tasks after one
// that is none of them, twice over (the first of each is kept).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the searches and a bench (about 20 s)")
	}
	dir := t.TempDir()
	subs := bertTiny(t)
	other, err := workload.Parse([]byte(`{"family":"SFM","M":8,"N":8}`))
	if err != nil {
		t.Fatal(err)
	}
	tasks := taskLine(t, other)
	for range 2 {
		for _, sg := range subs {
			tasks = append(tasks, taskLine(t, sg.Spec)...)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), tasks, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src := `stage "netbench" {
  kind          = "netbench"
  networks      = ["bert-tiny"]
  search_trials = [1, 2]
  k             = [1, 2]
  numeric       = false
  bench {
    construction_tasks = "tasks.jsonl"
    refinement_prompts = "prompts.jsonl"
    baselines = ["unscheduled", "random"]
    attempts  = 2
    greedy    = false
    numeric   = false
    tasks     = 0
  }
}
`
	path := filepath.Join(dir, "exp.hcl")
	eng := &stages.Engine{Store: cache.NewMem(), Jobs: 1, WorkRoot: filepath.Join(dir, "work"), StateRoot: filepath.Join(dir, "state")}
	cfg, diags := stages.LoadSource(path, []byte(src), stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	ctx := context.Background()
	rep, err := eng.Run(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Status != stages.StatusRan {
		t.Fatalf("stage did not run: %+v", rep.Results)
	}
	out := map[string][]byte{}
	for name, o := range rep.Results[0].Outputs {
		if name == "figures" {
			continue
		}
		rc, _, err := eng.Store.OpenBlob(ctx, o.Digest)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	var res netbench.Results
	if err := json.Unmarshal(out["results"], &res); err != nil {
		t.Fatal(err)
	}
	if res.Source != "model:h100" || len(res.Networks) != 1 {
		t.Fatalf("source %q, %d networks", res.Source, len(res.Networks))
	}
	nr := res.Networks[0]
	if nr.Network != "bert-tiny" || nr.Variant != "batch=1,seq=64" || len(nr.Subgraphs) != len(subs) {
		t.Fatalf("%s (%s): %d subgraphs, want bert-tiny (batch=1,seq=64) with %d", nr.Network, nr.Variant, len(nr.Subgraphs), len(subs))
	}
	points := map[string]netbench.NetPoint{}
	for _, p := range nr.Points {
		points[fmt.Sprintf("%s@%d", p.Entry, p.Budget)] = p
	}
	for _, want := range []string{"search@1", "search@2", "baseline:unscheduled@1", "baseline:random@1", "baseline:random@2"} {
		if _, ok := points[want]; !ok {
			t.Errorf("no point %s among %v", want, points)
		}
	}
	if _, ok := points["baseline:unscheduled@2"]; ok {
		t.Error("a point of unscheduled at k = 2: it makes one attempt")
	}
	// The network latency is the sum of count x latency of the subgraphs.
	best := points["search@2"]
	if best.LatencyUS == nil || best.Covered != len(subs) {
		t.Fatalf("search@2: latency %v, covered %d", best.LatencyUS, best.Covered)
	}
	sum := 0.0
	for _, sg := range nr.Subgraphs {
		p := sg.Search[1]
		if p.Trials != 2 || p.LatencyUS == nil {
			t.Fatalf("%s: search point %+v", sg.Layers[0], p)
		}
		sum += float64(sg.Count) * *p.LatencyUS
	}
	if math.Abs(sum-*best.LatencyUS) > 1e-9**best.LatencyUS {
		t.Errorf("search@2 network latency %g, the subgraphs sum to %g", *best.LatencyUS, sum)
	}
	if best.RatioToSearch == nil || *best.RatioToSearch != 1 || best.Trials != 2*len(subs) {
		t.Errorf("search@2: ratio %v, trials %d", best.RatioToSearch, best.Trials)
	}
	r1, r2 := points["baseline:random@1"], points["baseline:random@2"]
	if r1.Trials != len(subs) || r2.Trials != 2*len(subs) {
		t.Errorf("random: %d and %d trials, want %d and %d", r1.Trials, r2.Trials, len(subs), 2*len(subs))
	}
	if r1.LatencyUS != nil && r2.LatencyUS != nil && *r2.LatencyUS > *r1.LatencyUS {
		t.Errorf("random: best of 2 (%g) slower than best of 1 (%g)", *r2.LatencyUS, *r1.LatencyUS)
	}
	if un := points["baseline:unscheduled@1"]; un.LatencyUS == nil || un.TrialsSaved == nil || *un.TrialsSaved != 2 {
		t.Errorf("unscheduled: %+v", un)
	}
	if !strings.Contains(string(out["table"]), "| bert-tiny (batch=1,seq=64) | search | 2 trials |") || !strings.Contains(string(out["table"]), "simulated") {
		t.Errorf("table.md:\n%s", out["table"])
	}
	if lines := strings.Count(string(out["csv"]), "\n"); lines != 1+len(nr.Points) {
		t.Errorf("networks.csv has %d lines, want %d", lines, 1+len(nr.Points))
	}
}

func TestDiagnostics(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`networks = ["vgg-16"]`, `network "vgg-16": its layer table gives no counts`},
		{`networks = ["lenet"]`, `"lenet" is not a network of the layer tables`},
		{`networks = []`, "networks is empty"},
		{`networks = ["bert-tiny", "bert-tiny"]`, "listed twice"},
		{"networks = [\"bert-tiny\"]\n  variant = { seq = 100 }", "seq = 100 is not one of its values"},
		{"networks = [\"bert-tiny\"]\n  variant = { r = 224 }", `variant names "r", a variable of none`},
		{"networks = [\"bert-tiny\"]\n  search_trials = [256, 64]", "increasing order"},
		{"networks = [\"bert-tiny\"]\n  k = [0]", "whole numbers from 1"},
		{"networks = [\"bert-tiny\"]\n  target = \"tpu\"", `unknown target "tpu"`},
		{"networks = [\"bert-tiny\"]\n  bench {\n    construction_tasks = \"a\"\n    refinement_prompts = \"b\"\n    baselines = [\"unscheduled\"]\n    tasks = 10\n  }", "tasks is 10; want 0"},
		{"networks = [\"bert-tiny\"]\n  bench {\n    construction_tasks = \"a\"\n    refinement_prompts = \"b\"\n    baselines = [\"unscheduled\"]\n    target = \"h200-model\"\n  }", "would mix sources"},
	} {
		src := "stage \"n\" {\n  kind = \"netbench\"\n  " + tc.body + "\n}\n"
		_, diags := stages.LoadSource("exp.hcl", []byte(src), stages.LoadOptions{})
		if !diags.HasErrors() {
			t.Errorf("%q: no error", tc.body)
			continue
		}
		if msg := diags.Error(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "exp.hcl:") {
			t.Errorf("%q: %q, want %q at exp.hcl", tc.body, msg, tc.want)
		}
	}
}

// TestParams: the defaults written out give the same parameters, and the
// bench block's parameters follow, prefixed.
func TestParams(t *testing.T) {
	params := func(src string) string {
		cfg, diags := stages.LoadSource("exp.hcl", []byte(src), stages.LoadOptions{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		var b strings.Builder
		for _, p := range cfg.Instances[0].Stage.Params() {
			b.WriteString(p.Name + "=" + p.Value + "\n")
		}
		return b.String()
	}
	short := params("stage \"n\" {\n  kind = \"netbench\"\n  networks = [\"resnet-18\"]\n}")
	long := params("stage \"n\" {\n  kind = \"netbench\"\n  networks = [\"resnet-18\"]\n  variant = {}\n  search_trials = [64, 256, 1000]\n  k = [1, 4, 8]\n  target = \"h100-model\"\n  numeric = true\n  seed = 1\n  threads = 1\n}")
	want := "networks=[\"resnet-18\"]\nvariant={}\nsearch_trials=[64,256,1000]\nk=[1,4,8]\ntarget=\"h100-model\"\nnumeric=true\nseed=1\n"
	if short != want || long != want {
		t.Fatalf("params:\n%s\n%s\nwant\n%s", short, long, want)
	}
	withBench := params("stage \"n\" {\n  kind = \"netbench\"\n  networks = [\"resnet-18\"]\n  bench {\n    construction_tasks = \"a\"\n    refinement_prompts = \"b\"\n    baselines = [\"unscheduled\"]\n    tasks = 0\n  }\n}")
	if !strings.HasPrefix(withBench, want+"bench.policies=[]\nbench.baselines=[\"unscheduled\"]\n") {
		t.Fatalf("params with a bench block:\n%s", withBench)
	}
}
