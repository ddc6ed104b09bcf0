package schedule_test

import (
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
)

// The primitives on and under a loop of symbolic extent, as TVM's
// loop_transformation.cc and sampling.cc treat it: the triangular copy has
// for i in range(4): for j, k in T.grid(i + 1, 2).

func triangular(t *testing.T) (*ir.PrimFunc, *schedule.Schedule, []schedule.LoopRV) {
	t.Helper()
	base := fixtures.Triangular(4, 1)
	s := newSched(base.Clone())
	return base, s, getLoops(t, s, getBlock(t, s, "B"))
}

func TestSplitSymbolicExtent(t *testing.T) {
	t.Run("inferred factor", func(t *testing.T) {
		base, s, ls := triangular(t)
		out := must[[]schedule.LoopRV](t)(s.Split(ls[1], []int64{schedule.Infer, 2}, true, false))
		if got := ir.ExprString(loopOf(t, s, out[0]).ExtentExpr()); got != "i // 2 + 1" {
			t.Errorf("inferred extent %s, want i // 2 + 1", got)
		}
		if !strings.Contains(s.Func().Script(), "T.where(j_0 * 2 + j_1 < i + 1)") {
			t.Errorf("no predicate:\n%s", s.Func().Script())
		}
		checkSame(t, base, s.Func())
	})
	t.Run("factors covering the largest extent", func(t *testing.T) {
		base, s, ls := triangular(t)
		must[[]schedule.LoopRV](t)(s.Split(ls[1], []int64{2, 2}, true, false))
		checkSame(t, base, s.Func())
	})
	t.Run("unit factor", func(t *testing.T) {
		// TVM builds the value as value * factor + var with tvm::mul,
		// which folds a factor 1: j_0 + j_1, not T.Mul(j_0, 1) + j_1.
		base, s, ls := triangular(t)
		must[[]schedule.LoopRV](t)(s.Split(ls[1], []int64{schedule.Infer, 1}, true, false))
		if script := s.Func().Script(); !strings.Contains(script, "vj = T.axis.spatial(4, j_0 + j_1)") {
			t.Errorf("binding not j_0 + j_1:\n%s", script)
		}
		checkSame(t, base, s.Func())
	})
	t.Run("factors that may not cover it", func(t *testing.T) {
		_, s, ls := triangular(t)
		_, err := s.Split(ls[1], []int64{1, 2}, true, false)
		wantError(t, err, "Split", "cannot be shown to cover the extent i + 1")
	})
}

func TestFuseSymbolicExtent(t *testing.T) {
	base, s, ls := triangular(t)
	_, err := s.Fuse(ls[:2], true)
	wantError(t, err, "Fuse", "its extent i + 1 depends on the loop i")
	f := must[schedule.LoopRV](t)(s.Fuse(ls[1:], true))
	if got := ir.ExprString(loopOf(t, s, f).ExtentExpr()); got != "i * 2 + 2" {
		t.Errorf("fused extent %s, want i * 2 + 2", got)
	}
	checkSame(t, base, s.Func())
}

func TestReorderSymbolicExtent(t *testing.T) {
	_, s, ls := triangular(t)
	err := s.Reorder([]schedule.LoopRV{ls[1], ls[0]})
	wantError(t, err, "Reorder", "loop j, whose extent i + 1 depends on loop i")
	base, s, ls := triangular(t)
	must[struct{}](t)(struct{}{}, s.Reorder([]schedule.LoopRV{ls[2], ls[1]}))
	checkSame(t, base, s.Func())
}

func TestSampleAndBindSymbolicExtent(t *testing.T) {
	_, s, ls := triangular(t)
	// TVM's case 1: a non-constant extent gives [-1, 1, ...] whatever
	// the decision.
	_, tiles, err := s.SamplePerfectTile(ls[1], 3, 64, []int64{2, 2, 1})
	if err != nil || !slices.Equal(tiles, []int64{-1, 1, 1}) {
		t.Errorf("SamplePerfectTile = %v, %v; want [-1 1 1]", tiles, err)
	}
	wantError(t, s.Bind(ls[1], "threadIdx.x"), "Bind", "its extent i + 1 is not a constant")
}
