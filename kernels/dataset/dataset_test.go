package dataset

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/sample"
	"dragonx/kernels/trace"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/workload"
)

var target = json.RawMessage(`{"kind":"cuda","arch":"sm_90"}`)

// distinctTraces draws n distinct accepted traces of s.
func distinctTraces(t *testing.T, s *workload.Spec, n int) []*trace.Trace {
	t.Helper()
	samples, err := sample.DrawSpec(context.Background(), s, 1, 4*n, sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []*trace.Trace
	for _, d := range samples {
		if d.OK() && !seen[d.Trace.String()] && len(out) < n {
			seen[d.Trace.String()] = true
			out = append(out, d.Trace)
		}
	}
	if len(out) < n {
		t.Fatalf("%s: only %d distinct traces in %d draws", s.Label(), len(out), 4*n)
	}
	return out
}

func spec(t *testing.T, js string) *workload.Spec {
	t.Helper()
	s, err := workload.ParseString(js)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// handDB builds a database of three softmax workloads (the sampler's
// accepted draws of small matmuls are too few to be distinct). Workload "gmm" has 11
// distinct scripts with latencies 1..11 us (model:h100), a failure, a
// duplicate of its slowest script at 0.5 us, and 2 measured records;
// "sfm" has 3 scripts; "gmm2" has 8.
func handDB(t *testing.T) (*tunedb.DB, map[string]*workload.Spec) {
	t.Helper()
	specs := map[string]*workload.Spec{
		"gmm":  spec(t, `{"family":"SFM","M":64,"N":64}`),
		"sfm":  spec(t, `{"family":"SFM","M":32,"N":64}`),
		"gmm2": spec(t, `{"family":"SFM","M":64,"N":128}`),
	}
	db, err := tunedb.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	commit := func(w int, tr *trace.Trace, secs float64, label string) {
		t.Helper()
		if err := db.CommitRecord(&tunedb.Record{Workload: w, Trace: tr, RunSecs: []float64{secs}, Target: target, LatencySource: label}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"gmm", "sfm", "gmm2"} {
		w, err := db.CommitWorkload(specs[name])
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{"gmm": 11, "sfm": 3, "gmm2": 8}[name]
		trs := distinctTraces(t, specs[name], n)
		// Committed slowest first, so that the order of commit is not
		// the order of latency.
		for j := n - 1; j >= 0; j-- {
			commit(w, trs[j], float64(j+1)/1e6, "model:h100") // exactly the literal (j+1)e-6
		}
		if name == "gmm" {
			if err := db.CommitRecord(tunedb.Failed(w, trs[0], target, nil, "model:h100")); err != nil {
				t.Fatal(err)
			}
			commit(w, trs[10], 0.5e-6, "model:h100") // a faster run of the slowest script
			commit(w, trs[3], 0.1e-6, "measured")
			commit(w, trs[4], 0.2e-6, "measured")
		}
	}
	return db, specs
}

func TestSelectionRules(t *testing.T) {
	db, specs := handDB(t)
	opts := DefaultOptions()
	opts.PairsPerWorkload = 2
	res, err := Build(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	byHash := map[string][]*Refinement{}
	for _, r := range res.Refinement {
		byHash[r.Hash] = append(byHash[r.Hash], r)
	}
	cons := map[string]*Construction{}
	for _, c := range res.Construction {
		cons[c.Hash] = c
	}
	if len(res.Construction) != 3 {
		t.Fatalf("%d construction examples, want one per workload", len(res.Construction))
	}
	// gmm: the duplicate at 0.5 us is the fastest run of script 11, so
	// the distinct scripts are 11 (0.5), 1, 2, ..., 10 us: 11 of them. The
	// measured records (2) lose to model:h100 (11 valid).
	g := cons[specs["gmm"].Hash()]
	if g.Target.LatencyS != 0.5e-6 || g.Target.LatencySource != "model:h100" {
		t.Errorf("gmm construction target: %v s from %s, want 5e-07 from model:h100", g.Target.LatencyS, g.Target.LatencySource)
	}
	// Band [0.4, 0.6] of 11 ranks: ranks 4..6; middle first: 5 then 6.
	rs := byHash[specs["gmm"].Hash()]
	if len(rs) != 2 {
		t.Fatalf("gmm: %d refinement pairs, want 2", len(rs))
	}
	for i, want := range []struct{ q, src float64 }{{0.5, 5e-6}, {0.6, 6e-6}} {
		r := rs[i]
		if r.SourceQuantile != want.q || r.Source.LatencyS != want.src || r.Target.LatencyS != 0.5e-6 {
			t.Errorf("gmm pair %d: source q=%v %v s, target %v s; want q=%v %v s, target 5e-07 s", i, r.SourceQuantile, r.Source.LatencyS, r.Target.LatencyS, want.q, want.src)
		}
		if r.Speedup < opts.MinSpeedup || r.Source.Script == r.Target.Script {
			t.Errorf("gmm pair %d: speedup %v, same script %v", i, r.Speedup, r.Source.Script == r.Target.Script)
		}
		if !strings.Contains(r.Target.Script, "EnterPostproc") || !json.Valid(r.Target.Trace) {
			t.Errorf("gmm pair %d: target script or trace malformed", i)
		}
	}
	// sfm has 3 scripts, fewer than MinRecords: no pair.
	if len(byHash[specs["sfm"].Hash()]) != 0 {
		t.Error("sfm (3 scripts) gave refinement pairs")
	}
	if res.Stats.Skipped["refinement: too few scripts"] != 1 {
		t.Errorf("skipped: %v", res.Stats.Skipped)
	}
	// gmm2: 8 ranks, band ranks ceil(2.8)=3..floor(4.2)=4, middle 3.
	g2 := byHash[specs["gmm2"].Hash()]
	if len(g2) != 2 || g2[0].Source.LatencyS != 4e-6 || g2[1].Source.LatencyS != 5e-6 {
		t.Errorf("gmm2 pairs: %+v", g2)
	}
	st := res.Stats
	if st.Workloads != 3 || st.Construction != 3 || st.Refinement != 4 || st.Families["SFM"].Refinement != 4 || st.Speedup.N != 4 {
		t.Errorf("stats: %+v", st)
	}
	if st.DistinctScripts != 11+3+8 || st.TraceLength.N != 3 || st.TraceLength.Min <= 0 {
		t.Errorf("stats: distinct %d, trace lengths %+v", st.DistinctScripts, st.TraceLength)
	}

	// A speedup no pair reaches.
	opts.MinSpeedup = 100
	res, err = Build(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refinement) != 0 || res.Stats.Skipped["refinement: source below min speedup"] == 0 {
		t.Errorf("min speedup 100: %d pairs, skipped %v", len(res.Refinement), res.Stats.Skipped)
	}

	// One label chosen explicitly: gmm's measured records (2 scripts).
	opts = DefaultOptions()
	opts.LatencySource = "measured"
	opts.MinRecords = 2
	opts.SourceLow, opts.SourceHigh = 0, 1
	res, err = Build(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Construction) != 1 || res.Construction[0].Target.LatencyS != 0.1e-6 || len(res.Refinement) != 1 || res.Refinement[0].Speedup != 2 {
		t.Errorf("measured only: %d construction, %d refinement", len(res.Construction), len(res.Refinement))
	}
}

// TestManyPerWorkload checks the construction targets beyond the best and
// the refinement pairs that take them in turn.
func TestManyPerWorkload(t *testing.T) {
	db, specs := handDB(t)
	for _, tc := range []struct {
		name   string
		k      int
		within float64
		npairs int
		gmm    []float64 // gmm's construction targets, fastest first
		pairs  [][2]float64
	}{
		// gmm's ranks: 0.5, 1, 2, ..., 10 us; band [0.4, 0.6]: ranks 5, 6, 4.
		{"best only", 1, 0, 3, []float64{0.5e-6}, [][2]float64{{5e-6, 0.5e-6}, {6e-6, 0.5e-6}, {4e-6, 0.5e-6}}},
		{"top 3", 3, 0, 3, []float64{0.5e-6, 1e-6, 2e-6}, [][2]float64{{5e-6, 0.5e-6}, {6e-6, 1e-6}, {4e-6, 2e-6}}},
		{"top 3 within 3x", 3, 3, 3, []float64{0.5e-6, 1e-6}, [][2]float64{{5e-6, 0.5e-6}, {6e-6, 1e-6}, {4e-6, 0.5e-6}}},
		// Round 1 gives each source the other target: 6 distinct pairs.
		{"top 3 within 3x, more pairs than sources", 3, 3, 10, []float64{0.5e-6, 1e-6},
			[][2]float64{{5e-6, 0.5e-6}, {6e-6, 1e-6}, {4e-6, 0.5e-6}, {5e-6, 1e-6}, {6e-6, 0.5e-6}, {4e-6, 1e-6}}},
		{"best only, more pairs than sources", 1, 0, 10, []float64{0.5e-6}, [][2]float64{{5e-6, 0.5e-6}, {6e-6, 0.5e-6}, {4e-6, 0.5e-6}}},
		{"all", 100, 0, 3, []float64{0.5e-6, 1e-6, 2e-6, 3e-6, 4e-6, 5e-6, 6e-6, 7e-6, 8e-6, 9e-6, 10e-6},
			[][2]float64{{5e-6, 0.5e-6}, {6e-6, 1e-6}, {4e-6, 2e-6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.ConstructionPerWorkload, opts.ConstructionWithin, opts.PairsPerWorkload = tc.k, tc.within, tc.npairs
			res, err := Build(context.Background(), db, opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []float64
			texts := map[string]bool{}
			for _, c := range res.Construction {
				if c.Hash == specs["gmm"].Hash() {
					got = append(got, c.Target.LatencyS)
					if texts[c.Target.Script] {
						t.Errorf("gmm: script at %v s repeated", c.Target.LatencyS)
					}
					texts[c.Target.Script] = true
				}
			}
			if !slices.Equal(got, tc.gmm) {
				t.Errorf("gmm construction targets %v, want %v", got, tc.gmm)
			}
			var pairs [][2]float64
			for _, r := range res.Refinement {
				if r.Hash == specs["gmm"].Hash() {
					pairs = append(pairs, [2]float64{r.Source.LatencyS, r.Target.LatencyS})
					if r.Source.LatencyS < opts.MinSpeedup*r.Target.LatencyS {
						t.Errorf("pair %v below the min speedup", pairs[len(pairs)-1])
					}
				}
			}
			if !slices.Equal(pairs, tc.pairs) {
				t.Errorf("gmm pairs (source, target) %v, want %v", pairs, tc.pairs)
			}
			if res.Stats.Construction != len(res.Construction) {
				t.Errorf("stats count %d construction, built %d", res.Stats.Construction, len(res.Construction))
			}
		})
	}
}

func TestOptionsRefused(t *testing.T) {
	db, _ := handDB(t)
	for _, mut := range []func(*Options){
		func(o *Options) { o.MinSpeedup = 1 },
		func(o *Options) { o.SourceLow, o.SourceHigh = 0.7, 0.3 },
		func(o *Options) { o.MinRecords = 1 },
		func(o *Options) { o.TestRefinement = -1 },
		func(o *Options) { o.ConstructionPerWorkload = 0 },
		func(o *Options) { o.ConstructionWithin = 0.5 },
		func(o *Options) { o.ConstructionWithin = math.Inf(1) },
	} {
		o := DefaultOptions()
		mut(&o)
		if _, err := Build(context.Background(), db, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

func TestTestSplitHeldOut(t *testing.T) {
	db, specs := handDB(t)
	opts := DefaultOptions()
	opts.PairsPerWorkload = 3
	// gmm2 is held out, and a workload that is not in the database.
	other := spec(t, `{"family":"SFM","M":128,"N":128}`)
	opts.Test = []*workload.Spec{specs["gmm2"], other}
	opts.TestConstruction = 2
	opts.TestRefinement = 2
	res, err := Build(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	testHash, testStruct := map[string]bool{}, map[string]bool{}
	for _, s := range opts.Test {
		f, err := s.Build()
		if err != nil {
			t.Fatal(err)
		}
		testHash[s.Hash()], testStruct[structHash(f)] = true, true
	}
	check := func(kind string, w Workload) {
		if testHash[w.Hash] || testStruct[w.StructHash] || testHash[w.Spec.Hash()] {
			t.Errorf("%s example of test workload %s", kind, w.Spec.Label())
		}
	}
	for _, c := range res.Construction {
		check("construction", c.Workload)
	}
	for _, r := range res.Refinement {
		check("refinement", r.Workload)
	}
	if len(res.Construction) != 2 || res.Stats.HeldOut != 1 {
		t.Errorf("%d construction examples, %d held out; want 2 and 1", len(res.Construction), res.Stats.HeldOut)
	}
	if len(res.TestConstruction) != 2 || res.TestConstruction[0].ReferenceLatencyS == nil ||
		*res.TestConstruction[0].ReferenceLatencyS != 1e-6 || res.TestConstruction[1].ReferenceLatencyS != nil ||
		res.TestConstruction[1].Hash != other.Hash() || res.TestConstruction[1].Kernel == "" {
		t.Errorf("test construction tasks: %+v", res.TestConstruction)
	}
	// gmm2 (8 scripts): band ranks 3, 4: two prompts, 4 us then 5 us.
	if len(res.TestRefinement) != 2 || res.TestRefinement[0].Source.LatencyS != 4e-6 || res.TestRefinement[1].Source.LatencyS != 5e-6 {
		t.Errorf("test refinement prompts: %+v", res.TestRefinement)
	}
	// Asking for more prompts than the band holds gives what there is.
	opts.TestRefinement = 170
	res, err = Build(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.TestRefinement) != 2 {
		t.Errorf("%d prompts from a band of 2", len(res.TestRefinement))
	}

	dir := t.TempDir()
	if err := Write(dir, res); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]int{ConstructionFile: 2, RefinementFile: len(res.Refinement), TestConstructionFile: 2, TestRefinementFile: 2} {
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["workload"] == nil || m["hash"] == nil {
				t.Errorf("%s line %d: %v", file, n+1, err)
			}
			n++
		}
		f.Close()
		if n != want {
			t.Errorf("%s: %d lines, want %d", file, n, want)
		}
	}
}

func TestReadTestSplit(t *testing.T) {
	in := `{"spec":{"family":"SFM","M":64,"N":64},"split":"test","hash":"x"}
{"spec":{"family":"SFM","M":32,"N":64},"split":"train"}

{"family":"GMM","B":1,"N":16,"M":16,"K":16}
`
	got, err := ReadTestSplit(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Label() != "SFM(64,64)" || got[1].Family() != "GMM" {
		t.Errorf("read %v", got)
	}
	if _, err := ReadTestSplit(strings.NewReader(`{"family":"NOPE"}`)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad spec: err = %v", err)
	}
}

func TestBand(t *testing.T) {
	o := DefaultOptions()
	for _, c := range []struct {
		n    int
		want string
	}{{1, "[]"}, {2, "[]"}, {5, "[2]"}, {11, "[5 6 4]"}, {8, "[3 4]"}} {
		if got := strings.ReplaceAll(strings.TrimSpace(fmtInts(band(c.n, o))), "  ", " "); got != c.want {
			t.Errorf("band(%d) = %s, want %s", c.n, got, c.want)
		}
	}
}

func fmtInts(xs []int) string {
	b, _ := json.Marshal(xs)
	return strings.ReplaceAll(strings.ReplaceAll(string(b), ",", " "), "null", "[]")
}
