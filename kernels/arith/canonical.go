package arith

import (
	"slices"

	"dragonx/kernels/ir"
)

// term is coefficient*atom; an atom is any integer expression that is not a
// sum: a variable, floordiv/floormod by a constant, min, max, a product of
// two non-constants, a load, ...
type term struct {
	k int64
	x ir.Expr
}

// sum is the canonical form of an integer expression: Σ terms + c.
type sum struct {
	terms []term
	c     int64
	t     ir.DType
}

func (s *sum) isConst() bool { return len(s.terms) == 0 }

func (s *sum) addTerm(k int64, x ir.Expr) {
	if k == 0 {
		return
	}
	for i := range s.terms {
		if ir.SameExpr(s.terms[i].x, x) {
			s.terms[i].k += k
			if s.terms[i].k == 0 {
				s.terms = slices.Delete(s.terms, i, i+1)
			}
			return
		}
	}
	s.terms = append(s.terms, term{k, x})
}

func (s *sum) addSum(o sum, k int64) {
	for _, t := range o.terms {
		s.addTerm(t.k*k, t.x)
	}
	s.c += o.c * k
}

// addSumTo is s.addSum(o, k) with room for o's terms made in s first,
// from the analyzer's chunk (see reserve).
func (a *Analyzer) addSumTo(s *sum, o sum, k int64) {
	a.reserve(s, len(o.terms))
	s.addSum(o, k)
}

// scaled returns k*s in a new term list.
func (a *Analyzer) scaled(s sum, k int64) sum {
	if k == 0 {
		return sum{t: s.t}
	}
	out := sum{terms: a.newTerms(len(s.terms))[:len(s.terms)], c: s.c * k, t: s.t}
	for i, t := range s.terms {
		out.terms[i] = term{t.k * k, t.x}
	}
	return out
}

// clone returns a copy of s with its own term list.
func (a *Analyzer) clone(s sum) sum {
	s.terms = append(a.newTerms(len(s.terms)), s.terms...)
	return s
}

// scaleInPlace multiplies s by k, reusing its term list (which the caller
// owns).
func (s sum) scaleInPlace(k int64) sum {
	if k == 0 {
		return sum{t: s.t}
	}
	for i := range s.terms {
		s.terms[i].k *= k
	}
	s.c *= k
	return s
}

func (a *Analyzer) atom(x ir.Expr) sum {
	return a.single(1, x, x.DType())
}

// single is the sum k*x of dtype t.
func (a *Analyzer) single(k int64, x ir.Expr, t ir.DType) sum {
	ts := a.newTerms(1)
	ts = append(ts, term{k, x})
	return sum{terms: ts, t: t}
}

// newTerms returns an empty term list with room for n terms, carved from
// a chunk that the analyzer only ever appends to: one allocation for many
// of the short lists that canonical sums are built in. The list is the
// caller's: its capacity ends where the next list starts, so that growing
// it past n reallocates instead of running into its neighbour.
func (a *Analyzer) newTerms(n int) []term {
	if cap(a.chunk)-len(a.chunk) < n {
		// A small first chunk: many analyzers answer a few questions only.
		size := 16
		if a.chunk != nil {
			size = min(max(64, 2*cap(a.chunk)), 512)
		}
		a.chunk = make([]term, 0, max(size, n))
		a.gen++
	}
	i := len(a.chunk)
	a.chunk = a.chunk[:i+n]
	return a.chunk[i : i : i+n]
}

// A chunkMark is where the analyzer's chunk stood when a call began.
type chunkMark struct{ len, gen int }

// mark and release bracket a call that builds canonical sums and returns
// none of them (Simplify, Bound, EvalSet: sums never leave the package's
// unexported functions): release hands back the terms the call took from
// the chunk, so that the next call reuses them. Terms taken before the
// mark stay, the lists of callers up the stack among them; a chunk
// allocated since the mark holds only the call's own terms and is handed
// back whole.
func (a *Analyzer) mark() chunkMark { return chunkMark{len(a.chunk), a.gen} }

func (a *Analyzer) release(m chunkMark) {
	if a.gen == m.gen {
		a.chunk = a.chunk[:m.len]
	} else {
		a.chunk = a.chunk[:0]
	}
}

// toSum puts an integer expression in canonical form; atoms come out
// simplified.
func (a *Analyzer) toSum(e ir.Expr) sum {
	t := e.DType()
	switch x := e.(type) {
	case *ir.IntImm:
		return sum{c: x.Value(), t: t}
	case *ir.Var:
		return a.single(1, x, t)
	case *ir.Binary:
		switch x.Op() {
		case ir.OpAdd, ir.OpSub:
			return a.addSub(x.Op(), x.A(), x.B(), t)
		case ir.OpMul:
			// toSum's results are fresh: scale them in place.
			sa, sb := a.toSum(x.A()), a.toSum(x.B())
			switch {
			case sb.isConst():
				return sa.scaleInPlace(sb.c)
			case sa.isConst():
				return sb.scaleInPlace(sa.c)
			}
			if sameOperands(x) && a.sumIs(sa, x.A()) && a.sumIs(sb, x.B()) {
				return a.atom(x) // already in canonical form
			}
			return a.atom(ir.Mul(a.fromSum(sa), a.fromSum(sb)))
		case ir.OpFloorDiv, ir.OpFloorMod, ir.OpDiv, ir.OpMod:
			sa, sb := a.toSum(x.A()), a.toSum(x.B())
			op := x.Op()
			if sb.isConst() && sb.c > 0 && (op == ir.OpDiv || op == ir.OpMod) && a.boundSum(sa).Min >= 0 {
				// Truncating and flooring division agree on non-negative operands.
				if op == ir.OpDiv {
					op = ir.OpFloorDiv
				} else {
					op = ir.OpFloorMod
				}
			}
			if sb.isConst() && sb.c != 0 {
				switch op {
				case ir.OpFloorDiv:
					return a.divSumOf(sa, sb.c, x)
				case ir.OpFloorMod:
					return a.modSumOf(sa, sb.c, x)
				case ir.OpDiv:
					if sa.isConst() {
						return sum{c: sa.c / sb.c, t: t}
					}
				case ir.OpMod:
					if sa.isConst() {
						return sum{c: sa.c % sb.c, t: t}
					}
				}
			}
			if op == x.Op() && sameOperands(x) && a.sumIs(sa, x.A()) && a.sumIs(sb, x.B()) {
				return a.atom(x) // already in canonical form
			}
			return a.atom(ir.NewBinary(op, a.fromSum(sa), a.fromSum(sb)))
		case ir.OpMin, ir.OpMax:
			return a.minMaxOf(x.Op(), a.Simplify(x.A()), a.Simplify(x.B()), x)
		}
	case *ir.Cast:
		if x.A().DType().IsInt() {
			inner := a.toSum(x.A())
			if inner.isConst() {
				return sum{c: inner.c, t: t}
			}
			if x.A().DType() != t && a.sumIs(inner, x.A()) {
				return a.atom(x) // already in canonical form
			}
			return a.atom(ir.CastTo(t, a.fromSum(inner)))
		}
		v := a.simplifyOther(x)
		if c, ok := v.(*ir.IntImm); ok {
			return sum{c: c.Value(), t: t}
		}
		return a.atom(v)
	}
	v := a.simplifyOther(e)
	if c, ok := v.(*ir.IntImm); ok {
		return sum{c: c.Value(), t: t}
	}
	return a.atom(v)
}

// addSub is toSum(x + y) (op OpAdd) or toSum(x - y) (op OpSub) for x and
// y of dtype t, without building x op y.
func (a *Analyzer) addSub(op ir.BinOp, x, y ir.Expr, t ir.DType) sum {
	var s sum
	if isLinearLeaf(x) {
		// The leftmost operand of a chain of sums: room for the
		// terms the chain adds.
		s.terms = a.newTerms(4)
		a.addTo(&s, x, 1)
	} else {
		s = a.toSum(x)
	}
	k := int64(1)
	if op == ir.OpSub {
		k = -1
	}
	a.addTo(&s, y, k)
	s.t = t
	return s
}

// binarySum is toSum(ir.NewBinary(op, x, y)) for op +, - and, with a
// constant y != 0, floordiv and floormod, without building the operation
// when x and y are integers of one dtype (ok false otherwise: the caller
// builds it).
func (a *Analyzer) binarySum(op ir.BinOp, x, y ir.Expr) (s sum, ok bool) {
	t := x.DType()
	if !t.IsInt() || y.DType() != t {
		return sum{}, false
	}
	switch op {
	case ir.OpAdd, ir.OpSub:
		return a.addSub(op, x, y, t), true
	case ir.OpFloorDiv, ir.OpFloorMod:
		c, isConst := y.(*ir.IntImm)
		if !isConst || c.Value() == 0 {
			break
		}
		if op == ir.OpFloorDiv {
			return a.divSum(a.toSum(x), c.Value()), true
		}
		return a.modSum(a.toSum(x), c.Value()), true
	}
	return sum{}, false
}

// simplifyBinary is Simplify(ir.NewBinary(op, x, y)), without building
// the operation where binarySum can.
func (a *Analyzer) simplifyBinary(op ir.BinOp, x, y ir.Expr) ir.Expr {
	if s, ok := a.binarySum(op, x, y); ok {
		return a.fromSum(s)
	}
	return a.Simplify(ir.NewBinary(op, x, y))
}

// linearLeaf splits e into c*v + d when it is a constant (v nil), a
// variable or a constant multiple of a variable: most operands of index
// expressions, whose sums need no building.
func linearLeaf(e ir.Expr) (c int64, v *ir.Var, d int64, ok bool) {
	switch x := e.(type) {
	case *ir.IntImm:
		return 0, nil, x.Value(), true
	case *ir.Var:
		return 1, x, 0, true
	case *ir.Binary:
		if x.Op() != ir.OpMul {
			break
		}
		if v, ok := x.A().(*ir.Var); ok {
			if c, ok := x.B().(*ir.IntImm); ok {
				return c.Value(), v, 0, true
			}
		}
		if c, ok := x.A().(*ir.IntImm); ok {
			if v, ok := x.B().(*ir.Var); ok {
				return c.Value(), v, 0, true
			}
		}
	}
	return 0, nil, 0, false
}

func isLinearLeaf(e ir.Expr) bool {
	_, _, _, ok := linearLeaf(e)
	return ok
}

// addTo adds k*e to s: s.addSum(a.toSum(e), k), without building a sum
// for a linear leaf (see linearLeaf).
func (a *Analyzer) addTo(s *sum, e ir.Expr, k int64) {
	c, v, d, ok := linearLeaf(e)
	if !ok {
		o := a.toSum(e)
		a.reserve(s, len(o.terms))
		s.addSum(o, k)
		return
	}
	if v != nil {
		a.reserve(s, 1)
		s.addTerm(c*k, v)
	}
	s.c += d * k
}

// reserve makes room in s, which the caller owns, for n more terms, from
// the analyzer's chunk (see newTerms) rather than by append's regrowth.
func (a *Analyzer) reserve(s *sum, n int) {
	if cap(s.terms)-len(s.terms) >= n {
		return
	}
	ts := a.newTerms(len(s.terms) + max(n, 4))
	s.terms = append(ts, s.terms...)
}

// shallowSum decomposes an expression that is already simplified: only
// sums, constant multiples, constants and variables are opened, anything
// else is taken as an atom as it is. Re-simplifying simplified operands at
// every level would make nested min/max exponential.
func (a *Analyzer) shallowSum(e ir.Expr) sum {
	t := e.DType()
	switch x := e.(type) {
	case *ir.IntImm:
		return sum{c: x.Value(), t: t}
	case *ir.Binary:
		switch x.Op() {
		case ir.OpAdd, ir.OpSub:
			s := a.shallowSum(x.A())
			k := int64(1)
			if x.Op() == ir.OpSub {
				k = -1
			}
			a.addSumTo(&s, a.shallowSum(x.B()), k)
			s.t = t
			return s
		case ir.OpMul:
			if c, ok := ir.IsConstInt(x.B()); ok {
				return a.scaled(a.shallowSum(x.A()), c)
			}
			if c, ok := ir.IsConstInt(x.A()); ok {
				return a.scaled(a.shallowSum(x.B()), c)
			}
		}
	}
	return a.single(1, e, t)
}

// boundSimplified bounds an expression that is already simplified.
func (a *Analyzer) boundSimplified(e ir.Expr) Bound {
	if !e.DType().IsInt() {
		return a.Bound(e)
	}
	return a.boundSum(a.shallowSum(e))
}

func (a *Analyzer) minMax(op ir.BinOp, l, r ir.Expr) sum {
	return a.minMaxOf(op, l, r, nil)
}

// minMaxOf is minMax for orig, min or max of operands that simplify to l
// and r; orig is the atom when it is l op r already (nil: none).
func (a *Analyzer) minMaxOf(op ir.BinOp, l, r ir.Expr, orig *ir.Binary) sum {
	t := l.DType()
	ds := a.shallowSum(l)
	a.addSumTo(&ds, a.shallowSum(r), -1)
	d := a.boundSum(ds)
	pickLeft := op == ir.OpMin && d.Max <= 0 || op == ir.OpMax && d.Min >= 0
	pickRight := op == ir.OpMin && d.Min >= 0 || op == ir.OpMax && d.Max <= 0
	switch {
	case pickLeft:
		return a.shallowSum(l)
	case pickRight:
		return a.shallowSum(r)
	}
	var x ir.Expr
	if orig != nil && orig.Op() == op && orig.A() == l && orig.B() == r && sameOperands(orig) {
		x = orig // already in canonical form
	} else {
		x = ir.NewBinary(op, l, r)
	}
	s := a.atom(x)
	s.t = t
	return s
}

func gcd(x, y int64) int64 {
	if x < 0 {
		x = -x
	}
	if y < 0 {
		y = -y
	}
	for y != 0 {
		x, y = y, x%y
	}
	return x
}

// commonFactor is the gcd of c and every coefficient and the constant of s.
func commonFactor(s sum, c int64) int64 {
	g := gcd(c, s.c)
	for _, t := range s.terms {
		g = gcd(g, t.k)
		if g == 1 {
			break
		}
	}
	return g
}

func (a *Analyzer) divExact(s sum, g int64) sum {
	out := sum{terms: a.newTerms(len(s.terms))[:len(s.terms)], c: s.c / g, t: s.t}
	for i, t := range s.terms {
		out.terms[i] = term{t.k / g, t.x}
	}
	return out
}

// divSum is the canonical form of floordiv(s, c) for a constant c != 0.
// It uses floordiv(c*q + r, c) = q + floordiv(r, c), which holds for any
// integer q, and removes floordiv(r, c) when r's bounds lie within one
// multiple of c.
func (a *Analyzer) divSum(s sum, c int64) sum { return a.divSumOf(s, c, nil) }

// divSumOf is divSum for orig, floordiv of an expression whose canonical
// form is s by c (nil: none), which is reused as the floordiv atom of the
// result when it is that atom already.
func (a *Analyzer) divSumOf(s sum, c int64, orig *ir.Binary) sum {
	if s.isConst() {
		return sum{c: floorDiv(s.c, c), t: s.t}
	}
	if c < 0 {
		return a.atom(a.divModAtom(ir.OpFloorDiv, s, c, orig))
	}
	if c == 1 {
		return s
	}
	whole, wholeC := s, c
	if g := commonFactor(s, c); g > 1 {
		s, c = a.divExact(s, g), c/g
		if c == 1 {
			return s
		}
	}
	q := sum{t: s.t, c: floorDiv(s.c, c), terms: a.newTerms(len(s.terms) + 1)}
	r := sum{t: s.t, c: floorMod(s.c, c), terms: a.newTerms(len(s.terms))}
	for _, t := range s.terms {
		if t.k%c == 0 {
			q.addTerm(t.k/c, t.x)
		} else {
			r.addTerm(t.k, t.x)
		}
	}
	if r.isConst() {
		return q // 0 <= r.c < c
	}
	if b := a.boundSum(r); b.Finite() && floorDiv(b.Min, c) == floorDiv(b.Max, c) {
		q.c += floorDiv(b.Min, c)
		return q
	}
	if d, ok := a.divResidue(whole, wholeC); ok {
		return d
	}
	// floordiv(floordiv(x, d), c) = floordiv(x, d*c) for positive d, c.
	if len(r.terms) == 1 && r.terms[0].k == 1 && r.c == 0 {
		if in, ok := r.terms[0].x.(*ir.Binary); ok && in.Op() == ir.OpFloorDiv {
			if d, ok := ir.IsConstInt(in.B()); ok && d > 0 && d <= PosInf/c {
				a.addSumTo(&q, a.divSum(a.shallowSum(in.A()), d*c), 1)
				return q
			}
		}
	}
	q.addTerm(1, a.divModAtom(ir.OpFloorDiv, r, c, orig))
	return q
}

// divResidue is TVM's rewrite rule for floordiv(x*c1 + y, c2), c2 > 0,
// on every term: with c1 = c2*(c1 // c2) + c1 % c2, the quotient is
// x*(c1 // c2) + floordiv(x*(c1 % c2) + y % c2, c2) + y // c2, and the
// floordiv is a constant when its bounds lie within one multiple of c2
// (c_o*360 // 16 is c_o*22 for c_o in [0, 2), where the gcd form
// c_o*45 // 2 stays). ok is false when the residue is not a constant.
func (a *Analyzer) divResidue(s sum, c int64) (sum, bool) {
	// The residue's bound first: most sums fail here, with no allocation.
	b := Point(floorMod(s.c, c))
	for _, t := range s.terms {
		if k := floorMod(t.k, c); k != 0 {
			b = boundAdd(b, boundScale(a.boundAtom(t.x), k))
		}
	}
	if !b.Finite() || floorDiv(b.Min, c) != floorDiv(b.Max, c) {
		return sum{}, false
	}
	q := sum{t: s.t, c: floorDiv(s.c, c) + floorDiv(b.Min, c), terms: a.newTerms(len(s.terms))}
	for _, t := range s.terms {
		if k := floorDiv(t.k, c); k != 0 {
			q.addTerm(k, t.x)
		}
	}
	return q, true
}

// modSum is the canonical form of floormod(s, c) for a constant c != 0.
func (a *Analyzer) modSum(s sum, c int64) sum { return a.modSumOf(s, c, nil) }

// modSumOf is modSum for orig, floormod of an expression whose canonical
// form is s by c (nil: none), which is reused as the result when it is
// the floormod atom the result would be built as.
func (a *Analyzer) modSumOf(s sum, c int64, orig *ir.Binary) sum {
	if s.isConst() {
		return sum{c: floorMod(s.c, c), t: s.t}
	}
	if c < 0 {
		return a.atom(a.divModAtom(ir.OpFloorMod, s, c, orig))
	}
	if c == 1 {
		return sum{t: s.t}
	}
	// Multiples of c do not change the remainder.
	r := sum{t: s.t, c: floorMod(s.c, c), terms: a.newTerms(len(s.terms))}
	for _, t := range s.terms {
		r.addTerm(floorMod(t.k, c), t.x)
	}
	if r.isConst() {
		return r
	}
	// floormod(g*x, g*c) = g*floormod(x, c).
	if g := commonFactor(r, c); g > 1 {
		return a.scaled(a.modSum(a.divExact(r, g), c/g), g)
	}
	if b := a.boundSum(r); b.Finite() && floorDiv(b.Min, c) == floorDiv(b.Max, c) {
		r.c -= c * floorDiv(b.Min, c)
		return r
	}
	// floormod(floormod(x, d), c) = floormod(x, c) when c divides d.
	if len(r.terms) == 1 && r.terms[0].k == 1 && r.c == 0 {
		if in, ok := r.terms[0].x.(*ir.Binary); ok && in.Op() == ir.OpFloorMod {
			if d, ok := ir.IsConstInt(in.B()); ok && d > 0 && d%c == 0 {
				return a.modSum(a.shallowSum(in.A()), c)
			}
		}
	}
	return a.atom(a.divModAtom(ir.OpFloorMod, r, c, orig))
}

// divModAtom is op(fromSum(r), c) for op floordiv or floormod: orig when
// it is that expression already, built otherwise.
func (a *Analyzer) divModAtom(op ir.BinOp, r sum, c int64, orig *ir.Binary) ir.Expr {
	if orig != nil && orig.Op() == op && isImm(orig.B(), r.t, c) && orig.A().DType() == r.t && a.sumIs(r, orig.A()) {
		return orig
	}
	if op == ir.OpFloorDiv {
		return ir.FloorDiv(a.fromSum(r), ir.IntImmOf(r.t, c))
	}
	return ir.FloorMod(a.fromSum(r), ir.IntImmOf(r.t, c))
}

// needsFuse reports whether a sum has a floormod term, or floordiv-by-2
// terms of opposite signs, which fuseDivMod and fuseHalves may rewrite.
func needsFuse(ts []term) bool {
	pos, neg := false, false
	for _, t := range ts {
		if m, ok := t.x.(*ir.Binary); ok {
			switch m.Op() {
			case ir.OpFloorMod:
				return true
			case ir.OpFloorDiv:
				if c, ok := m.B().(*ir.IntImm); ok && c.Value() == 2 {
					pos, neg = pos || t.k > 0, neg || t.k < 0
				}
			}
		}
	}
	return pos && neg
}

// fuseHalves rewrites k*floordiv(x + c1, 2) - k*floordiv(x + c2, 2) into
// k*(floormod(x, 2)*(c1%2 - c2%2) + (c1//2 - c2//2)): TVM's rewrite
// simplifier does (the extent of a region that a stride-2 access spreads
// over a loop: T2D's (rh_0 + 1)//2 - rh_0//2 + 1 is rh_0 % 2 + 1).
func (a *Analyzer) fuseHalves(s *sum) {
	half := func(e ir.Expr) (sum, bool) {
		d, ok := e.(*ir.Binary)
		if !ok || d.Op() != ir.OpFloorDiv {
			return sum{}, false
		}
		if c, ok := ir.IsConstInt(d.B()); !ok || c != 2 {
			return sum{}, false
		}
		return a.shallowSum(d.A()), true
	}
	sameTerms := func(x, y sum) bool {
		if len(x.terms) != len(y.terms) || len(x.terms) == 0 {
			return false
		}
		for i := range x.terms {
			if x.terms[i].k != y.terms[i].k || !ir.SameExpr(x.terms[i].x, y.terms[i].x) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(s.terms); i++ {
		xi, ok := half(s.terms[i].x)
		if !ok || s.terms[i].k <= 0 {
			continue
		}
		k := s.terms[i].k
		for j := range s.terms {
			if j == i || s.terms[j].k != -k {
				continue
			}
			xj, ok := half(s.terms[j].x)
			if !ok || !sameTerms(xi, xj) {
				continue
			}
			c1, c2 := xi.c, xj.c
			x := xi
			x.c = 0
			hi, lo := max(i, j), min(i, j)
			s.terms = slices.Delete(s.terms, hi, hi+1)
			s.terms = slices.Delete(s.terms, lo, lo+1)
			a.addSumTo(s, a.modSum(x, 2), k*(floorMod(c1, 2)-floorMod(c2, 2)))
			s.c += k * (floorDiv(c1, 2) - floorDiv(c2, 2))
			i = -1 // start over: the sum changed
			break
		}
	}
}

// fuseDivMod rewrites floordiv(x, c)*c*k + floormod(x, c)*k into x*k.
func (a *Analyzer) fuseDivMod(s *sum) {
	for i := 0; i < len(s.terms); i++ {
		m, ok := s.terms[i].x.(*ir.Binary)
		if !ok || m.Op() != ir.OpFloorMod {
			continue
		}
		c, ok := ir.IsConstInt(m.B())
		if !ok || c <= 0 {
			continue
		}
		k := s.terms[i].k
		for j := range s.terms {
			d, ok := s.terms[j].x.(*ir.Binary)
			if !ok || d.Op() != ir.OpFloorDiv || s.terms[j].k != k*c {
				continue
			}
			if dc, ok := ir.IsConstInt(d.B()); !ok || dc != c || !ir.SameExpr(d.A(), m.A()) {
				continue
			}
			x := m.A()
			hi, lo := max(i, j), min(i, j)
			s.terms = slices.Delete(s.terms, hi, hi+1)
			s.terms = slices.Delete(s.terms, lo, lo+1)
			a.addSumTo(s, a.shallowSum(x), k)
			i = -1 // start over: the sum changed
			break
		}
	}
}

// isImm reports whether e is the integer constant v of dtype t.
func isImm(e ir.Expr, t ir.DType, v int64) bool {
	c, ok := e.(*ir.IntImm)
	return ok && c.DType() == t && c.Value() == v
}

// sameOperands reports whether b's operands have one dtype: then
// ir.NewBinary(b.Op(), b.A(), b.B()) builds b again, unchanged.
func sameOperands(b *ir.Binary) bool { return b.A().DType() == b.B().DType() }

// sumIs reports whether e is what fromSum(s) builds, without building it:
// then e can stand for s's expression and the allocations of building it
// again are saved. A sum fromSum would fuse terms of is never matched.
func (a *Analyzer) sumIs(s sum, e ir.Expr) bool {
	t := s.t
	if t == ir.Invalid {
		t = ir.Int32
	}
	if len(s.terms) == 0 {
		return isImm(e, t, s.c)
	}
	var buf [8]term
	if len(s.terms) > len(buf) || needsFuse(s.terms) {
		return false
	}
	terms := buf[:copy(buf[:], s.terms)]
	// fromSum's order: stable insertion sort by decreasing coefficient.
	for i := 1; i < len(terms); i++ {
		for j := i; j > 0 && terms[j].k > terms[j-1].k; j-- {
			terms[j], terms[j-1] = terms[j-1], terms[j]
		}
	}
	// mulIs reports whether e is fromSum's mul(x, k).
	mulIs := func(e, x ir.Expr, k int64) bool {
		if k == 1 {
			return ir.SameExpr(e, x)
		}
		b, ok := e.(*ir.Binary)
		return ok && b.Op() == ir.OpMul && sameOperands(b) && isImm(b.B(), t, k) && ir.SameExpr(b.A(), x)
	}
	// step peels op(rest, operand) off e and returns rest.
	step := func(e ir.Expr, op ir.BinOp) (*ir.Binary, bool) {
		b, ok := e.(*ir.Binary)
		return b, ok && b.Op() == op && sameOperands(b)
	}
	c := s.c
	head := terms[0]
	headTakesC := head.k <= 0 && c > 0 // c - x*k leads the sum
	if !headTakesC && c != 0 {
		op, v := ir.OpAdd, c
		if c < 0 {
			op, v = ir.OpSub, -c
		}
		b, ok := step(e, op)
		if !ok || !isImm(b.B(), t, v) {
			return false
		}
		e = b.A()
	}
	for i := len(terms) - 1; i >= 1; i-- {
		op, k := ir.OpAdd, terms[i].k
		if k < 0 {
			op, k = ir.OpSub, -k
		}
		b, ok := step(e, op)
		if !ok || !mulIs(b.B(), terms[i].x, k) {
			return false
		}
		e = b.A()
	}
	if headTakesC {
		b, ok := step(e, ir.OpSub)
		return ok && isImm(b.A(), t, c) && mulIs(b.B(), head.x, -head.k)
	}
	return mulIs(e, head.x, head.k)
}

// fromSum builds the expression of a canonical sum: terms with positive
// coefficients first, by decreasing coefficient (ties in order of first
// appearance), then the negative ones subtracted, then the constant.
func (a *Analyzer) fromSum(s sum) ir.Expr {
	if len(s.terms) == 0 {
		if s.t == ir.Invalid {
			return ir.Int(s.c)
		}
		return ir.IntImmOf(s.t, s.c)
	}
	// Work on a copy: callers may keep using s. Most sums are short and
	// have no floormod to fuse; those are sorted in a stack buffer.
	var buf [8]term
	var terms []term
	if len(s.terms) <= len(buf) && !needsFuse(s.terms) {
		n := copy(buf[:], s.terms)
		terms = buf[:n]
	} else {
		s = a.clone(s)
		a.fuseHalves(&s)
		a.fuseDivMod(&s)
		terms = s.terms
	}
	t := s.t
	if t == ir.Invalid {
		t = ir.Int32
	}
	if len(terms) == 0 {
		return ir.IntImmOf(t, s.c)
	}
	// Stable insertion sort by decreasing coefficient.
	for i := 1; i < len(terms); i++ {
		for j := i; j > 0 && terms[j].k > terms[j-1].k; j-- {
			terms[j], terms[j-1] = terms[j-1], terms[j]
		}
	}
	mul := func(x ir.Expr, k int64) ir.Expr {
		if k == 1 {
			return x
		}
		return ir.NewBinary(ir.OpMul, x, ir.IntImmOf(t, k))
	}
	var e ir.Expr
	c := s.c
	for _, tm := range terms {
		switch {
		case e == nil && tm.k > 0:
			e = mul(tm.x, tm.k)
		case e == nil && c > 0:
			e = ir.NewBinary(ir.OpSub, ir.IntImmOf(t, c), mul(tm.x, -tm.k))
			c = 0
		case e == nil:
			e = mul(tm.x, tm.k)
		case tm.k > 0:
			e = ir.NewBinary(ir.OpAdd, e, mul(tm.x, tm.k))
		default:
			e = ir.NewBinary(ir.OpSub, e, mul(tm.x, -tm.k))
		}
	}
	switch {
	case c > 0:
		e = ir.NewBinary(ir.OpAdd, e, ir.IntImmOf(t, c))
	case c < 0:
		e = ir.NewBinary(ir.OpSub, e, ir.IntImmOf(t, -c))
	}
	return e
}

// boundSum bounds a canonical sum.
func (a *Analyzer) boundSum(s sum) Bound {
	b := Point(s.c)
	for _, t := range s.terms {
		b = boundAdd(b, boundScale(a.boundAtom(t.x), t.k))
		if b.Min == NegInf && b.Max == PosInf {
			break
		}
	}
	return b
}

// boundDigit bounds floordiv(floormod(v, d*k), d) by [0, k-1] when d is
// positive and k a positive constant: a digit of a fused loop whose inner
// extent d is symbolic (Fuse over a loop of extent rh_0 % 2 + 1), which
// interval arithmetic alone bounds far too loosely.
func (a *Analyzer) boundDigit(x *ir.Binary) (Bound, bool) {
	m, ok := x.A().(*ir.Binary)
	if !ok || m.Op() != ir.OpFloorMod {
		return Bound{}, false
	}
	d := x.B()
	if _, isConst := d.(*ir.IntImm); isConst {
		return Bound{}, false
	}
	k, ok := sumRatio(a.shallowSum(m.B()), a.shallowSum(d))
	if !ok || k < 1 || a.boundSimplified(d).Min < 1 {
		return Bound{}, false
	}
	return Bound{0, k - 1}, true
}

// sumRatio returns k when the canonical sums satisfy m = k*d.
func sumRatio(m, d sum) (int64, bool) {
	if len(m.terms) != len(d.terms) || len(d.terms) == 0 || d.terms[0].k == 0 {
		return 0, false
	}
	k := m.terms[0].k / d.terms[0].k
	if m.c != k*d.c {
		return 0, false
	}
	for i := range d.terms {
		if m.terms[i].k != k*d.terms[i].k || !ir.SameExpr(m.terms[i].x, d.terms[i].x) {
			return 0, false
		}
	}
	return k, true
}

// boundAtom bounds an atom of a canonical sum.
func (a *Analyzer) boundAtom(e ir.Expr) Bound {
	switch x := e.(type) {
	case *ir.IntImm:
		return Point(x.Value())
	case *ir.Var:
		if b, ok := a.bounds[x]; ok {
			return b
		}
		return Everything()
	case *ir.Binary:
		switch x.Op() {
		case ir.OpAdd, ir.OpSub:
			return a.boundSum(a.shallowSum(x))
		case ir.OpMul:
			return boundMul(a.boundSimplified(x.A()), a.boundSimplified(x.B()))
		case ir.OpFloorDiv:
			if b, ok := a.boundDigit(x); ok {
				return b
			}
			return boundFloorDiv(a.boundSimplified(x.A()), a.boundSimplified(x.B()))
		case ir.OpFloorMod:
			return boundFloorMod(a.boundSimplified(x.A()), a.boundSimplified(x.B()))
		case ir.OpDiv:
			return boundTruncDiv(a.boundSimplified(x.A()), a.boundSimplified(x.B()))
		case ir.OpMod:
			return boundTruncMod(a.boundSimplified(x.A()), a.boundSimplified(x.B()))
		case ir.OpMin:
			l, r := a.boundSimplified(x.A()), a.boundSimplified(x.B())
			return Bound{min(l.Min, r.Min), min(l.Max, r.Max)}
		case ir.OpMax:
			l, r := a.boundSimplified(x.A()), a.boundSimplified(x.B())
			return Bound{max(l.Min, r.Min), max(l.Max, r.Max)}
		}
	case *ir.Select:
		return a.boundSimplified(x.True()).Union(a.boundSimplified(x.False()))
	case *ir.Call:
		if x.Op() == ir.CallIfThenElse {
			return a.boundSimplified(x.Args()[1]).Union(a.boundSimplified(x.Args()[2]))
		}
	case *ir.Cast:
		t := x.DType()
		if x.A().DType().IsInt() || x.A().DType().IsBool() {
			in := a.boundSimplified(x.A())
			if dt := dtypeBound(t, t != ir.UInt8); dt.Contains(in) {
				return in
			}
		}
		return dtypeBound(t, t != ir.UInt8)
	}
	t := e.DType()
	if t.IsBool() {
		return Bound{0, 1}
	}
	return dtypeBound(t, t != ir.UInt8)
}
