package schedule

import (
	"math/rand"
	"strconv"
	"testing"

	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// TestSplitValueMatchesSimplify checks Split's fast path against what it
// replaces: the simplifier run on the split value, unit loops substituted
// by 0 unless they are preserved.
func TestSplitValueMatchesSimplify(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	extents := []int64{1, 1, 2, 3, 4, 7, 8, 16, 64, 1000, 5000}
	for range 5000 {
		dt := ir.Int32
		if r.Intn(2) == 0 {
			dt = ir.Int64
		}
		n := 1 + r.Intn(5)
		fs := make([]int64, n)
		vars := make([]*ir.Var, n)
		var value ir.Expr
		for i := range fs {
			fs[i] = extents[r.Intn(len(extents))]
			vars[i] = ir.NewVar("v"+strconv.Itoa(i), dt)
			if value == nil {
				value = vars[i]
			} else {
				value = ir.Add(ir.Mul(value, ir.IntImmOf(dt, fs[i])), vars[i])
			}
		}
		for _, preserve := range []bool{false, true} {
			a := arith.NewAnalyzer()
			unit := map[*ir.Var]ir.Expr{}
			for i, v := range vars {
				a.BindRange(v, 0, fs[i])
				if fs[i] == 1 && !preserve {
					unit[v] = ir.IntImmOf(dt, 0)
				}
			}
			want := a.Simplify(ir.SubstituteMap(value, unit))
			got := splitValue(vars, fs, preserve)
			if !ir.SameExpr(want, got) || want.DType() != got.DType() {
				t.Fatalf("factors %v, preserve %v: got %s (%s), want %s (%s)", fs, preserve,
					ir.ExprString(got), got.DType(), ir.ExprString(want), want.DType())
			}
		}
	}
}
