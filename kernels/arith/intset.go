package arith

import (
	"dragonx/kernels/ir"
)

// IntSet is a symbolic integer interval [Min, Max], both ends included, as
// TVM's arith::IntSet in interval form. The ends are expressions, so a set
// can depend on variables that were not relaxed: relaxing j in i*4 + j over
// [0, 3] gives [i*4, i*4 + 3]. A nil end is unbounded.
type IntSet struct {
	Min, Max ir.Expr
}

// SinglePoint is the set holding only e.
func SinglePoint(e ir.Expr) IntSet { return IntSet{e, e} }

// IntervalSet is [min, max].
func IntervalSet(min, max ir.Expr) IntSet { return IntSet{min, max} }

// RangeSet is the set of values of a loop over [min, min+extent).
func RangeSet(min, extent int64) IntSet {
	t := ir.LoopVarType(min + extent)
	return IntSet{ir.IntImmOf(t, min), ir.IntImmOf(t, min+extent-1)}
}

// BoundSet turns a constant Bound into a set (infinite ends become nil).
func BoundSet(b Bound, t ir.DType) IntSet {
	var s IntSet
	if b.Min != NegInf {
		s.Min = ir.IntImmOf(t, b.Min)
	}
	if b.Max != PosInf {
		s.Max = ir.IntImmOf(t, b.Max)
	}
	return s
}

// IsPoint reports whether the set's ends are the same expression.
func (s IntSet) IsPoint() bool { return s.Min != nil && s.Max != nil && ir.SameExpr(s.Min, s.Max) }

// Bounded reports whether both ends are known.
func (s IntSet) Bounded() bool { return s.Min != nil && s.Max != nil }

func (s IntSet) String() string {
	end := func(e ir.Expr, inf string) string {
		if e == nil {
			return inf
		}
		return ir.ExprString(e)
	}
	return "[" + end(s.Min, "-inf") + ", " + end(s.Max, "+inf") + "]"
}

// Union returns the smallest interval covering x and y (TVM's Union of
// interval sets): [min(x.Min, y.Min), max(x.Max, y.Max)], with the min and
// max decided where the analyzer can.
func (a *Analyzer) Union(x, y IntSet) IntSet {
	var s IntSet
	if x.Min != nil && y.Min != nil {
		s.Min = a.simplifyMinMax(ir.OpMin, x.Min, y.Min)
	}
	if x.Max != nil && y.Max != nil {
		s.Max = a.simplifyMinMax(ir.OpMax, x.Max, y.Max)
	}
	return s
}

// simplifyMinMax is Simplify(ir.NewBinary(op, p, q)) for op min or max.
// When p and q are the same integer expression (the ends of the sets of
// two accesses to one region, as often as not), it is what that Simplify
// comes to without the work it spends finding so: the canonical
// simplifier takes l = Simplify(p) and r = Simplify(q), the same
// expression, finds l - r = 0 (their terms cancel one by one), so picks l,
// and builds the expression of l's sum, fromSum(shallowSum(l)) (Simplify
// returns the min node itself only when it is that very expression).
func (a *Analyzer) simplifyMinMax(op ir.BinOp, p, q ir.Expr) ir.Expr {
	if !p.DType().IsInt() || !ir.SameExpr(p, q) {
		return a.Simplify(ir.NewBinary(op, p, q))
	}
	l := a.Simplify(p)
	defer a.release(a.mark())
	return a.fromSum(a.shallowSum(l))
}

// Intersect returns [max(x.Min, y.Min), min(x.Max, y.Max)]; it may be
// empty (Min > Max), which IsEmpty detects when the ends are comparable.
func (a *Analyzer) Intersect(x, y IntSet) IntSet {
	s := IntSet{Min: x.Min, Max: x.Max}
	switch {
	case x.Min == nil:
		s.Min = y.Min
	case y.Min != nil:
		s.Min = a.simplifyMinMax(ir.OpMax, x.Min, y.Min)
	}
	switch {
	case x.Max == nil:
		s.Max = y.Max
	case y.Max != nil:
		s.Max = a.simplifyMinMax(ir.OpMin, x.Max, y.Max)
	}
	return s
}

// IsEmpty reports whether s is provably empty.
func (a *Analyzer) IsEmpty(s IntSet) bool {
	if !s.Bounded() {
		return false
	}
	return a.CanProve(ir.LT(s.Max, s.Min))
}

// ToRange converts a bounded set into a region Range [Min, Max-Min+1].
func (a *Analyzer) ToRange(s IntSet) (ir.Range, bool) {
	if !s.Bounded() {
		return ir.Range{}, false
	}
	if ir.SameExpr(s.Max, s.Min) {
		// A point: what the simplifier makes of max - min + 1.
		return ir.Range{Min: s.Min, Extent: ir.IntImmOf(s.Min.DType(), 1)}, true
	}
	defer a.release(a.mark())
	if d, ok := a.binarySum(ir.OpSub, s.Max, s.Min); ok {
		d.c++ // max - min + 1, not built
		return ir.Range{Min: s.Min, Extent: a.fromSum(d)}, true
	}
	return ir.Range{Min: s.Min, Extent: a.Simplify(ir.Add(ir.Sub(s.Max, s.Min), ir.IntImmOf(s.Min.DType(), 1)))}, true
}

// RangeToSet converts a region Range into the set [Min, Min+Extent-1].
func (a *Analyzer) RangeToSet(r ir.Range) IntSet {
	if c, ok := ir.IsConstInt(r.Extent); ok && c == 1 {
		// min + 1 - 1 simplifies as min does.
		return IntSet{r.Min, a.Simplify(r.Min)}
	}
	defer a.release(a.mark())
	if s, ok := a.binarySum(ir.OpAdd, r.Min, r.Extent); ok {
		s.c-- // min + extent - 1, not built
		return IntSet{r.Min, a.fromSum(s)}
	}
	return IntSet{r.Min, a.Simplify(ir.Sub(ir.Add(r.Min, r.Extent), ir.IntImmOf(r.Min.DType(), 1)))}
}

// EvalSet returns the set of values e takes when each variable in dom
// ranges over its set, the other variables staying symbolic (TVM's
// arith::EvalSet, which region inference uses to relax the loops under a
// compute-at point). Linear terms are relaxed exactly; floordiv, floormod,
// min and max by their monotonicity; anything else through constant bounds.
// The ends are simplified.
func (a *Analyzer) EvalSet(e ir.Expr, dom map[*ir.Var]IntSet) IntSet {
	if !e.DType().IsInt() {
		return IntSet{}
	}
	if len(dom) == 0 || !ir.UsesVar(e, func(v *ir.Var) bool { _, ok := dom[v]; return ok }) {
		s := a.Simplify(e)
		return IntSet{s, s}
	}
	defer a.release(a.mark())
	s := a.toSum(e)
	t := s.t
	lo := sum{t: t, c: s.c, terms: a.newTerms(len(s.terms))}
	hi := sum{t: t, c: s.c, terms: a.newTerms(len(s.terms))}
	loInf, hiInf := false, false
	for _, tm := range s.terms {
		if !ir.UsesVar(tm.x, func(v *ir.Var) bool { _, ok := dom[v]; return ok }) {
			lo.addTerm(tm.k, tm.x)
			hi.addTerm(tm.k, tm.x)
			continue
		}
		var set IntSet
		if v, ok := tm.x.(*ir.Var); ok {
			set = a.relaxEnds(v, dom[v], dom)
		} else {
			set = a.evalAtomSet(tm.x, dom)
		}
		if tm.k < 0 {
			set = IntSet{set.Max, set.Min}
		}
		if set.Min == nil {
			loInf = true
		} else {
			a.addSumTo(&lo, a.shallowSum(set.Min), tm.k)
		}
		if set.Max == nil {
			hiInf = true
		} else {
			a.addSumTo(&hi, a.shallowSum(set.Max), tm.k)
		}
	}
	var out IntSet
	if !loInf {
		out.Min = a.fromSum(lo)
	}
	if !hiInf {
		out.Max = a.fromSum(hi)
	}
	return out
}

// relaxEnds relaxes the ends of a variable's set that use relaxed
// variables themselves (the set of a loop of symbolic extent, [0, e-1],
// where e uses an outer loop that is relaxed too), as TVM's EvalSet
// evaluates a mapped set recursively.
func (a *Analyzer) relaxEnds(self *ir.Var, set IntSet, dom map[*ir.Var]IntSet) IntSet {
	inDom := func(v *ir.Var) bool { _, ok := dom[v]; return ok && v != self }
	if set.Min != nil {
		if _, c := set.Min.(*ir.IntImm); !c && ir.UsesVar(set.Min, inDom) {
			set.Min = a.EvalSet(set.Min, dom).Min
		}
	}
	if set.Max != nil {
		if _, c := set.Max.(*ir.IntImm); !c && ir.UsesVar(set.Max, inDom) {
			set.Max = a.EvalSet(set.Max, dom).Max
		}
	}
	return set
}

// evalAtomSet relaxes one non-linear atom.
func (a *Analyzer) evalAtomSet(e ir.Expr, dom map[*ir.Var]IntSet) IntSet {
	if x, ok := e.(*ir.Binary); ok {
		c, cok := ir.IsConstInt(x.B())
		switch {
		case (x.Op() == ir.OpFloorDiv || x.Op() == ir.OpFloorMod) && cok && c > 0:
			if set, ok := a.evalDivModAligned(x.Op(), x.A(), c, dom); ok {
				return set
			}
			in := a.EvalSet(x.A(), dom)
			if x.Op() == ir.OpFloorDiv {
				// floordiv is monotone in its dividend.
				var out IntSet
				if in.Min != nil {
					out.Min = a.simplifyBinary(ir.OpFloorDiv, in.Min, x.B())
				}
				if in.Max != nil {
					out.Max = a.simplifyBinary(ir.OpFloorDiv, in.Max, x.B())
				}
				return out
			}
			if in.IsPoint() {
				p := a.simplifyBinary(ir.OpFloorMod, in.Min, x.B())
				return IntSet{p, p}
			}
			return BoundSet(a.boundFromSets(e, dom), e.DType())
		case x.Op() == ir.OpMin || x.Op() == ir.OpMax:
			l, r := a.EvalSet(x.A(), dom), a.EvalSet(x.B(), dom)
			var out IntSet
			f := ir.Min
			if x.Op() == ir.OpMax {
				f = ir.Max
			}
			if l.Min != nil && r.Min != nil {
				out.Min = a.Simplify(f(l.Min, r.Min))
			} else if x.Op() == ir.OpMax {
				out.Min = firstNonNil(l.Min, r.Min)
			}
			if l.Max != nil && r.Max != nil {
				out.Max = a.Simplify(f(l.Max, r.Max))
			} else if x.Op() == ir.OpMin {
				out.Max = firstNonNil(l.Max, r.Max)
			}
			return out
		}
	}
	return BoundSet(a.boundFromSets(e, dom), e.DType())
}

// evalDivModAligned relaxes floordiv(x, c) and floormod(x, c) when x is
// sym + rel, sym not using relaxed variables and rel using only them, and
// the relaxed part stays inside one multiple of g = gcd(c, coefficients of
// sym). Then sym mod c is a multiple of g, so adding rel never carries:
// floordiv is the point floordiv(sym + q*g, c) and floormod is
// floormod(sym + q*g, c) + [rel - q*g]. This is what makes region
// inference exact for split and fused loops (floormod(i*4 + j, 8) with j in
// [0, 3] covers [i%2*4, i%2*4 + 3]).
func (a *Analyzer) evalDivModAligned(op ir.BinOp, x ir.Expr, c int64, dom map[*ir.Var]IntSet) (IntSet, bool) {
	s := a.toSum(x)
	relaxed := func(v *ir.Var) bool { _, ok := dom[v]; return ok }
	sym := sum{t: s.t, terms: a.newTerms(len(s.terms))}
	rel := sum{t: s.t, c: s.c, terms: a.newTerms(len(s.terms))}
	g := c
	for _, tm := range s.terms {
		if ir.UsesVar(tm.x, relaxed) {
			rel.addTerm(tm.k, tm.x)
		} else {
			sym.addTerm(tm.k, tm.x)
			g = gcd(g, tm.k)
		}
	}
	if len(sym.terms) == 0 || len(rel.terms) == 0 || g <= 1 {
		return IntSet{}, false
	}
	relExpr := a.fromSum(rel)
	rb := a.boundFromSets(relExpr, dom)
	if !rb.Finite() || floorDiv(rb.Min, g) != floorDiv(rb.Max, g) {
		return IntSet{}, false
	}
	q := floorDiv(rb.Min, g)
	sym.c += q * g
	if op == ir.OpFloorDiv {
		p := a.fromSum(a.divSum(sym, c))
		return IntSet{p, p}, true
	}
	base := a.modSum(sym, c)
	rel.c -= q * g
	in := a.EvalSet(a.fromSum(rel), dom)
	if !in.Bounded() {
		return IntSet{}, false
	}
	lo, hi := a.clone(base), a.clone(base)
	a.addSumTo(&lo, a.shallowSum(in.Min), 1)
	a.addSumTo(&hi, a.shallowSum(in.Max), 1)
	return IntSet{a.fromSum(lo), a.fromSum(hi)}, true
}

func firstNonNil(x, y ir.Expr) ir.Expr {
	if x != nil {
		return x
	}
	return y
}

// boundFromSets bounds e with each relaxed variable it uses bounded by
// the constant bounds of its set's ends (taken before any is rebound).
// The variables of dom that e does not use are left alone: they cannot
// change its bound.
func (a *Analyzer) boundFromSets(e ir.Expr, dom map[*ir.Var]IntSet) Bound {
	type saved struct {
		v      *ir.Var
		b, old Bound
		had    bool
	}
	var buf [16]saved
	vs := buf[:0]
	ir.UsesVar(e, func(v *ir.Var) bool {
		s, ok := dom[v]
		if !ok {
			return false
		}
		for _, x := range vs {
			if x.v == v {
				return false
			}
		}
		b := Everything()
		if s.Min != nil {
			b.Min = a.Bound(s.Min).Min
		}
		if s.Max != nil {
			b.Max = a.Bound(s.Max).Max
		}
		vs = append(vs, saved{v: v, b: b})
		return false
	})
	for i := range vs {
		vs[i].old, vs[i].had = a.bounds[vs[i].v]
		a.bounds[vs[i].v] = vs[i].b
	}
	out := a.Bound(e)
	for _, o := range vs {
		if o.had {
			a.bounds[o.v] = o.old
		} else {
			delete(a.bounds, o.v)
		}
	}
	return out
}

// RelaxRegion returns the region covered by the point access idx when the
// variables of dom range over their sets: one Range per dimension. ok is
// false when a dimension is unbounded.
func (a *Analyzer) RelaxRegion(idx []ir.Expr, dom map[*ir.Var]IntSet) ([]ir.Range, bool) {
	out := make([]ir.Range, len(idx))
	for i, e := range idx {
		r, ok := a.ToRange(a.EvalSet(e, dom))
		if !ok {
			return nil, false
		}
		out[i] = r
	}
	return out, true
}
