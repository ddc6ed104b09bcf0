package schedule_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
)

// primCase is one use of a primitive: setup brings the schedule to the
// state under test (and must succeed), op applies the primitive. With err
// nil the primitive must succeed and leave a well-formed function that
// computes what the workload does; otherwise it must fail with a message
// containing every fragment of err, leaving the function unchanged.
type primCase struct {
	name  string
	f     func(testing.TB) *ir.PrimFunc
	setup func(t *testing.T, s *schedule.Schedule)
	op    func(t *testing.T, s *schedule.Schedule) error
	prim  string
	err   []string
	check func(t *testing.T, s *schedule.Schedule)
}

func runCases(t *testing.T, cases []primCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := c.f(t)
			s := newSched(base)
			if c.setup != nil {
				c.setup(t, s)
			}
			before := ir.Hash(s.Func())
			beforeIR := s.Func().Script()
			err := c.op(t, s)
			if c.err != nil {
				wantError(t, err, c.prim, c.err...)
				if ir.Hash(s.Func()) != before {
					t.Errorf("the failed %s changed the function:\nbefore\n%s\nafter\n%s", c.prim, beforeIR, s.Func().Script())
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", c.prim, err)
			}
			checkSame(t, base, s.Func())
			if c.check != nil {
				c.check(t, s)
			}
		})
	}
}

func TestGetters(t *testing.T) {
	runCases(t, []primCase{
		{name: "GetBlock", f: conv1d, prim: "GetBlock",
			op: func(t *testing.T, s *schedule.Schedule) error { _, err := s.GetBlock("conv1d_nlc", "main"); return err }},
		{name: "GetBlock/missing", f: conv1d, prim: "GetBlock", err: []string{`no block named "conv2d"`},
			op: func(t *testing.T, s *schedule.Schedule) error { _, err := s.GetBlock("conv2d", "main"); return err }},
		{name: "GetBlock/wrong function", f: conv1d, prim: "GetBlock", err: []string{`no function named "other"`},
			op: func(t *testing.T, s *schedule.Schedule) error { _, err := s.GetBlock("PadInput", "other"); return err }},
		{name: "GetLoops", f: conv1d, prim: "GetLoops",
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls, err := s.GetLoops(getBlock(t, s, "conv1d_nlc"))
				var names []string
				for _, l := range ls {
					names = append(names, loopOf(t, s, l).Var.Name())
				}
				if want := []string{"n", "l", "co", "rl", "rc"}; !slices.Equal(names, want) {
					t.Errorf("GetLoops = %v, want %v", names, want)
				}
				return err
			}},
		{name: "GetChildBlocks", f: chain, prim: "GetChildBlocks",
			op: func(t *testing.T, s *schedule.Schedule) error {
				bs, err := s.GetChildBlocks(getBlock(t, s, "root"))
				var names []string
				for _, b := range bs {
					names = append(names, blockOf(t, s, b).Name)
				}
				if want := []string{"B", "C", "D"}; !slices.Equal(names, want) {
					t.Errorf("GetChildBlocks(root) = %v, want %v", names, want)
				}
				inner, err2 := s.GetChildBlocks(getLoops(t, s, getBlock(t, s, "C"))[1])
				if len(inner) != 1 || blockOf(t, s, inner[0]).Name != "C" {
					t.Errorf("GetChildBlocks(loop of C) = %v", inner)
				}
				if err == nil {
					err = err2
				}
				return err
			}},
		{name: "GetProducers/GetConsumers", f: conv1d, prim: "GetProducers",
			op: func(t *testing.T, s *schedule.Schedule) error {
				ps, err := s.GetProducers(getBlock(t, s, "conv1d_nlc"))
				if err != nil {
					return err
				}
				cs := must[[]schedule.BlockRV](t)(s.GetConsumers(getBlock(t, s, "PadInput")))
				if len(ps) != 1 || blockOf(t, s, ps[0]).Name != "PadInput" || len(cs) != 1 || blockOf(t, s, cs[0]).Name != "conv1d_nlc" {
					t.Errorf("producers %v, consumers %v", ps, cs)
				}
				return nil
			}},
		{name: "GetProducers/root", f: conv1d, prim: "GetProducers", err: []string{"root block"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.GetProducers(getBlock(t, s, "root"))
				return err
			}},
	})
}

func TestSplit(t *testing.T) {
	var stale schedule.LoopRV
	loopI := func(t *testing.T, s *schedule.Schedule) schedule.LoopRV {
		return getLoops(t, s, getBlock(t, s, "T_matmul_NT"))[0]
	}
	split := func(factors ...int64) func(t *testing.T, s *schedule.Schedule) error {
		return func(t *testing.T, s *schedule.Schedule) error {
			_, err := s.Split(loopI(t, s), factors, true, false)
			return err
		}
	}
	runCases(t, []primCase{
		{name: "perfect", f: dense, prim: "Split", op: split(2, 4),
			check: func(t *testing.T, s *schedule.Schedule) {
				ls := getLoops(t, s, getBlock(t, s, "T_matmul_NT"))
				if got := []int64{constExtent(loopOf(t, s, ls[0])), constExtent(loopOf(t, s, ls[1]))}; !slices.Equal(got, []int64{2, 4}) {
					t.Errorf("extents %v", got)
				}
				if !strings.Contains(s.Func().Script(), "i_0 * 4 + i_1") {
					t.Errorf("binding not i_0 * 4 + i_1:\n%s", s.Func().Script())
				}
			}},
		{name: "three factors with None", f: dense, prim: "Split", op: split(schedule.Infer, 2, 2),
			check: func(t *testing.T, s *schedule.Schedule) {
				if got := constExtent(loopOf(t, s, getLoops(t, s, getBlock(t, s, "T_matmul_NT"))[0])); got != 2 {
					t.Errorf("inferred factor %d, want 2", got)
				}
			}},
		{name: "imperfect with None", f: dense, prim: "Split", op: split(schedule.Infer, 3),
			check: func(t *testing.T, s *schedule.Schedule) {
				if !strings.Contains(s.Func().Script(), "T.where(i_0 * 3 + i_1 < 8)") {
					t.Errorf("no predicate:\n%s", s.Func().Script())
				}
			}},
		{name: "imperfect product above the extent", f: dense, prim: "Split", op: split(3, 3)},
		{name: "unit factors", f: dense, prim: "Split", op: split(1, 8, 1)},
		{name: "two None", f: dense, prim: "Split", op: split(schedule.Infer, schedule.Infer), err: []string{"only one factor may be None"}},
		{name: "zero factor", f: dense, prim: "Split", op: split(0, 8), err: []string{"factor 0 is 0", "positive"}},
		{name: "product below the extent", f: dense, prim: "Split", op: split(3, 2), err: []string{"product of the factors [3 2] is 6, smaller than the extent 8"}},
		{name: "no factor", f: dense, prim: "Split", op: split(), err: []string{"no factors"}},
		{name: "annotated loop", f: dense, prim: "Split", op: split(2, 4), err: []string{"annotation or a thread binding"},
			setup: func(t *testing.T, s *schedule.Schedule) {
				if err := s.Annotate(loopI(t, s), "pragma_auto_unroll_max_step", ir.AnnInt(16)); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "thread-bound loop", f: dense, prim: "Split", op: split(2, 4), err: []string{"annotation or a thread binding"},
			setup: func(t *testing.T, s *schedule.Schedule) {
				if err := s.Bind(loopI(t, s), "blockIdx.x"); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "stale loop", f: dense, prim: "Split", err: []string{"loop i, which is no longer in the function"},
			setup: func(t *testing.T, s *schedule.Schedule) {
				stale = loopI(t, s)
				must[[]schedule.LoopRV](t)(s.Split(stale, []int64{2, 4}, true, false))
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.Split(stale, []int64{4, 2}, true, false)
				return err
			}},
		{name: "marker", f: dense, prim: "Split", err: []string{"marker"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.Split(schedule.RootLoop, []int64{2, 4}, true, false)
				return err
			}},
	})
}

func TestFuse(t *testing.T) {
	loops := func(t *testing.T, s *schedule.Schedule) []schedule.LoopRV {
		return getLoops(t, s, getBlock(t, s, "T_matmul_NT"))
	}
	runCases(t, []primCase{
		{name: "adjacent", f: dense, prim: "Fuse",
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := loops(t, s)
				f, err := s.Fuse(ls[:2], true)
				if err == nil && (constExtent(loopOf(t, s, f)) != 96 || loopOf(t, s, f).Var.Name() != "i_j_fused") {
					t.Errorf("fused loop %s of extent %d", loopOf(t, s, f).Var.Name(), constExtent(loopOf(t, s, f)))
				}
				return err
			}},
		{name: "all three", f: dense, prim: "Fuse",
			op: func(t *testing.T, s *schedule.Schedule) error { _, err := s.Fuse(loops(t, s), true); return err }},
		{name: "after split, unit loop", f: dense, prim: "Fuse",
			setup: func(t *testing.T, s *schedule.Schedule) {
				must[[]schedule.LoopRV](t)(s.Split(loops(t, s)[1], []int64{1, 12}, true, false))
			},
			op: func(t *testing.T, s *schedule.Schedule) error { _, err := s.Fuse(loops(t, s)[:3], true); return err }},
		{name: "non-adjacent", f: dense, prim: "Fuse", err: []string{"is not directly inside"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := loops(t, s)
				_, err := s.Fuse([]schedule.LoopRV{ls[0], ls[2]}, true)
				return err
			}},
		{name: "inner first", f: dense, prim: "Fuse", err: []string{"is not directly inside"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := loops(t, s)
				_, err := s.Fuse([]schedule.LoopRV{ls[1], ls[0]}, true)
				return err
			}},
		{name: "not the only child", f: reduceRelu, prim: "Fuse", err: []string{"not the only statement"},
			setup: func(t *testing.T, s *schedule.Schedule) {
				if err := s.ReverseComputeAt(getBlock(t, s, "R"), getLoops(t, s, getBlock(t, s, "S"))[0], true, -1); err != nil {
					t.Fatal(err)
				}
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := getLoops(t, s, getBlock(t, s, "S"))
				_, err := s.Fuse(ls, true)
				return err
			}},
		{name: "same loop twice", f: dense, prim: "Fuse", err: []string{"appears twice"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := loops(t, s)
				_, err := s.Fuse([]schedule.LoopRV{ls[0], ls[0]}, true)
				return err
			}},
		{name: "bound loop", f: dense, prim: "Fuse", err: []string{"thread binding"},
			setup: func(t *testing.T, s *schedule.Schedule) {
				if err := s.Bind(loops(t, s)[0], "blockIdx.x"); err != nil {
					t.Fatal(err)
				}
			},
			op: func(t *testing.T, s *schedule.Schedule) error { _, err := s.Fuse(loops(t, s)[:2], true); return err }},
	})
}

func TestReorder(t *testing.T) {
	var stale schedule.LoopRV
	loops := func(t *testing.T, s *schedule.Schedule) []schedule.LoopRV {
		return getLoops(t, s, getBlock(t, s, "T_matmul_NT"))
	}
	runCases(t, []primCase{
		{name: "reduction outermost", f: dense, prim: "Reorder",
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := loops(t, s)
				err := s.Reorder([]schedule.LoopRV{ls[2], ls[0], ls[1]})
				var names []string
				for _, l := range loops(t, s) {
					names = append(names, loopOf(t, s, l).Var.Name())
				}
				if err == nil && !slices.Equal(names, []string{"k", "i", "j"}) {
					t.Errorf("order %v", names)
				}
				return err
			}},
		{name: "partial, others keep their place", f: dense, prim: "Reorder",
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := loops(t, s)
				return s.Reorder([]schedule.LoopRV{ls[2], ls[0]})
			}},
		{name: "tiled", f: dense, prim: "Reorder",
			setup: func(t *testing.T, s *schedule.Schedule) {
				ls := loops(t, s)
				must[[]schedule.LoopRV](t)(s.Split(ls[0], []int64{2, 4}, true, false))
				must[[]schedule.LoopRV](t)(s.Split(ls[2], []int64{4, 4}, true, false))
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := loops(t, s) // i0 i1 j k0 k1
				return s.Reorder([]schedule.LoopRV{ls[0], ls[3], ls[2], ls[1], ls[4]})
			}},
		{name: "duplicate", f: dense, prim: "Reorder", err: []string{"appears more than once"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := loops(t, s)
				return s.Reorder([]schedule.LoopRV{ls[0], ls[0]})
			}},
		// Reorder checks that its loops are in f with one walk for all:
		// the errors still come in the order of the loops.
		{name: "stale loop before a duplicate", f: dense, prim: "Reorder", err: []string{"loop i, which is no longer in the function"},
			setup: func(t *testing.T, s *schedule.Schedule) {
				stale = loops(t, s)[0]
				must[[]schedule.LoopRV](t)(s.Split(stale, []int64{2, 4}, true, false))
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := loops(t, s)
				return s.Reorder([]schedule.LoopRV{ls[0], stale, ls[0]})
			}},
		{name: "duplicate before a marker", f: dense, prim: "Reorder", err: []string{"appears more than once"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := loops(t, s)
				return s.Reorder([]schedule.LoopRV{ls[1], ls[1], schedule.RootLoop})
			}},
		{name: "marker", f: dense, prim: "Reorder", err: []string{"marker"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := loops(t, s)
				return s.Reorder([]schedule.LoopRV{ls[0], schedule.InlineLoop, ls[1]})
			}},
		{name: "not a chain", f: chain, prim: "Reorder", err: []string{"not nested in one another"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				b := getLoops(t, s, getBlock(t, s, "B"))
				c := getLoops(t, s, getBlock(t, s, "C"))
				return s.Reorder([]schedule.LoopRV{b[0], c[1]})
			}},
		{name: "sequence in between", f: reduceRelu, prim: "Reorder", err: []string{"not a chain"},
			setup: func(t *testing.T, s *schedule.Schedule) {
				sl := getLoops(t, s, getBlock(t, s, "S"))
				must[[]schedule.LoopRV](t)(s.Split(sl[0], []int64{3, 4}, true, false))
				sl = getLoops(t, s, getBlock(t, s, "S"))
				if err := s.ReverseComputeAt(getBlock(t, s, "R"), sl[0], true, -1); err != nil {
					t.Fatal(err)
				}
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				sl := getLoops(t, s, getBlock(t, s, "S"))
				return s.Reorder([]schedule.LoopRV{sl[2], sl[0]})
			}},
		// A block whose iter var is opaque may carry a dependence across
		// iterations (a scan, an in-place update): TVM refuses to reorder
		// loops above it, as it cannot show the order does not matter.
		{name: "across an opaque dependence", f: opaqueBlock, prim: "Reorder", err: []string{"opaque", "iter var vi"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				ls := getLoops(t, s, getBlock(t, s, "B"))
				return s.Reorder([]schedule.LoopRV{ls[1], ls[0]})
			}},
	})
}

func TestForKinds(t *testing.T) {
	loops := func(t *testing.T, s *schedule.Schedule) []schedule.LoopRV {
		return getLoops(t, s, getBlock(t, s, "T_matmul_NT"))
	}
	runCases(t, []primCase{
		{name: "bind spatial", f: dense, prim: "Bind",
			op: func(t *testing.T, s *schedule.Schedule) error {
				err := s.Bind(loops(t, s)[0], "blockIdx.x")
				if l := loopOf(t, s, loops(t, s)[0]); l.Kind != ir.ThreadBinding || l.Thread != "blockIdx.x" {
					t.Errorf("loop is %s %q", l.Kind, l.Thread)
				}
				return err
			}},
		{name: "bind reduction to threadIdx (cross-thread reduction)", f: dense, prim: "Bind",
			op: func(t *testing.T, s *schedule.Schedule) error { return s.Bind(loops(t, s)[2], "threadIdx.x") }},
		{name: "bind reduction to blockIdx", f: dense, prim: "Bind", err: []string{"cannot be bound to blockIdx.x", "iter var v_k", "reduce"},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.Bind(loops(t, s)[2], "blockIdx.x") }},
		{name: "bind unknown axis", f: dense, prim: "Bind", err: []string{`unknown thread axis "warp.x"`},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.Bind(loops(t, s)[0], "warp.x") }},
		{name: "bind over a decomposed update", f: dense, prim: "Bind", err: []string{"neither a complete block", "not compact"},
			setup: func(t *testing.T, s *schedule.Schedule) {
				must[schedule.BlockRV](t)(s.DecomposeReduction(getBlock(t, s, "T_matmul_NT"), loops(t, s)[2]))
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.Bind(getLoops(t, s, getBlock(t, s, "T_matmul_NT_update"))[0], "blockIdx.x")
			}},
		{name: "vectorize spatial", f: dense, prim: "Vectorize",
			op: func(t *testing.T, s *schedule.Schedule) error { return s.Vectorize(loops(t, s)[1]) }},
		{name: "vectorize reduction", f: dense, prim: "Vectorize", err: []string{"cannot be vectorized"},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.Vectorize(loops(t, s)[2]) }},
		{name: "parallel spatial", f: dense, prim: "Parallel",
			op: func(t *testing.T, s *schedule.Schedule) error { return s.Parallel(loops(t, s)[0]) }},
		{name: "parallel reduction", f: dense, prim: "Parallel", err: []string{"cannot be parallelized"},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.Parallel(loops(t, s)[2]) }},
		{name: "parallel over an opaque block", f: opaqueBlock, prim: "Parallel", err: []string{"neither a complete block"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				return s.Parallel(getLoops(t, s, getBlock(t, s, "B"))[0])
			}},
		{name: "unroll reduction", f: dense, prim: "Unroll",
			op: func(t *testing.T, s *schedule.Schedule) error { return s.Unroll(loops(t, s)[2]) }},
	})
}

func TestCacheStages(t *testing.T) {
	anchor := func(t *testing.T, s *schedule.Schedule) schedule.BlockRV { return getBlock(t, s, "T_matmul_NT") }
	runCases(t, []primCase{
		{name: "cache_read input", f: dense, prim: "CacheRead",
			op: func(t *testing.T, s *schedule.Schedule) error {
				b, err := s.CacheRead(anchor(t, s), 0, "shared", nil)
				if err == nil {
					blk := blockOf(t, s, b)
					if blk.Name != "p0_shared" || blk.Writes[0].Buffer.Scope() != "shared" {
						t.Errorf("cache stage %s writing %v", blk.Name, blk.Writes[0].Buffer)
					}
					if names := childNames(s.Func().Root()); !slices.Equal(names, []string{"p0_shared", "T_matmul_NT"}) {
						t.Errorf("root children %v", names)
					}
				}
				return err
			}},
		{name: "cache_read intermediate", f: conv1d, prim: "CacheRead",
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.CacheRead(getBlock(t, s, "conv1d_nlc"), 0, "local", nil)
				if names := childNames(s.Func().Root()); !slices.Equal(names, []string{"PadInput", "PadInput_local", "conv1d_nlc"}) {
					t.Errorf("root children %v", names)
				}
				return err
			}},
		{name: "cache_read for one consumer", f: chain, prim: "CacheRead",
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.CacheRead(getBlock(t, s, "D"), 0, "shared", []schedule.BlockRV{getBlock(t, s, "D")})
				return err
			}},
		{name: "cache_read twice", f: dense, prim: "CacheRead",
			op: func(t *testing.T, s *schedule.Schedule) error {
				if _, err := s.CacheRead(anchor(t, s), 0, "shared", nil); err != nil {
					return err
				}
				b, err := s.CacheRead(anchor(t, s), 0, "local", nil)
				if err == nil && blockOf(t, s, b).Name != "p0_shared_local" {
					t.Errorf("second stage named %s", blockOf(t, s, b).Name)
				}
				return err
			}},
		{name: "cache_read index out of range", f: dense, prim: "CacheRead", err: []string{"buffer index 2 is out of range", "reads 2 buffer(s)"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.CacheRead(anchor(t, s), 2, "shared", nil)
				return err
			}},
		{name: "cache_read bad scope", f: dense, prim: "CacheRead", err: []string{`invalid storage scope "texture"`},
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.CacheRead(anchor(t, s), 0, "texture", nil)
				return err
			}},
		{name: "cache_write output", f: dense, prim: "CacheWrite",
			op: func(t *testing.T, s *schedule.Schedule) error {
				b, err := s.CacheWrite(anchor(t, s), 0, "local", nil)
				if err == nil && blockOf(t, s, b).Name != "T_matmul_NT_local" {
					t.Errorf("cache stage %s", blockOf(t, s, b).Name)
				}
				if names := childNames(s.Func().Root()); !slices.Equal(names, []string{"T_matmul_NT", "T_matmul_NT_local"}) {
					t.Errorf("root children %v", names)
				}
				return err
			}},
		{name: "cache_write intermediate", f: chain, prim: "CacheWrite",
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.CacheWrite(getBlock(t, s, "C"), 0, "local", nil)
				if names := childNames(s.Func().Root()); !slices.Equal(names, []string{"B", "C", "C_local", "D"}) {
					t.Errorf("root children %v", names)
				}
				return err
			}},
		{name: "cache_write index out of range", f: dense, prim: "CacheWrite", err: []string{"buffer index 1 is out of range", "writes 1 buffer(s)"},
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.CacheWrite(anchor(t, s), 1, "local", nil)
				return err
			}},
		{name: "cache_write of a decomposed reduction", f: dense, prim: "CacheWrite", err: []string{"written by 2 blocks"},
			setup: func(t *testing.T, s *schedule.Schedule) {
				must[schedule.BlockRV](t)(s.DecomposeReduction(anchor(t, s), getLoops(t, s, anchor(t, s))[0]))
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				_, err := s.CacheWrite(getBlock(t, s, "T_matmul_NT_update"), 0, "local", nil)
				return err
			}},
		{name: "set_scope", f: dense, prim: "SetScope",
			setup: func(t *testing.T, s *schedule.Schedule) {
				must[schedule.BlockRV](t)(s.CacheWrite(anchor(t, s), 0, "local", nil))
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				err := s.SetScope(anchor(t, s), 0, "shared")
				if b := blockOf(t, s, anchor(t, s)); b.Writes[0].Buffer.Scope() != "shared" {
					t.Errorf("buffer %v", b.Writes[0].Buffer)
				}
				return err
			}},
		{name: "set_scope of a parameter", f: dense, prim: "SetScope", err: []string{"not allocated by a block"},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.SetScope(anchor(t, s), 0, "shared") }},
		{name: "storage_align", f: dense, prim: "StorageAlign",
			setup: func(t *testing.T, s *schedule.Schedule) {
				must[schedule.BlockRV](t)(s.CacheRead(anchor(t, s), 0, "shared", nil))
			},
			op: func(t *testing.T, s *schedule.Schedule) error {
				b := getBlock(t, s, "p0_shared")
				if err := s.StorageAlign(b, 0, -2, 32, 8); err != nil {
					return err
				}
				err := s.StorageAlign(b, 0, 0, 16, 4)
				if v, _ := blockOf(t, s, b).Annotations.Get(schedule.StorageAlignKey); annString(v) != "[[0 0 16 4]]" {
					t.Errorf("annotation %s", annString(v))
				}
				return err
			}},
		{name: "storage_align bad factor", f: dense, prim: "StorageAlign", err: []string{"factor 0 is not positive"},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.StorageAlign(anchor(t, s), 0, 0, 0, 0) }},
		{name: "storage_align bad axis", f: dense, prim: "StorageAlign", err: []string{"axis 2 is out of range", "want [-2, 2)"},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.StorageAlign(anchor(t, s), 0, 2, 32, 0) }},
		{name: "storage_align of a parameter", f: dense, prim: "StorageAlign", err: []string{"not allocated by a block"},
			op: func(t *testing.T, s *schedule.Schedule) error { return s.StorageAlign(anchor(t, s), 0, 0, 32, 0) }},
	})
}

func childNames(b *ir.Block) []string {
	var out []string
	for _, c := range ir.ChildBlocks(b) {
		out = append(out, c.Name)
	}
	return out
}

func annString(v ir.AnnValue) string {
	switch x := v.(type) {
	case ir.AnnArray:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = annString(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case ir.AnnInt:
		return strconv.FormatInt(int64(x), 10)
	}
	return "?"
}
