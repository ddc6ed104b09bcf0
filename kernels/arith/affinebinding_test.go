package arith

import (
	"strings"
	"testing"

	"dragonx/kernels/ir"
)

// TestAffineBinding checks AffineBinding against what TVM's
// IsAffineBinding (DetectIterMap at the surjective level, then unit
// scales) decides for these bindings.
func TestAffineBinding(t *testing.T) {
	v := func(n string) *ir.Var { return ir.NewVar(n, ir.Int32) }
	c := ir.Int
	i, j, k, l, x, y, o := v("i"), v("j"), v("k"), v("l"), v("x"), v("y"), v("o")
	for _, tc := range []struct {
		name    string
		in      []ir.Expr
		iters   []LoopIter
		pred    ir.Expr
		decided bool
		refused string // part of the error, "" when affine
	}{
		{name: "loops as they are", iters: []LoopIter{{i, 128}, {j, 64}},
			in: []ir.Expr{i, j}, decided: true},
		{name: "no loops", in: []ir.Expr{ir.Mul(o, c(16))}, decided: true},
		{name: "a loop times 16 (test_reorder_fail_not_affine_bindings)", iters: []LoopIter{{i, 128}, {l, 8}},
			in: []ir.Expr{i, ir.Mul(l, c(16))}, decided: true, refused: "times 16"},
		{name: "a unit loop times 16", iters: []LoopIter{{i, 128}, {l, 1}},
			in: []ir.Expr{i, ir.Mul(l, c(16))}, decided: true},
		{name: "a split loop", iters: []LoopIter{{l, 8}, {k, 16}},
			in: []ir.Expr{ir.Add(ir.Mul(l, c(16)), k)}, decided: true},
		{name: "digits of a loop", iters: []LoopIter{{x, 8}},
			in: []ir.Expr{ir.FloorDiv(x, c(4)), ir.FloorMod(x, c(4))}, decided: true},
		{name: "an outer digit alone", iters: []LoopIter{{x, 24}},
			in: []ir.Expr{ir.FloorDiv(x, c(4))}, decided: true},
		{name: "a middle digit skipped", iters: []LoopIter{{y, 24}},
			in: []ir.Expr{ir.FloorDiv(y, c(6)), ir.FloorMod(y, c(2))}, decided: true},
		{name: "a loop used twice", iters: []LoopIter{{x, 8}},
			in: []ir.Expr{x, x}, decided: true, refused: "overlap"},
		{name: "overlapping digits", iters: []LoopIter{{x, 64}},
			in: []ir.Expr{ir.FloorDiv(x, c(4)), ir.FloorMod(ir.FloorDiv(x, c(4)), c(4))}, decided: true, refused: "overlap"},
		{name: "outer loop in the base", iters: []LoopIter{{l, 16}},
			in: []ir.Expr{ir.Add(l, ir.Mul(o, c(16)))}, decided: true},
		{name: "outer loop in the base, scaled iterator", iters: []LoopIter{{l, 8}},
			in: []ir.Expr{ir.Add(ir.Mul(l, c(16)), o)}, decided: true, refused: "times 16"},
		{name: "bounded by the predicate", iters: []LoopIter{{x, 4}, {y, 8}}, pred: ir.LT(ir.Add(ir.Mul(x, c(8)), y), c(30)),
			in: []ir.Expr{ir.Add(ir.Mul(x, c(8)), y)}, decided: true},
		{name: "padding is not covered", iters: []LoopIter{{x, 8}},
			in: []ir.Expr{ir.FloorDiv(x, c(3))}},
		{name: "outer loop under floordiv is not covered", iters: []LoopIter{{l, 8}},
			in: []ir.Expr{ir.FloorDiv(ir.Add(l, o), c(2))}},
		{name: "product of loops", iters: []LoopIter{{i, 8}, {j, 8}},
			in: []ir.Expr{ir.Mul(i, j)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAnalyzer()
			decided, err := a.AffineBinding(tc.in, tc.iters, tc.pred)
			if decided != tc.decided {
				t.Fatalf("decided = %v (err %v), want %v", decided, err, tc.decided)
			}
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused (%v), TVM accepts", err)
			case tc.refused != "" && err == nil:
				t.Errorf("accepted, TVM refuses")
			case tc.refused != "" && !strings.Contains(err.Error(), tc.refused):
				t.Errorf("error %q does not say %q", err, tc.refused)
			}
		})
	}
}
