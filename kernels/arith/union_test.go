package arith

import (
	"math/rand/v2"
	"testing"

	"dragonx/kernels/ir"
)

// TestUnionSameEnds checks Union and Intersect of sets whose ends are the
// same expression (built twice, so not the same pointers) against what
// Simplify makes of the min and max nodes themselves: simplifyMinMax
// skips the comparison of the two ends, and must come to the same
// expression.
func TestUnionSameEnds(t *testing.T) {
	v := newVars()
	vs := []*ir.Var{v.i, v.j, v.k, v.x}
	n := 3000
	if testing.Short() {
		n = 500
	}
	for iter := 0; iter < n; iter++ {
		p := randExpr(rand.New(rand.NewPCG(*seed, uint64(iter))), vs, 4)
		q := randExpr(rand.New(rand.NewPCG(*seed, uint64(iter))), vs, 4)
		if !ir.SameExpr(p, q) {
			t.Fatalf("the same generator made %s and %s", ir.ExprString(p), ir.ExprString(q))
		}
		a := NewAnalyzer()
		if iter%2 == 0 {
			for k, w := range vs[:3] {
				a.BindRange(w, 0, int64(k*3+iter%7+1))
			}
		}
		x, y := IntSet{p, p}, IntSet{q, q}
		u, in := a.Union(x, y), a.Intersect(x, y)
		for _, c := range []struct {
			what      string
			got, want ir.Expr
		}{
			{"Union min", u.Min, a.Simplify(ir.Min(p, q))},
			{"Union max", u.Max, a.Simplify(ir.Max(p, q))},
			{"Intersect min", in.Min, a.Simplify(ir.Max(p, q))},
			{"Intersect max", in.Max, a.Simplify(ir.Min(p, q))},
		} {
			if !ir.SameExpr(c.got, c.want) {
				t.Fatalf("%s of [%s, %s] with itself: %s, want %s", c.what, ir.ExprString(p), ir.ExprString(p), ir.ExprString(c.got), ir.ExprString(c.want))
			}
		}
	}
}
