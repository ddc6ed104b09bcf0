package arith

import (
	"fmt"
	"slices"

	"dragonx/kernels/ir"
)

// Linear is an expression written as Σ Coeffs[i]*Vars[i] + Base, where
// Base does not mention Vars.
type Linear struct {
	Vars   []*ir.Var
	Coeffs []int64
	Base   ir.Expr
}

// DetectLinear writes e as a linear function of vars, or reports false when
// e is not one (a var appears under floordiv, in a product, ...).
func (a *Analyzer) DetectLinear(e ir.Expr, vars []*ir.Var) (Linear, bool) {
	if !e.DType().IsInt() {
		return Linear{}, false
	}
	defer a.release(a.mark())
	s := a.toSum(e)
	out := Linear{Vars: vars, Coeffs: make([]int64, len(vars))}
	base := sum{t: s.t, c: s.c, terms: a.newTerms(len(s.terms))}
	for _, t := range s.terms {
		if v, ok := t.x.(*ir.Var); ok {
			if i := slices.Index(vars, v); i >= 0 {
				out.Coeffs[i] += t.k
				continue
			}
		}
		if ir.UsesVar(t.x, func(v *ir.Var) bool { return slices.Contains(vars, v) }) {
			return Linear{}, false
		}
		base.addTerm(t.k, t.x)
	}
	out.Base = a.fromSum(base)
	return out, true
}

// IterSplit is one mixed-radix digit of a loop variable, scaled:
// floormod(floordiv(Var, Lower), Extent) * Scale. Var must be bound in the
// analyzer to [0, n). This is TVM's IterSplitExpr.
type IterSplit struct {
	Var                  *ir.Var
	Lower, Extent, Scale int64
}

func (s IterSplit) String() string {
	return fmt.Sprintf("floormod(floordiv(%s, %d), %d)*%d", s.Var.Name(), s.Lower, s.Extent, s.Scale)
}

// IterSum is Σ Splits + Base: TVM's IterSumExpr, the shape of every block
// binding the schedule primitives produce (fused loops appear as several
// splits, split loops as scaled splits).
type IterSum struct {
	Splits []IterSplit
	Base   int64
}

// Bound is the range of values the sum takes.
func (s IterSum) Bound() Bound {
	b := Point(s.Base)
	for _, sp := range s.Splits {
		b = boundAdd(b, boundScale(Bound{0, sp.Extent - 1}, sp.Scale))
	}
	return b
}

// DetectIterSum writes e as an IterSum over variables whose bounds the
// analyzer knows to start at 0. It recognises v, floordiv(v, c),
// floormod(v, c), floordiv(floormod(v, a), b) (when b divides a) and
// floormod(floordiv(v, b), a), each with a constant coefficient, plus a
// constant. Digits of extent 1 (always 0) are dropped.
func (a *Analyzer) DetectIterSum(e ir.Expr) (IterSum, bool) {
	if !e.DType().IsInt() {
		return IterSum{}, false
	}
	defer a.release(a.mark())
	s := a.toSum(e)
	out := IterSum{Base: s.c}
	for _, t := range s.terms {
		sp, ok := a.split(t.x)
		if !ok {
			return IterSum{}, false
		}
		if sp.Extent <= 1 {
			continue
		}
		sp.Scale = t.k
		out.Splits = append(out.Splits, sp)
	}
	return out, true
}

// varExtent returns n when v is known to lie in [0, n).
func (a *Analyzer) varExtent(v *ir.Var) (int64, bool) {
	b, ok := a.bounds[v]
	if !ok || b.Min != 0 || b.Max == PosInf {
		return 0, false
	}
	return b.Max + 1, true
}

func ceilDiv(x, y int64) int64 { return (x + y - 1) / y }

func (a *Analyzer) split(e ir.Expr) (IterSplit, bool) {
	switch x := e.(type) {
	case *ir.Var:
		n, ok := a.varExtent(x)
		return IterSplit{Var: x, Lower: 1, Extent: n}, ok
	case *ir.Binary:
		c, ok := ir.IsConstInt(x.B())
		if !ok || c <= 0 {
			return IterSplit{}, false
		}
		inner, ok := a.split(x.A())
		if !ok {
			return IterSplit{}, false
		}
		n, _ := a.varExtent(inner.Var)
		// A digit that reaches the top of its variable may be cut anywhere;
		// an inner digit only at divisors of its extent.
		top := inner.Lower*inner.Extent >= n
		switch x.Op() {
		case ir.OpFloorDiv:
			if !top && inner.Extent%c != 0 {
				return IterSplit{}, false
			}
			return IterSplit{Var: inner.Var, Lower: inner.Lower * c, Extent: ceilDiv(inner.Extent, c)}, true
		case ir.OpFloorMod:
			if c >= inner.Extent {
				return inner, true
			}
			if !top && inner.Extent%c != 0 {
				return IterSplit{}, false
			}
			return IterSplit{Var: inner.Var, Lower: inner.Lower, Extent: c}, true
		}
	}
	return IterSplit{}, false
}

// CheckAffineBinding reports why values (block iter values, as functions of
// the loop vars bound in the analyzer) are not an affine binding, or nil
// when they are: every value is an IterSum; no digit of a loop variable is
// used twice (in one value or across values); and within each value the
// digits, ordered by scale, do not overlap (scale[i+1] >= scale[i] *
// extent[i]), so that each value is an injective function of its digits.
// This is the condition TVM's schedule primitives ask of bindings before
// compute-at, reverse-compute-at and cache stages.
func (a *Analyzer) CheckAffineBinding(values []ir.Expr) error {
	type digit struct{ lo, hi int64 } // [lo, hi) in units of the var
	used := map[*ir.Var][]digit{}
	for i, v := range values {
		s, ok := a.DetectIterSum(v)
		if !ok {
			return fmt.Errorf("kernels: binding %d (%s) is not a sum of loop-variable digits", i, ir.ExprString(v))
		}
		for _, sp := range s.Splits {
			n, _ := a.varExtent(sp.Var)
			d := digit{sp.Lower, min(sp.Lower*sp.Extent, max(n, sp.Lower))}
			for _, o := range used[sp.Var] {
				if d.lo < o.hi && o.lo < d.hi {
					return fmt.Errorf("kernels: binding %d (%s) reuses part of loop variable %s", i, ir.ExprString(v), sp.Var.Name())
				}
			}
			used[sp.Var] = append(used[sp.Var], d)
		}
		sorted := slices.Clone(s.Splits)
		slices.SortFunc(sorted, func(x, y IterSplit) int {
			switch {
			case x.Scale < y.Scale:
				return -1
			case x.Scale > y.Scale:
				return 1
			}
			return 0
		})
		for j, sp := range sorted {
			if sp.Scale <= 0 {
				return fmt.Errorf("kernels: binding %d (%s) has a non-positive scale", i, ir.ExprString(v))
			}
			if j+1 < len(sorted) && sorted[j+1].Scale < sp.Scale*sp.Extent {
				return fmt.Errorf("kernels: binding %d (%s) is not injective: digits overlap", i, ir.ExprString(v))
			}
		}
	}
	return nil
}
