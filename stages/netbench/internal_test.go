package netbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/corpus"
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/search"
	"dragonx/kernels/workload"
	"dragonx/stages/bench"
)

func ptr(x float64) *float64 { return &x }

func TestBestOfK(t *testing.T) {
	atts := []*bench.Attempt{
		{Attempt: 0, OK: false},
		{Attempt: 1, OK: true, LatencyUS: ptr(30), Source: "model:h100"},
		{Attempt: 2, OK: true, LatencyUS: ptr(10), Source: "model:h100"},
		{Attempt: 3, OK: true, LatencyUS: ptr(20), Source: "model:h100"},
		{Attempt: 4, OK: false, LatencyUS: ptr(1)}, // not correct: never the best
	}
	for _, tc := range []struct {
		k, n, correct int
		best          *float64
	}{
		{1, 1, 0, nil}, {2, 2, 1, ptr(30)}, {3, 3, 2, ptr(10)}, {4, 4, 3, ptr(10)}, {8, 5, 3, ptr(10)},
	} {
		best, n, correct, src := bestOfK(atts, tc.k)
		if n != tc.n || correct != tc.correct || (best == nil) != (tc.best == nil) || (best != nil && *best != *tc.best) {
			t.Errorf("k=%d: best %v of %d (%d correct), want %v of %d (%d)", tc.k, best, n, correct, tc.best, tc.n, tc.correct)
		}
		if best != nil && src != "model:h100" {
			t.Errorf("k=%d: source %q", tc.k, src)
		}
	}
}

func TestNetworkLatency(t *testing.T) {
	subs := []corpus.Subgraph{{Count: 2}, {Count: 5}, {Count: 1}}
	lat, covered := networkLatency(subs, func(i int) *float64 { return []*float64{ptr(10), ptr(1.5), ptr(4)}[i] })
	if lat == nil || *lat != 2*10+5*1.5+4 || covered != 3 {
		t.Errorf("latency %v over %d subgraphs, want 31.5 over 3", lat, covered)
	}
	lat, covered = networkLatency(subs, func(i int) *float64 { return []*float64{ptr(10), nil, ptr(4)}[i] })
	if lat != nil || covered != 2 {
		t.Errorf("a subgraph without a latency: %v over %d, want none over 2", lat, covered)
	}
}

// TestKeepTasks keeps the first task of each subgraph, renumbers the
// tasks and their held-out records, and names the subgraphs missing.
func TestKeepTasks(t *testing.T) {
	dir := t.TempDir()
	tasks := `{"struct_hash":"aa","n":0}
{"struct_hash":"bb","n":1}
{"struct_hash":"cc","n":2}
{"struct_hash":"bb","n":3}
`
	held := `{"task":"construction","index":0,"prompt":[1]}
{"task":"construction","index":1,"prompt":[2],"format":"decisions"}
{"task":"refinement","index":1,"prompt":[3]}
{"task":"construction","index":2,"prompt":[4]}
{"task":"construction","index":3,"prompt":[5]}
`
	tp, hp := filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "h.jsonl")
	if err := os.WriteFile(tp, []byte(tasks), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, []byte(held), 0o644); err != nil {
		t.Fatal(err)
	}
	b, newIndex, hashOf, err := keepTasks(tp, map[string]string{"bb": "x", "cc": "y"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"struct_hash\":\"bb\",\"n\":1}\n{\"struct_hash\":\"cc\",\"n\":2}\n"; string(b) != want {
		t.Errorf("kept:\n%s\nwant\n%s", b, want)
	}
	if len(newIndex) != 2 || newIndex[1] != 0 || newIndex[2] != 1 || hashOf[0] != "bb" || hashOf[1] != "cc" {
		t.Errorf("newIndex %v, hashOf %v", newIndex, hashOf)
	}
	hb, err := keepHeldout(hp, newIndex)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"format\":\"decisions\",\"index\":0,\"prompt\":[2],\"task\":\"construction\"}\n{\"index\":1,\"prompt\":[4],\"task\":\"construction\"}\n"; string(hb) != want {
		t.Errorf("held out:\n%s\nwant\n%s", hb, want)
	}
	if _, _, _, err := keepTasks(tp, map[string]string{"bb": "x", "dd": "bert-tiny pooler.dense"}); err == nil || !strings.Contains(err.Error(), "bert-tiny pooler.dense") {
		t.Errorf("a subgraph without a task: err %v", err)
	}
}

// TestSearchPrefix checks what searchSubgraph relies on: a search to N
// trials, N a multiple of its round, measures the first N candidates of a
// longer search with the same seed.
func TestSearchPrefix(t *testing.T) {
	if testing.Short() {
		t.Skip("two searches")
	}
	spec, err := workload.Parse([]byte(`{"family":"SFM","M":64,"N":32}`))
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	src, err := gpumodel.New("h100-model", gpumodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(trials int) []search.Record {
		log := &trialLog{MemoryDB: search.NewMemoryDB()}
		if _, err := search.Run(context.Background(), f, search.Options{Trials: trials, TrialsPerRound: roundTrials, Seed: 5, Measure: src, DB: log}); err != nil {
			t.Fatal(err)
		}
		return log.recs
	}
	short, long := run(roundTrials), run(2*roundTrials)
	if len(short) != roundTrials || len(long) <= roundTrials {
		t.Fatalf("%d and %d candidates measured", len(short), len(long))
	}
	for i := range short {
		if short[i].IRHash != long[i].IRHash || short[i].LatencyS != long[i].LatencyS {
			t.Fatalf("candidate %d differs: %s (%g) and %s (%g)", i, short[i].IRHash, short[i].LatencyS, long[i].IRHash, long[i].LatencyS)
		}
	}
}

// FuzzKeep: any task and held-out files either fail or keep only lines
// of the wanted subgraphs, renumbered from 0.
func FuzzKeep(f *testing.F) {
	f.Add([]byte("{\"struct_hash\":\"aa\"}\n{\"struct_hash\":\"bb\"}\n"), []byte("{\"task\":\"construction\",\"index\":1,\"prompt\":[2]}\n"))
	f.Add([]byte("{\"struct_hash\":1}\n"), []byte("{\"task\":3}\n"))
	f.Add([]byte("\n\n"), []byte("null\n"))
	f.Fuzz(func(t *testing.T, tasks, held []byte) {
		dir := t.TempDir()
		tp, hp := filepath.Join(dir, "t"), filepath.Join(dir, "h")
		if err := os.WriteFile(tp, tasks, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, held, 0o644); err != nil {
			t.Fatal(err)
		}
		_, newIndex, hashOf, err := keepTasks(tp, map[string]string{"bb": "x"})
		if err != nil {
			return
		}
		if len(hashOf) != 1 || hashOf[0] != "bb" || len(newIndex) != 1 {
			t.Fatalf("kept %v (%v)", hashOf, newIndex)
		}
		if _, err := keepHeldout(hp, newIndex); err != nil {
			return
		}
	})
}

// TestVersion: the kind's version carries the bench kind's, so that a new
// bench version reruns the network bench.
func TestVersion(t *testing.T) {
	if v := (Kind{}).Version(); v != Version+"+bench"+bench.Version {
		t.Errorf("Version() = %q", v)
	}
}
