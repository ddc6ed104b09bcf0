package arith

import (
	"slices"

	"dragonx/kernels/ir"
)

// TightenByPredicate narrows, in place, the sets dom gives the relaxed
// variables by the conjuncts of a block predicate of the form lhs < rhs or
// lhs <= rhs in which lhs - rhs is linear in those variables with positive
// coefficients (what Split makes of a factor that does not divide the
// extent), as TVM's buffer compaction narrows a relaxed region by the
// predicates it can solve. Each variable gets the upper bound that holds
// when every other term is at its least value, so the narrowed sets still
// cover every instance the predicate lets run. A nil predicate, or a
// conjunct of another form, narrows nothing.
//
// (kernels/analysis.CompactRegion applies it for both the lowering's
// allocations and VerifyGPUCode's shared-memory count.)
func (a *Analyzer) TightenByPredicate(pred ir.Expr, dom map[*ir.Var]IntSet) {
	if pred == nil {
		return
	}
	var conjuncts []ir.Expr
	var split func(e ir.Expr)
	split = func(e ir.Expr) {
		if b, ok := e.(*ir.Binary); ok && b.Op() == ir.OpAnd {
			split(b.A())
			split(b.B())
			return
		}
		conjuncts = append(conjuncts, e)
	}
	split(pred)
	for _, c := range conjuncts {
		b, ok := c.(*ir.Binary)
		if !ok || (b.Op() != ir.OpLT && b.Op() != ir.OpLE) || !b.A().DType().IsInt() || b.A().DType() != b.B().DType() {
			continue
		}
		slack := int64(0) // lhs - rhs <= slack
		if b.Op() == ir.OpLT {
			slack = -1
		}
		var vars []*ir.Var
		for _, v := range ir.CollectVars(b.A()) {
			if _, relaxed := dom[v]; relaxed && !slices.Contains(vars, v) {
				vars = append(vars, v)
			}
		}
		if len(vars) == 0 {
			continue
		}
		lin, ok := a.DetectLinear(ir.Sub(b.A(), b.B()), vars)
		if !ok || slices.ContainsFunc(lin.Coeffs, func(k int64) bool { return k <= 0 }) {
			continue
		}
		least := a.Bound(lin.Base).Min
		mins := make([]int64, len(vars))
		for i, v := range vars {
			mins[i] = a.Bound(dom[v].Min).Min
			if mins[i] == NegInf {
				least = NegInf
			}
		}
		if least == NegInf {
			continue
		}
		for i, k := range lin.Coeffs {
			least += k * mins[i]
		}
		for i, v := range vars {
			others := least - lin.Coeffs[i]*mins[i]
			hi := floorDiv(slack-others, lin.Coeffs[i])
			if hi < mins[i] || hi >= a.Bound(dom[v].Max).Max {
				continue
			}
			dom[v] = IntervalSet(dom[v].Min, ir.IntImmOf(v.DType(), hi))
		}
	}
}
