package schedule_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
)

func TestComputeAt(t *testing.T) {
	conv := func(t *testing.T, s *schedule.Schedule) []schedule.LoopRV {
		return getLoops(t, s, getBlock(t, s, "conv1d_nlc"))
	}
	runCases(t, []primCase{
		{name: "padding under the output loop", f: conv1d, prim: "ComputeAt",
			op: func(t *testing.T, s *schedule.Schedule) error {
				err := s.ComputeAt(getBlock(t, s, "PadInput"), conv(t, s)[1], true, -1)
				// l runs over 5 outputs with stride 2 and kernel 3: each
				// output needs 3 padded rows of 4 channels.
				ls := getLoops(t, s, getBlock(t, s, "PadInput"))
				var ext []int64
				for _, l := range ls {
					ext = append(ext, constExtent(loopOf(t, s, l)))
				}
				if err == nil && !slices.Equal(ext, []int64{1, 5, 1, 3, 4}) {
					t.Errorf("PadInput loops %v, want [1 5 1 3 4]", ext)
				}
				return err
			}},
		{name: "unit loops dropped", f: conv1d, prim: "ComputeAt",
			op: func(t *testing.T, s *schedule.Schedule) error {
				err := s.ComputeAt(getBlock(t, s, "PadInput"), conv(t, s)[1], false, -1)
				if n := len(getLoops(t, s, getBlock(t, s, "PadInput"))); err == nil && n != 4 {
					t.Errorf("%d loops, want 4 (n, l, and two new ones)", n)
				}
				return err
			}},
		{name: "at the reduction loop", f: conv1d, prim: "ComputeAt",
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.ComputeAt(getBlock(t, s, "PadInput"), conv(t, s)[4], true, -1)
			}},
		{name: "tiled with a shared cache", f: dense, prim: "ComputeAt",
			setup: func(t *testing.T, s *schedule.Schedule) {
				ls := getLoops(t, s, getBlock(t, s, "T_matmul_NT"))
				must[[]schedule.LoopRV](t)(s.Split(ls[0], []int64{2, 4}, true, false))
				must[[]schedule.LoopRV](t)(s.Split(ls[2], []int64{4, 4}, true, false))
				must[schedule.BlockRV](t)(s.CacheRead(getBlock(t, s, "T_matmul_NT"), 0, "shared", nil))
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := getLoops(t, s, getBlock(t, s, "T_matmul_NT")) // i0 i1 j k0 k1
				err := s.ComputeAt(getBlock(t, s, "p0_shared"), ls[3], true, -1)
				// Per (i0, i1, j, k0): one row of p0 and 4 of its columns
				// (k1); the loops above k0 are not relaxed.
				cl := getLoops(t, s, getBlock(t, s, "p0_shared"))
				if err == nil && (len(cl) != 6 || constExtent(loopOf(t, s, cl[4])) != 1 || constExtent(loopOf(t, s, cl[5])) != 4) {
					t.Errorf("p0_shared has %d loops", len(cl))
				}
				return err
			}},
		{name: "root marker does nothing", f: conv1d, prim: "ComputeAt",
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.ComputeAt(getBlock(t, s, "PadInput"), schedule.RootLoop, true, -1)
			}},
		{name: "inline marker inlines", f: conv1d, prim: "ComputeAt",
			op: func(t *testing.T, s *schedule.Schedule) error {
				err := s.ComputeAt(getBlock(t, s, "PadInput"), schedule.InlineLoop, true, -1)
				if _, e := ir.FindBlock(s.Func(), "PadInput"); err == nil && e == nil {
					t.Error("PadInput is still there")
				}
				return err
			}},
		{name: "output block", f: conv1d, prim: "ComputeAt", err: []string{"is an output block", "conv1d_nlc"},
			setup: func(t *testing.T, s *schedule.Schedule) {
				must[[]schedule.LoopRV](t)(s.Split(getLoops(t, s, getBlock(t, s, "PadInput"))[1], []int64{2, 6}, true, false))
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.ComputeAt(getBlock(t, s, "conv1d_nlc"), getLoops(t, s, getBlock(t, s, "PadInput"))[1], true, -1)
			}},
		{name: "under its own loop", f: conv1d, prim: "ComputeAt", err: []string{"already one of its ancestors"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.ComputeAt(getBlock(t, s, "PadInput"), getLoops(t, s, getBlock(t, s, "PadInput"))[0], true, -1)
			}},
		{name: "consumer not under the loop", f: chain, prim: "ComputeAt", err: []string{"not all its consumers are under the loop", `"C"`},
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.ComputeAt(getBlock(t, s, "B"), getLoops(t, s, getBlock(t, s, "D"))[0], true, -1)
			}},
		{name: "bad index", f: conv1d, prim: "ComputeAt", err: []string{"index 5 is not a valid position", "[0, 0]"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.ComputeAt(getBlock(t, s, "PadInput"), conv(t, s)[1], true, 5)
			}},
		{name: "opaque block", f: opaqueBlock, prim: "ComputeAt", err: []string{"neither a complete block", "nor a reduction block"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.ComputeAt(getBlock(t, s, "B"), getLoops(t, s, getBlock(t, s, "B"))[1], true, -1)
			}},
		{name: "reverse: epilogue under the reduction's loop", f: reduceRelu, prim: "ReverseComputeAt",
			op: func(t *testing.T, s *schedule.Schedule) error {
				err := s.ReverseComputeAt(getBlock(t, s, "R"), getLoops(t, s, getBlock(t, s, "S"))[0], true, -1)
				if names := childNames(s.Func().Root()); err == nil && !slices.Equal(names, []string{"S", "R"}) {
					t.Errorf("children %v", names)
				}
				return err
			}},
		{name: "reverse: cache write back under the thread loop", f: dense, prim: "ReverseComputeAt",
			setup: func(t *testing.T, s *schedule.Schedule) {
				ls := getLoops(t, s, getBlock(t, s, "T_matmul_NT"))
				must[[]schedule.LoopRV](t)(s.Split(ls[1], []int64{3, 4}, true, false))
				must[schedule.BlockRV](t)(s.CacheWrite(getBlock(t, s, "T_matmul_NT"), 0, "local", nil))
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := getLoops(t, s, getBlock(t, s, "T_matmul_NT"))
				err := s.ReverseComputeAt(getBlock(t, s, "T_matmul_NT_local"), ls[1], true, -1)
				cl := getLoops(t, s, getBlock(t, s, "T_matmul_NT_local"))
				if err == nil && (len(cl) != 4 || constExtent(loopOf(t, s, cl[2])) != 1 || constExtent(loopOf(t, s, cl[3])) != 4) {
					t.Errorf("write-back loops %d", len(cl))
				}
				return err
			}},
		{name: "reverse: producer not under the loop", f: chain, prim: "ReverseComputeAt", err: []string{"not all its producers are under the loop", `"C"`},
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.ReverseComputeAt(getBlock(t, s, "D"), getLoops(t, s, getBlock(t, s, "B"))[0], true, -1)
			}},
	})
}

func TestInline(t *testing.T) {
	runCases(t, []primCase{
		{name: "compute_inline", f: chain, prim: "ComputeInline",
			op: func(t *testing.T, s *schedule.Schedule) error {
				err := s.ComputeInline(getBlock(t, s, "B"))
				if names := childNames(s.Func().Root()); err == nil && !slices.Equal(names, []string{"C", "D"}) {
					t.Errorf("children %v", names)
				}
				if err == nil && len(s.Func().Root().AllocBuffers) != 1 {
					t.Errorf("B's buffer is still allocated: %v", s.Func().Root().AllocBuffers)
				}
				return err
			}},
		{name: "compute_inline padding", f: conv1d, prim: "ComputeInline",
			op: func(t *testing.T, s *schedule.Schedule) error {
				err := s.ComputeInline(getBlock(t, s, "PadInput"))
				b := blockOf(t, s, getBlock(t, s, "conv1d_nlc"))
				if err == nil && (b.Reads[0].Buffer.Name() != "inputs" || !strings.Contains(s.Func().Script(), "T.if_then_else")) {
					t.Errorf("conv reads %v:\n%s", b.Reads, s.Func().Script())
				}
				return err
			}},
		{name: "compute_inline twice", f: chain, prim: "ComputeInline",
			op: func(t *testing.T, s *schedule.Schedule) error {
				if err := s.ComputeInline(getBlock(t, s, "C")); err != nil {
					return err
				}
				return s.ComputeInline(getBlock(t, s, "B"))
			}},
		{name: "compute_inline reduction", f: reduceRelu, prim: "ComputeInline", err: []string{"has an init statement"},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.ComputeInline(getBlock(t, s, "S")) }},
		{name: "compute_inline output", f: chain, prim: "ComputeInline", err: []string{"is an output block", "D"},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.ComputeInline(getBlock(t, s, "D")) }},
		{name: "compute_inline stale", f: chain, prim: "ComputeInline", err: []string{`block "B", which is no longer in the function`},
			setup: func(t *testing.T, s *schedule.Schedule) {
				staleB = getBlock(t, s, "B")
				if err := s.ComputeInline(staleB); err != nil {
					t.Fatal(err)
				}
			},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.ComputeInline(staleB) }},
		{name: "reverse_compute_inline", f: chain, prim: "ReverseComputeInline",
			op: func(t *testing.T, s *schedule.Schedule) error {
				err := s.ReverseComputeInline(getBlock(t, s, "D"))
				if names := childNames(s.Func().Root()); err == nil && !slices.Equal(names, []string{"B", "C"}) {
					t.Errorf("children %v", names)
				}
				return err
			}},
		{name: "reverse_compute_inline epilogue into a cache write", f: reduceRelu, prim: "ReverseComputeInline",
			setup: func(t *testing.T, s *schedule.Schedule) {
				must[schedule.BlockRV](t)(s.CacheWrite(getBlock(t, s, "S"), 0, "local", nil))
			},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.ReverseComputeInline(getBlock(t, s, "R")) }},
		{name: "reverse_compute_inline into a reduction", f: reduceRelu, prim: "ReverseComputeInline", err: []string{`producer "S" is not a complete block`},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.ReverseComputeInline(getBlock(t, s, "R")) }},
		{name: "reverse_compute_inline a reduction", f: dense, prim: "ReverseComputeInline", err: []string{"has an init statement"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.ReverseComputeInline(getBlock(t, s, "T_matmul_NT"))
			}},
		{name: "reverse_compute_inline with no producer", f: chain, prim: "ReverseComputeInline", err: []string{"reads no buffer produced in its scope"},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.ReverseComputeInline(getBlock(t, s, "B")) }},
	})
}

var staleB schedule.BlockRV

func TestDecomposeReduction(t *testing.T) {
	runCases(t, []primCase{
		{name: "at the reduction loop", f: dense, prim: "DecomposeReduction",
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := getLoops(t, s, getBlock(t, s, "T_matmul_NT"))
				init, err := s.DecomposeReduction(getBlock(t, s, "T_matmul_NT"), ls[2])
				if err == nil {
					if blockOf(t, s, init).Name != "T_matmul_NT_init" {
						t.Errorf("init named %s", blockOf(t, s, init).Name)
					}
					if len(getLoops(t, s, init)) != 2 {
						t.Errorf("init has %d loops, want 2", len(getLoops(t, s, init)))
					}
				}
				return err
			}},
		{name: "at the outermost loop", f: dense, prim: "DecomposeReduction",
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := getLoops(t, s, getBlock(t, s, "T_matmul_NT"))
				init, err := s.DecomposeReduction(getBlock(t, s, "T_matmul_NT"), ls[0])
				if err == nil && len(getLoops(t, s, init)) != 2 {
					t.Errorf("init has %d loops (i_init, j_init)", len(getLoops(t, s, init)))
				}
				if names := childNames(s.Func().Root()); err == nil && !slices.Equal(names, []string{"T_matmul_NT_init", "T_matmul_NT_update"}) {
					t.Errorf("children %v", names)
				}
				return err
			}},
		{name: "below a reduction loop", f: dense, prim: "DecomposeReduction", err: []string{"must be above every loop", "k_0"},
			setup: func(t *testing.T, s *schedule.Schedule) {
				ls := getLoops(t, s, getBlock(t, s, "T_matmul_NT"))
				must[[]schedule.LoopRV](t)(s.Split(ls[2], []int64{4, 4}, true, false))
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := getLoops(t, s, getBlock(t, s, "T_matmul_NT"))
				_, err := s.DecomposeReduction(getBlock(t, s, "T_matmul_NT"), ls[3])
				return err
			}},
		{name: "not a reduction", f: chain, prim: "DecomposeReduction", err: []string{"is not a reduction block", "condition 1"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.DecomposeReduction(getBlock(t, s, "B"), getLoops(t, s, getBlock(t, s, "B"))[0])
				return err
			}},
		{name: "loop of another block", f: chain, prim: "DecomposeReduction", err: []string{"is not one of the loops"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.DecomposeReduction(getBlock(t, s, "B"), getLoops(t, s, getBlock(t, s, "C"))[0])
				return err
			}},
	})
}

func TestAnnotate(t *testing.T) {
	runCases(t, []primCase{
		{name: "block and loop", f: dense, prim: "Annotate",
			op: func(t *testing.T, s *schedule.Schedule) error {
				b := getBlock(t, s, "T_matmul_NT")
				if err := s.Annotate(b, "meta_schedule.tiling_structure", ir.AnnString("SSSRRSRS")); err != nil {
					return err
				}
				l := getLoops(t, s, b)[0]
				if err := s.Annotate(l, "pragma_auto_unroll_max_step", ir.AnnInt(64)); err != nil {
					return err
				}
				if v, _ := loopOf(t, s, l).Annotations.Int("pragma_auto_unroll_max_step"); v != 64 {
					t.Errorf("loop annotation %d", v)
				}
				return s.Unannotate(b, "meta_schedule.tiling_structure")
			}},
		{name: "unannotate missing", f: dense, prim: "Unannotate", err: []string{`has no annotation "meta_schedule.cooperative_fetch"`},
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.Unannotate(getBlock(t, s, "T_matmul_NT"), "meta_schedule.cooperative_fetch")
			}},
		{name: "annotate an expression", f: dense, prim: "Annotate", err: []string{"expected a block or a loop"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.Annotate(s.NewExprRV(3), "k", ir.AnnInt(1))
			}},
	})
}

func TestSamplePerfectTile(t *testing.T) {
	f := dense(t)
	for seed := int64(1); seed <= 50; seed++ {
		s := schedule.New(f, seed)
		b := getBlock(t, s, "T_matmul_NT")
		for i, l := range getLoops(t, s, b) {
			n := int64(2 + i)
			vs, d, err := s.SamplePerfectTile(l, n, 4, nil)
			if err != nil {
				t.Fatal(err)
			}
			prod := int64(1)
			for k, v := range vs {
				x := must[int64](t)(s.GetExpr(v))
				if x != d[k] || x < 1 {
					t.Fatalf("seed %d: value %d vs decision %v", seed, x, d)
				}
				prod *= x
			}
			if ext := constExtent(loopOf(t, s, l)); prod != ext || int64(len(d)) != n || d[n-1] > 4 {
				t.Fatalf("seed %d: tiles %v of extent %d (n %d, innermost <= 4)", seed, d, ext, n)
			}
		}
	}
	// The same seed gives the same decisions; another seed, usually not.
	draw := func(seed int64) [][]int64 {
		s := schedule.New(f, seed)
		var out [][]int64
		for _, l := range getLoops(t, s, getBlock(t, s, "T_matmul_NT")) {
			_, d, _ := s.SamplePerfectTile(l, 4, 64, nil)
			out = append(out, d)
		}
		return out
	}
	if a, b := draw(7), draw(7); !slices.EqualFunc(a, b, slices.Equal) {
		t.Errorf("seed 7 drew %v then %v", a, b)
	}
	differ := false
	for seed := int64(8); seed < 20; seed++ {
		if !slices.EqualFunc(draw(7), draw(seed), slices.Equal) {
			differ = true
		}
	}
	if !differ {
		t.Error("every seed draws the same tiles")
	}

	// Decisions: valid ones are used, invalid ones refused.
	s := schedule.New(f, 1)
	l := getLoops(t, s, getBlock(t, s, "T_matmul_NT"))[1] // extent 12
	if _, d, err := s.SamplePerfectTile(l, 3, 64, []int64{2, 3, 2}); err != nil || !slices.Equal(d, []int64{2, 3, 2}) {
		t.Errorf("valid decision: %v %v", d, err)
	}
	for _, bad := range [][]int64{{2, 3}, {2, 3, 3}, {0, 12, 1}, {4, 3, -1}} {
		_, _, err := s.SamplePerfectTile(l, 3, 64, bad)
		var de *schedule.DecisionError
		if !errors.As(err, &de) {
			t.Errorf("decision %v: %v, want a DecisionError", bad, err)
		}
	}
	if got := schedule.RepairPerfectTile(12, 3, []int64{8, 1, 4}); !slices.Equal(got, []int64{3, 1, 4}) {
		t.Errorf("RepairPerfectTile(12, [8 1 4]) = %v, want [3 1 4]", got)
	}
	if got := schedule.RepairPerfectTile(12, 3, []int64{1, 5, 8}); !slices.Equal(got, []int64{1, 1, 12}) {
		t.Errorf("RepairPerfectTile(12, [1 5 8]) = %v, want [1 1 12]", got)
	}
}

func TestSampleCategorical(t *testing.T) {
	s := schedule.New(dense(t), 3)
	cands := []int64{0, 16, 64, 512}
	counts := make([]int, len(cands))
	for range 4000 {
		v, i, err := s.SampleCategorical(cands, []float64{0.1, 0.2, 0.3, 0.4}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if x := must[int64](t)(s.GetExpr(v)); x != cands[i] {
			t.Fatalf("value %d for index %d", x, i)
		}
		counts[i]++
	}
	for i, c := range counts {
		want := 4000 * (i + 1) / 10
		if c < want*3/4 || c > want*5/4 {
			t.Errorf("candidate %d drawn %d times, want about %d (counts %v)", i, c, want, counts)
		}
	}
	idx := int64(2)
	if _, i, err := s.SampleCategorical(cands, []float64{1, 1, 1, 1}, &idx); err != nil || i != 2 {
		t.Errorf("decision 2: %d %v", i, err)
	}
	bad := int64(4)
	_, _, err := s.SampleCategorical(cands, []float64{1, 1, 1, 1}, &bad)
	wantError(t, err, "SampleCategorical", "index 4 is out of range for 4 candidates")
	_, _, err = s.SampleCategorical(cands, []float64{1, 1}, nil)
	wantError(t, err, "SampleCategorical", "4 candidates but 2 probabilities")
}

func TestSampleComputeLocation(t *testing.T) {
	s := schedule.New(conv1d(t), 5)
	pad := getBlock(t, s, "PadInput")
	cands, err := s.ComputeLocationCandidates(pad)
	if err != nil {
		t.Fatal(err)
	}
	// inline, root, then the loops of conv1d_nlc: n (unit, skipped), l,
	// co, rl (reduction after the last spatial loop: stop).
	if want := []int64{-2, -1, 1, 2}; !slices.Equal(cands, want) {
		t.Errorf("candidates %v, want %v", cands, want)
	}
	seen := map[int64]bool{}
	for range 100 {
		_, d, err := s.SampleComputeLocation(pad, nil)
		if err != nil {
			t.Fatal(err)
		}
		seen[d] = true
	}
	if len(seen) != len(cands) {
		t.Errorf("sampled %v of %v", seen, cands)
	}
	d := int64(2)
	l, got, err := s.SampleComputeLocation(pad, &d)
	if err != nil || got != 2 || loopOf(t, s, l).Var.Name() != "co" {
		t.Errorf("decision 2: %v %d %v", l, got, err)
	}
	bad := int64(4)
	_, _, err = s.SampleComputeLocation(pad, &bad)
	wantError(t, err, "SampleComputeLocation", "location 4 is not one of the candidates [-2 -1 1 2]")
	if got := schedule.RepairComputeLocation(cands, 4); got != 2 {
		t.Errorf("RepairComputeLocation(4) = %d, want 2", got)
	}
	if got := schedule.RepairComputeLocation([]int64{-1, 3}, 2); got != -1 {
		t.Errorf("RepairComputeLocation(2) = %d, want -1", got)
	}
	// The sampled location computes the same thing.
	s2 := newSched(conv1d(t))
	pad2 := getBlock(t, s2, "PadInput")
	l2, _, err := s2.SampleComputeLocation(pad2, &d)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.ComputeAt(pad2, l2, true, -1); err != nil {
		t.Fatal(err)
	}
	checkSame(t, conv1d(t), s2.Func())
}

func TestRand(t *testing.T) {
	// minstd (48271, 2^31-1) from seed 1.
	r := schedule.NewRand(1)
	for i, want := range []int64{48271, 182605794, 1291394886, 1914720637, 2078669041} {
		if got := r.Next(); got != want {
			t.Fatalf("draw %d = %d, want %d", i, got, want)
		}
	}
	if a, b := schedule.NewRand(0), schedule.NewRand(1); a.State() != b.State() {
		t.Errorf("seed 0 gives state %d, want 1 as TVM", a.State())
	}
	if r := schedule.NewRand(-5); r.State() < 1 {
		t.Errorf("negative seed gives state %d", r.State())
	}
	r = schedule.NewRand(42)
	for range 1000 {
		if x := r.Int(3, 10); x < 3 || x >= 10 {
			t.Fatalf("Int(3, 10) = %d", x)
		}
		if f := r.Float(); f < 0 || f >= 1 {
			t.Fatalf("Float() = %v", f)
		}
	}
	counts := make([]int, 6)
	for range 6000 {
		counts[r.Int(0, 6)]++
	}
	for i, c := range counts {
		if c < 850 || c > 1150 {
			t.Errorf("Int(0, 6) drew %d %d times of 6000", i, c)
		}
	}
}
