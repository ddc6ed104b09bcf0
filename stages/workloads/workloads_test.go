package workloads_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/cache"
	"dragonx/kernels/corpus"
	"dragonx/stages"
	"dragonx/stages/workloads"
)

// runExperiment runs an experiment through the engine and returns the
// outputs of its only stage by name.
func runExperiment(t *testing.T, path string, src []byte) map[string][]byte {
	t.Helper()
	root := t.TempDir()
	eng := &stages.Engine{Store: cache.NewMem(), Jobs: 1, WorkRoot: filepath.Join(root, "work"), StateRoot: filepath.Join(root, "state")}
	cfg, diags := stages.LoadSource(path, src, stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	ctx := context.Background()
	rep, err := eng.Run(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Status != stages.StatusRan {
		t.Fatalf("stage did not run: %+v", rep.Results[0])
	}
	out := map[string][]byte{}
	for name, o := range rep.Results[0].Outputs {
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
	return out
}

func TestExampleExperiment(t *testing.T) {
	path := filepath.Join("testdata", "example.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := runExperiment(t, path, src)
	for _, name := range []string{"workloads", "train", "test", "stats"} {
		if len(out[name]) == 0 {
			t.Fatalf("output %s is missing or empty", name)
		}
	}
	all, err := corpus.Read(bytes.NewReader(out["workloads"]))
	if err != nil {
		t.Fatal(err)
	}
	train, err := corpus.Read(bytes.NewReader(out["train"]))
	if err != nil {
		t.Fatal(err)
	}
	test, err := corpus.Read(bytes.NewReader(out["test"]))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 200 || len(train)+len(test) != 200 {
		t.Fatalf("%d workloads (%d train, %d test), want 200", len(all), len(train), len(test))
	}
	// The same generation as the library, split into the two files in order.
	if !bytes.Equal(generated(t, corpus.Options{Count: 200, Seed: 1, TestFraction: 0.1, HoldOutNetwork: "bert-tiny", Workers: 1}), out["workloads"]) {
		t.Fatal("workloads.jsonl differs from corpus.Generate's records with one worker")
	}
	gpt2 := 0
	for i, r := range test {
		if r.Split != corpus.Test {
			t.Fatalf("test.jsonl line %d has split %q", i+1, r.Split)
		}
		if i < 52 && r.Network != corpus.BenchmarkNetwork {
			t.Fatalf("test.jsonl line %d is %s, want the benchmark shapes first", i+1, r.Network)
		}
		if r.Network == "bert-tiny" {
			gpt2++
		}
	}
	for i, r := range train {
		if r.Split != corpus.Train || r.Network == "bert-tiny" || r.Network == corpus.BenchmarkNetwork {
			t.Fatalf("train.jsonl line %d: split %q network %q", i+1, r.Split, r.Network)
		}
	}
	if gpt2 == 0 {
		t.Fatal("no BERT-tiny workload in the test split")
	}
	var st workloads.Stats
	if err := json.Unmarshal(out["stats"], &st); err != nil {
		t.Fatal(err)
	}
	if st.Workloads != 200 || st.Splits["train"] != len(train) || st.Splits["test"] != len(test) {
		t.Fatalf("stats: %+v", st)
	}
	if st.Networks[corpus.BenchmarkNetwork]["test"] != 52 || st.Networks["bert-tiny"]["test"] != gpt2 {
		t.Fatalf("stats networks: %v", st.Networks)
	}
	fam := 0
	for _, m := range st.Families {
		fam += m["train"] + m["test"]
	}
	if fam != 200 {
		t.Fatalf("stats families sum to %d", fam)
	}
}

// TestDeterministic runs the stage twice, in two engines, with different
// GOMAXPROCS-independent settings, and compares every output byte for byte.
func TestDeterministic(t *testing.T) {
	src := []byte(`stage "w" {
  kind  = "workloads"
  count = 400
  seed  = 7
  test_fraction = 0.2
}`)
	a := runExperiment(t, "a.hcl", src)
	b := runExperiment(t, "b.hcl", src)
	for name, x := range a {
		if !bytes.Equal(x, b[name]) {
			t.Errorf("output %s differs between two runs", name)
		}
	}
	var st workloads.Stats
	if err := json.Unmarshal(a["stats"], &st); err != nil {
		t.Fatal(err)
	}
	if st.Perturbed["train"]+st.Perturbed["test"] != 0 {
		// 400 is below the ~2,170 distinct rows: no perturbation needed.
		t.Errorf("perturbed workloads at count 400: %v", st.Perturbed)
	}
}

func TestPerturbationStats(t *testing.T) {
	recs, err := corpus.Generate(context.Background(), corpus.Options{Count: 2600, Seed: 3, TestFraction: 0.1, NoBenchmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	st := workloads.Summarize(recs)
	n := 0
	for _, r := range recs {
		if r.Perturbation != "" {
			n += len(strings.Split(r.Perturbation, "; "))
		}
	}
	sum := 0
	for k, c := range st.Perturbations {
		if k == "other" {
			t.Errorf("%d perturbations not classified", c)
		}
		sum += c
	}
	if n == 0 || sum != n {
		t.Fatalf("%d perturbations counted, %d applied", sum, n)
	}
}

func TestDiagnostics(t *testing.T) {
	for _, tc := range []struct {
		body string // the stage body after kind, on line 3 on
		want string
		line int
	}{
		{"count = -1", "count -1 is out of range", 3},
		{"count = 10.5", "whole number of workloads", 3},
		{`count = "many"`, "count must be a number", 3},
		{"count = 51", "below the 52 benchmark shapes", 3},
		{"count = 100\n  seed = 1.5", "seed must be a whole number", 4},
		{"count = 100\n  test_fraction = 1", "test_fraction 1 is out of range", 4},
		{"count = 100\n  test_fraction = -0.1", "test_fraction -0.1 is out of range", 4},
		{"count = 100\n  hold_out_network = \"lenet\"", `"lenet" is not a network of the layer tables; valid names: `, 4},
		{"count = 100\n  benchmarks = \"yes\"", "benchmarks must be a bool", 4},
		{"count = 100\n  hold_out_networks = [\"resnet-18\", \"lenet\"]", `hold_out_networks "lenet" is not a network of the layer tables`, 4},
		{"count = 100\n  hold_out_networks = [\"bert-tiny\", \"bert-tiny\"]", `names "bert-tiny" twice`, 4},
		{"count = 100\n  hold_out_network = \"bert-tiny\"\n  hold_out_networks = [\"bert-tiny\"]", `names "bert-tiny" twice`, 5},
		{"count = 100\n  hold_out_networks = \"bert-tiny\"", "hold_out_networks must be a list of string", 4},
		{"count = 100\n  workers = 4", `An argument named "workers" is not expected here`, 4},
		{"seed = 1", `The argument "count" is required`, 1},
		{"count = 100\n  family_floor = -1", "family_floor -1 is out of range", 4},
		{"count = 100\n  family_floor = 2.5", "family_floor must be a whole number", 4},
		{"count = 100\n  family_floor = 20000000", "family_floor 20000000 is out of range", 4},
		{"count = 100\n  family_floor = \"eight\"", "family_floor must be a number", 4},
	} {
		src := "stage \"w\" {\n  kind = \"workloads\"\n  " + tc.body + "\n}\n"
		_, diags := stages.LoadSource("exp.hcl", []byte(src), stages.LoadOptions{})
		if !diags.HasErrors() {
			t.Errorf("%q: no error", tc.body)
			continue
		}
		d := diags[0]
		msg := d.Summary + ": " + d.Detail
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%q: %q, want %q", tc.body, msg, tc.want)
		}
		if d.Subject == nil || d.Subject.Start.Line != tc.line || !strings.HasSuffix(d.Subject.Filename, "exp.hcl") {
			t.Errorf("%q: diagnostic at %v, want exp.hcl line %d", tc.body, d.Subject, tc.line)
		}
	}
	// Zero test_fraction, no benchmarks and count 1 are valid.
	src := "stage \"w\" {\n  kind = \"workloads\"\n  count = 1\n  benchmarks = false\n  test_fraction = 0\n}\n"
	if _, diags := stages.LoadSource("exp.hcl", []byte(src), stages.LoadOptions{}); diags.HasErrors() {
		t.Fatal(diags)
	}
}

// TestParamsDefaults: writing the defaults gives the same parameters as
// leaving them out, so both share one cache entry.
func TestParamsDefaults(t *testing.T) {
	params := func(src string) string {
		cfg, diags := stages.LoadSource("exp.hcl", []byte(src), stages.LoadOptions{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		var b strings.Builder
		for _, in := range cfg.Instances {
			for _, p := range in.Stage.Params() {
				b.WriteString(p.Name + "=" + p.Value + "\n")
			}
		}
		return b.String()
	}
	short := params(`stage "w" {
  kind = "workloads"
  count = 100
}`)
	long := params(`stage "w" {
  kind = "workloads"
  count = 100
  seed = 1
  test_fraction = 0.1
  hold_out_network = ""
  benchmarks = true
  family_floor = 0
}`)
	if short != long {
		t.Fatalf("defaults written out change the parameters:\n%s\n%s", short, long)
	}
	want := "count=100\nseed=1\ntest_fraction=0.1\nhold_out_network=\"\"\nbenchmarks=true\n"
	if short != want {
		t.Fatalf("params:\n%s\nwant\n%s", short, want)
	}
	// An empty hold_out_networks is no parameter; a list is one, after the others.
	if empty := params("stage \"w\" {\n  kind = \"workloads\"\n  count = 100\n  hold_out_networks = []\n}"); empty != want {
		t.Fatalf("hold_out_networks = [] changes the parameters:\n%s", empty)
	}
	two := params("stage \"w\" {\n  kind = \"workloads\"\n  count = 100\n  hold_out_networks = [\"resnet-18\", \"bert-tiny\"]\n}")
	if w := want + "hold_out_networks=[\"resnet-18\",\"bert-tiny\"]\n"; two != w {
		t.Fatalf("params:\n%s\nwant\n%s", two, w)
	}
	// So is family_floor: none at 0, one, last, above.
	floor := params("stage \"w\" {\n  kind = \"workloads\"\n  count = 100\n  family_floor = 8\n  hold_out_networks = [\"resnet-18\"]\n}")
	if w := want + "hold_out_networks=[\"resnet-18\"]\nfamily_floor=8\n"; floor != w {
		t.Fatalf("params:\n%s\nwant\n%s", floor, w)
	}
}

// TestFamilyFloorKey: family_floor enters the stage's key only above 0, so
// the keys of the stages without it stay as they were.
func TestFamilyFloorKey(t *testing.T) {
	key := func(extra string) string {
		t.Helper()
		src := "stage \"w\" {\n  kind = \"workloads\"\n  count = 800\n" + extra + "}\n"
		cfg, diags := stages.LoadSource("exp.hcl", []byte(src), stages.LoadOptions{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		eng := &stages.Engine{Store: cache.NewMem(), Jobs: 1, WorkRoot: t.TempDir(), StateRoot: t.TempDir()}
		rep, err := eng.Plan(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Results) != 1 || rep.Results[0].Key.IsZero() {
			t.Fatalf("plan: %+v", rep.Results)
		}
		return rep.Results[0].Key.String()
	}
	base := key("")
	for _, tc := range []struct {
		extra string
		same  bool
	}{
		{"  family_floor = 0\n", true},
		{"  family_floor = 8\n", false},
		{"  family_floor = 16\n", false},
	} {
		if got := key(tc.extra); (got == base) != tc.same {
			t.Errorf("%q: key %s, without it %s: want the same %v", tc.extra, got, base, tc.same)
		}
	}
	if key("  family_floor = 8\n") == key("  family_floor = 16\n") {
		t.Error("family_floor 8 and 16 share a key")
	}
}

// TestFamilyFloorRun: the stage passes family_floor to the generator.
func TestFamilyFloorRun(t *testing.T) {
	out := runExperiment(t, "f.hcl", []byte("stage \"w\" {\n  kind = \"workloads\"\n  count = 100\n  family_floor = 2\n}\n"))
	if !bytes.Equal(generated(t, corpus.Options{Count: 100, Seed: 1, TestFraction: 0.1, FamilyFloor: 2, Workers: 1}), out["workloads"]) {
		t.Fatal("workloads.jsonl differs from corpus.Generate's records with FamilyFloor 2")
	}
	var st workloads.Stats
	if err := json.Unmarshal(out["stats"], &st); err != nil {
		t.Fatal(err)
	}
	if st.Families["CAP"]["train"]+st.Families["CAP"]["test"] != 4+2 {
		t.Errorf("CAP workloads: %v, want the 4 benchmark shapes and 2 of the floor", st.Families["CAP"])
	}
}

// generated is the library's corpus for opts, as workloads.jsonl holds it.
func generated(t *testing.T, opts corpus.Options) []byte {
	t.Helper()
	recs, err := corpus.Generate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := corpus.Write(&buf, recs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
