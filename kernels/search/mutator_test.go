package search

import (
	"context"
	"math/rand/v2"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/sample"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

func benchFunc(t testing.TB, family string, index int) *ir.PrimFunc {
	t.Helper()
	spec, err := workload.BenchmarkSpec(family, index)
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// drawOK returns up to n accepted draws of workload f.
func drawOK(t testing.TB, f *ir.PrimFunc, seed int64, n int) []*trace.Trace {
	t.Helper()
	ss, err := sample.Draw(context.Background(), f, seed, 8*n+16, sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*trace.Trace
	for _, s := range ss {
		if s.OK() && len(out) < n {
			out = append(out, s.Trace)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no accepted draw of %s", f.Name)
	}
	return out
}

// changed returns the indices of the decisions that differ between a and
// b's sketch parts.
func changed(a, b *trace.Trace) []int {
	var out []int
	end := a.Postproc()
	if end < 0 {
		end = len(a.Insts)
	}
	for i := range end {
		da, oka := a.Decision(i)
		db, okb := b.Decision(i)
		if oka != okb || !da.Equal(db) {
			out = append(out, i)
		}
	}
	return out
}

// TestMutatorsKeepTracesValid: on draws of several benchmark workloads,
// every mutation changes exactly one decision, drops the postprocessors'
// part, replays (the decision fits its instruction: a perfect tiling, an
// index in range), and most mutated traces pass the whole static check
// (replay, postprocessors, VerifyGPUCode); each mutator applies somewhere.
func TestMutatorsKeepTracesValid(t *testing.T) {
	ctx := context.Background()
	applied := map[string]int{}
	for _, fam := range []string{"GMM", "C2D", "SFM", "NRM"} {
		f := benchFunc(t, fam, 0)
		rng := rand.New(rand.NewPCG(1, 2))
		total, pass := 0, 0
		for _, tr := range drawOK(t, f, 3, 6) {
			for _, wm := range CUDAMutators() {
				for range 4 {
					out, ok := wm.Mutator.Apply(tr, rng)
					if !ok {
						continue
					}
					applied[wm.Mutator.Name()]++
					if out.Postproc() >= 0 {
						t.Fatalf("%s %s: mutated trace keeps EnterPostproc", fam, wm.Mutator.Name())
					}
					if c := changed(tr, out); len(c) != 1 {
						t.Fatalf("%s %s: %d decisions changed (%v), want 1", fam, wm.Mutator.Name(), len(c), c)
					}
					v := verdict.CheckTrace(ctx, f, out, verdict.Options{})
					if v.Phase == verdict.PhaseReplay && !v.OK {
						t.Fatalf("%s %s: mutated trace does not replay: %s\n%s", fam, wm.Mutator.Name(), v.Error, out)
					}
					total++
					if v.OK {
						pass++
						if v.Trace().Postproc() < 0 {
							t.Fatalf("%s: checked trace has no postprocessors' part", fam)
						}
					}
				}
			}
		}
		if total == 0 || 2*pass < total {
			t.Errorf("%s: %d of %d mutated traces pass the static check, want at least half", fam, pass, total)
		}
		t.Logf("%s: %d of %d mutated traces pass", fam, pass, total)
	}
	for _, wm := range CUDAMutators() {
		if applied[wm.Mutator.Name()] == 0 {
			t.Errorf("%s never applied", wm.Mutator.Name())
		}
	}
}

// TestMutatorsDeterministic: the same trace and generator seed give the
// same mutation; the input trace is not modified.
func TestMutatorsDeterministic(t *testing.T) {
	f := benchFunc(t, "GMM", 0)
	tr := drawOK(t, f, 5, 1)[0]
	before := tr.String()
	for _, wm := range CUDAMutators() {
		var got []string
		for range 2 {
			rng := rand.New(rand.NewPCG(9, 9))
			out, ok := wm.Mutator.Apply(tr, rng)
			s := "none"
			if ok {
				s = out.String()
			}
			got = append(got, s)
		}
		if got[0] != got[1] {
			t.Errorf("%s: two runs with the same seed differ", wm.Mutator.Name())
		}
	}
	if tr.String() != before {
		t.Error("a mutator modified its input trace")
	}
}

// TestMutateTileSizeMove: on a hand-written decision, a factor moves from one
// tile to another, the product stays, the innermost tile stays within
// max_innermost_factor, and a decision with nothing to move is left alone.
func TestMutateTileSizeMove(t *testing.T) {
	tr, err := trace.Parse([]byte(`[[["GetBlock",[],["C","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2","l3"]],` +
		`["SamplePerfectTile",["l1"],[3,4],["v4","v5","v6"]]],[[2,[8,4,4]]]]`))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	seen := map[string]bool{}
	for range 200 {
		out, ok := MutateTileSize{}.Apply(tr, rng)
		if !ok {
			t.Fatal("no mutation of [8,4,4]")
		}
		d, _ := out.Decision(2)
		p := int64(1)
		for _, x := range d.Array {
			p *= x.Int
		}
		if p != 128 || d.Array[2].Int > 4 || len(d.Array) != 3 {
			t.Fatalf("bad mutation %s of [8,4,4] (max innermost 4)", d)
		}
		seen[d.String()] = true
	}
	if seen["[8,4,4]"] {
		t.Error("mutation kept the decision")
	}
	if !seen["[32,1,4]"] || !seen["[2,16,4]"] || !seen["[8,16,1]"] {
		t.Errorf("moves missing: saw %v", seen)
	}
	one, _ := trace.Parse([]byte(`[[["GetBlock",[],["C","main"],["b0"]],["GetLoops",["b0"],[],["l1"]],` +
		`["SamplePerfectTile",["l1"],[2,4],["v4","v5"]]],[[2,[1,1]]]]`))
	if _, ok := (MutateTileSize{}).Apply(one, rng); ok {
		t.Error("mutated a tiling of product 1")
	}
}
