package arith_test

import (
	"testing"

	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// TestTightenByPredicate narrows the relaxed loop of an imperfect split
// (fused = o*128 + t, 128*1 >= 64 elements: t < 64 when o = 0) and leaves
// alone what it cannot solve.
func TestTightenByPredicate(t *testing.T) {
	o, tx, w := ir.NewVar("o", ir.Int32), ir.NewVar("t", ir.Int32), ir.NewVar("w", ir.Int32)
	cases := []struct {
		name string
		pred ir.Expr
		want string // the set of t after
	}{
		{"lt", ir.LT(ir.Add(ir.Mul(o, ir.Int(128)), tx), ir.Int(64)), "[0, 63]"},
		{"le", ir.LE(ir.Add(ir.Mul(o, ir.Int(128)), ir.Mul(tx, ir.Int(2))), ir.Int(63)), "[0, 31]"},
		{"and", ir.And(ir.LT(w, ir.Int(3)), ir.LT(tx, ir.Int(10))), "[0, 9]"},
		{"negative coefficient", ir.LT(ir.Sub(ir.Int(0), tx), ir.Int(64)), "[0, 127]"},
		{"not a comparison", ir.EQ(tx, ir.Int(3)), "[0, 127]"},
		{"nil", nil, "[0, 127]"},
		{"no tighter", ir.LT(tx, ir.Int(500)), "[0, 127]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := arith.NewAnalyzer()
			a.BindRange(o, 0, 1)
			a.BindRange(tx, 0, 128)
			dom := map[*ir.Var]arith.IntSet{tx: arith.RangeSet(0, 128), o: arith.RangeSet(0, 1)}
			a.TightenByPredicate(c.pred, dom)
			got := "[" + ir.ExprString(dom[tx].Min) + ", " + ir.ExprString(dom[tx].Max) + "]"
			if got != c.want {
				t.Errorf("t in %s, want %s", got, c.want)
			}
		})
	}
}
