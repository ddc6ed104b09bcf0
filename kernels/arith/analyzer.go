package arith

import (
	"dragonx/kernels/ir"
)

// Analyzer simplifies and bounds integer expressions, given constant ranges
// for some of their variables: TVM's arith::Analyzer, reduced to what
// dragonx's schedule primitives need.
//
// The zero value is not usable; call NewAnalyzer. An Analyzer is not safe
// for concurrent use; it is cheap to make one per schedule.
type Analyzer struct {
	bounds map[*ir.Var]Bound
	im     *iterMapper // IterMapSimplify's scratch space
	chunk  []term      // where canonical sums take their terms from (see newTerms)
	gen    int         // counts the chunks newTerms has allocated (see mark)
}

// NewAnalyzer returns an analyzer that knows nothing about any variable.
func NewAnalyzer() *Analyzer { return &Analyzer{bounds: make(map[*ir.Var]Bound, 16)} }

// Bind records that v lies in b.
func (a *Analyzer) Bind(v *ir.Var, b Bound) { a.bounds[v] = b }

// BindRange records that v lies in [min, min+extent).
func (a *Analyzer) BindRange(v *ir.Var, min, extent int64) { a.bounds[v] = RangeBound(min, extent) }

// Unbind forgets what is known about v.
func (a *Analyzer) Unbind(v *ir.Var) { delete(a.bounds, v) }

// Reset forgets what is known about every variable, keeping the storage
// for reuse.
func (a *Analyzer) Reset() { clear(a.bounds) }

// VarBound returns what is known about v.
func (a *Analyzer) VarBound(v *ir.Var) (Bound, bool) {
	b, ok := a.bounds[v]
	return b, ok
}

// With runs fn with v bound to b, then restores what was known before.
func (a *Analyzer) With(v *ir.Var, b Bound, fn func()) {
	old, had := a.bounds[v]
	a.bounds[v] = b
	defer func() {
		if had {
			a.bounds[v] = old
		} else {
			delete(a.bounds, v)
		}
	}()
	fn()
}

// Bound returns constant bounds of e (TVM's ConstIntBound). Bool
// expressions are bounded by [0, 1] (or a point when they simplify to a
// constant); float expressions are unbounded.
func (a *Analyzer) Bound(e ir.Expr) Bound {
	t := e.DType()
	switch {
	case t.IsInt():
		defer a.release(a.mark())
		return a.boundSum(a.toSum(e))
	case t.IsBool():
		if c, ok := a.Simplify(e).(*ir.IntImm); ok {
			return Point(c.Value())
		}
		return Bound{0, 1}
	}
	return Everything()
}

// CanProve reports whether cond (a bool expression) is provably true.
func (a *Analyzer) CanProve(cond ir.Expr) bool {
	c, ok := a.Simplify(cond).(*ir.IntImm)
	return ok && c.Value() != 0
}

// CanProveEqual reports whether x - y simplifies to 0.
func (a *Analyzer) CanProveEqual(x, y ir.Expr) bool {
	if ir.SameExpr(x, y) {
		return true
	}
	if !x.DType().IsInt() || !y.DType().IsInt() {
		return false
	}
	defer a.release(a.mark())
	s, ok := a.binarySum(ir.OpSub, x, y)
	if !ok {
		s = a.toSum(ir.Sub(x, y))
	}
	return len(s.terms) == 0 && s.c == 0
}

// ConstDiff returns x - y when it simplifies to a constant.
func (a *Analyzer) ConstDiff(x, y ir.Expr) (int64, bool) {
	if !x.DType().IsInt() || !y.DType().IsInt() {
		return 0, false
	}
	if ir.SameExpr(x, y) {
		return 0, true
	}
	defer a.release(a.mark())
	s, ok := a.binarySum(ir.OpSub, x, y)
	if !ok {
		s = a.toSum(ir.Sub(x, y))
	}
	return s.c, len(s.terms) == 0
}

// Simplify returns an expression equal to e for every value of its
// variables within their known bounds, in a canonical form: constants
// folded; integer sums collected into sum of coefficient*term plus a
// constant (terms ordered by decreasing coefficient, then first
// appearance); floordiv and floormod by constants distributed over the
// multiples of the divisor and removed where the bounds allow
// (floordiv(i*16 + j, 16) is i when 0 <= j < 16, floordiv(i*360, 16) is
// i*22 when 0 <= i < 2); comparisons, min and max
// decided where the bounds allow. Float arithmetic is only constant-folded
// (with float32 rounding for float32).
func (a *Analyzer) Simplify(e ir.Expr) ir.Expr {
	switch e.(type) {
	case *ir.Var, *ir.IntImm, *ir.FloatImm:
		return e // already canonical
	}
	t := e.DType()
	defer a.release(a.mark())
	switch {
	case t.IsInt():
		s := a.toSum(e)
		if a.sumIs(s, e) {
			return e // already in canonical form
		}
		return a.fromSum(s)
	case t.IsBool():
		return a.simplifyBool(e)
	}
	return a.simplifyOther(e)
}

// Simplify simplifies e with no knowledge of variable bounds (what TVM's
// te.create_prim_func applies to compute bodies).
func Simplify(e ir.Expr) ir.Expr { return NewAnalyzer().Simplify(e) }

func (a *Analyzer) simplifyList(list []ir.Expr) ([]ir.Expr, bool) {
	var out []ir.Expr
	for i, e := range list {
		s := a.Simplify(e)
		if s != e && out == nil {
			out = make([]ir.Expr, len(list))
			copy(out, list[:i])
		}
		if out != nil {
			out[i] = s
		}
	}
	if out == nil {
		return list, false
	}
	return out, true
}

func boolImm(b bool) ir.Expr {
	if b {
		return ir.True()
	}
	return ir.False()
}

func (a *Analyzer) simplifyBool(e ir.Expr) ir.Expr {
	switch x := e.(type) {
	case *ir.Binary:
		switch op := x.Op(); {
		case op == ir.OpAnd || op == ir.OpOr:
			l, r := a.simplifyBool(x.A()), a.simplifyBool(x.B())
			lc, lok := l.(*ir.IntImm)
			rc, rok := r.(*ir.IntImm)
			if op == ir.OpAnd {
				switch {
				case lok && lc.Value() == 0 || rok && rc.Value() == 0:
					return ir.False()
				case lok:
					return r
				case rok:
					return l
				}
			} else {
				switch {
				case lok && lc.Value() != 0 || rok && rc.Value() != 0:
					return ir.True()
				case lok:
					return r
				case rok:
					return l
				}
			}
			if l == x.A() && r == x.B() {
				return e
			}
			return ir.NewBinary(op, l, r)
		case op.IsCompare():
			return a.simplifyCompare(x)
		}
	case *ir.Not:
		v := a.simplifyBool(x.A())
		if c, ok := v.(*ir.IntImm); ok {
			return boolImm(c.Value() == 0)
		}
		if n, ok := v.(*ir.Not); ok {
			return n.A()
		}
		if v == x.A() {
			return e
		}
		return ir.NotOf(v)
	}
	return a.simplifyOther(e)
}

func (a *Analyzer) simplifyCompare(x *ir.Binary) ir.Expr {
	op := x.Op()
	l, r := a.Simplify(x.A()), a.Simplify(x.B())
	if l.DType().IsInt() {
		ds := a.shallowSum(l)
		a.addSumTo(&ds, a.shallowSum(r), -1)
		d := a.boundSum(ds)
		switch op {
		case ir.OpLT:
			if d.Max < 0 {
				return ir.True()
			}
			if d.Min >= 0 {
				return ir.False()
			}
		case ir.OpLE:
			if d.Max <= 0 {
				return ir.True()
			}
			if d.Min > 0 {
				return ir.False()
			}
		case ir.OpGT:
			if d.Min > 0 {
				return ir.True()
			}
			if d.Max <= 0 {
				return ir.False()
			}
		case ir.OpGE:
			if d.Min >= 0 {
				return ir.True()
			}
			if d.Max < 0 {
				return ir.False()
			}
		case ir.OpEQ:
			if d.IsPoint() {
				return boolImm(d.Min == 0)
			}
			if d.Max < 0 || d.Min > 0 {
				return ir.False()
			}
		case ir.OpNE:
			if d.IsPoint() {
				return boolImm(d.Min != 0)
			}
			if d.Max < 0 || d.Min > 0 {
				return ir.True()
			}
		}
	} else if lf, ok := l.(*ir.FloatImm); ok {
		if rf, ok := r.(*ir.FloatImm); ok {
			u, v := lf.Value(), rf.Value()
			switch op {
			case ir.OpLT:
				return boolImm(u < v)
			case ir.OpLE:
				return boolImm(u <= v)
			case ir.OpGT:
				return boolImm(u > v)
			case ir.OpGE:
				return boolImm(u >= v)
			case ir.OpEQ:
				return boolImm(u == v)
			case ir.OpNE:
				return boolImm(u != v)
			}
		}
	}
	// TVM's rewrite simplifier writes a >= b as b <= a and a > b as b < a.
	switch op {
	case ir.OpGE:
		op, l, r = ir.OpLE, r, l
	case ir.OpGT:
		op, l, r = ir.OpLT, r, l
	}
	if l.DType().IsInt() {
		switch op {
		case ir.OpLT:
			return moveConstants(l, r)
		case ir.OpLE:
			// TVM: !(r < l), its LT rules applied, and !(a < b) is b <= a.
			if lt, ok := moveConstants(r, l).(*ir.Binary); ok && lt.Op() == ir.OpLT {
				return ir.LE(lt.B(), lt.A())
			}
		}
	}
	if l == x.A() && r == x.B() && op == x.Op() {
		return x
	}
	return ir.NewBinary(op, l, r)
}

// moveConstants returns x < y with TVM's rewrite rules that gather the
// constants of an integer comparison on one side applied (c1 < x + c2 is
// c1 - c2 < x, x - c2 < c1 is x < c1 + c2, c1 < c2 - x is x < c2 - c1,
// ...), until none applies.
func moveConstants(x, y ir.Expr) ir.Expr {
	for {
		c1, xc := ir.IsConstInt(x)
		c2, yc := ir.IsConstInt(y)
		switch {
		case xc && !yc:
			if e, c, ok := splitConstant(y); ok {
				if e.neg { // c1 < c - e: e < c - c1
					x, y = e.x, ir.IntImmOf(y.DType(), c-c1)
				} else { // c1 < e + c: c1 - c < e
					x, y = ir.IntImmOf(x.DType(), c1-c), e.x
				}
				continue
			}
		case yc && !xc:
			if e, c, ok := splitConstant(x); ok {
				if e.neg { // c - e < c2: c - c2 < e
					x, y = ir.IntImmOf(x.DType(), c-c2), e.x
				} else { // e + c < c2: e < c2 - c
					x, y = e.x, ir.IntImmOf(y.DType(), c2-c)
				}
				continue
			}
		}
		return ir.LT(x, y)
	}
}

// signedTerm is x, or -x when neg is set.
type signedTerm struct {
	x   ir.Expr
	neg bool
}

// splitConstant writes e as t + c with a constant c != 0 and t = x or -x:
// e is x + c, x - c, c + x or c - x.
func splitConstant(e ir.Expr) (signedTerm, int64, bool) {
	b, ok := e.(*ir.Binary)
	if !ok || b.Op() != ir.OpAdd && b.Op() != ir.OpSub {
		return signedTerm{}, 0, false
	}
	sub := b.Op() == ir.OpSub
	if c, ok := ir.IsConstInt(b.B()); ok && c != 0 {
		if sub {
			c = -c
		}
		return signedTerm{x: b.A()}, c, true
	}
	if c, ok := ir.IsConstInt(b.A()); ok && c != 0 {
		return signedTerm{x: b.B(), neg: sub}, c, true
	}
	return signedTerm{}, 0, false
}

// simplifyOther handles float expressions and non-arithmetic nodes of any
// type: children are simplified, constants folded.
func (a *Analyzer) simplifyOther(e ir.Expr) ir.Expr {
	switch x := e.(type) {
	case *ir.Binary:
		l, r := a.Simplify(x.A()), a.Simplify(x.B())
		if lf, ok := l.(*ir.FloatImm); ok {
			if rf, ok := r.(*ir.FloatImm); ok {
				if v, ok := foldFloat(x.Op(), roundTo(x.DType(), lf.Value()), roundTo(x.DType(), rf.Value())); ok {
					return ir.FloatImmOf(x.DType(), roundTo(x.DType(), v))
				}
			}
		}
		if l == x.A() && r == x.B() {
			return e
		}
		return ir.NewBinary(x.Op(), l, r)
	case *ir.Select:
		c := a.Simplify(x.Cond())
		if ci, ok := c.(*ir.IntImm); ok {
			if ci.Value() != 0 {
				return a.Simplify(x.True())
			}
			return a.Simplify(x.False())
		}
		t, f := a.Simplify(x.True()), a.Simplify(x.False())
		if c == x.Cond() && t == x.True() && f == x.False() {
			return e
		}
		return ir.SelectOf(c, t, f)
	case *ir.Call:
		args, changed := a.simplifyList(x.Args())
		if x.Op() == ir.CallIfThenElse {
			if ci, ok := args[0].(*ir.IntImm); ok {
				if ci.Value() != 0 {
					return args[1]
				}
				return args[2]
			}
		}
		if !changed {
			return e
		}
		return ir.NewCall(x.Op(), args...)
	case *ir.Cast:
		v := a.Simplify(x.A())
		if v == x.A() {
			if _, isConst := v.(*ir.IntImm); !isConst {
				if _, isConst := v.(*ir.FloatImm); !isConst {
					return e
				}
			}
		}
		return castConst(x.DType(), v)
	case *ir.BufferLoad:
		idx, changed := a.simplifyList(x.Indices())
		if !changed {
			return e
		}
		return ir.Load(x.Buffer(), idx...)
	}
	return e
}

// castConst is ir.CastTo, rounding float32 constants.
func castConst(t ir.DType, v ir.Expr) ir.Expr {
	if f, ok := v.(*ir.FloatImm); ok && t.IsFloat() {
		return ir.FloatImmOf(t, roundTo(t, f.Value()))
	}
	if c, ok := v.(*ir.IntImm); ok && t.IsFloat() {
		return ir.FloatImmOf(t, roundTo(t, float64(c.Value())))
	}
	return ir.CastTo(t, v)
}

func roundTo(t ir.DType, v float64) float64 {
	if t == ir.Float32 {
		return float64(float32(v))
	}
	return v
}

func foldFloat(op ir.BinOp, x, y float64) (float64, bool) {
	switch op {
	case ir.OpAdd:
		return x + y, true
	case ir.OpSub:
		return x - y, true
	case ir.OpMul:
		return x * y, true
	case ir.OpDiv:
		if y != 0 {
			return x / y, true
		}
	case ir.OpMin:
		return min(x, y), true
	case ir.OpMax:
		return max(x, y), true
	}
	return 0, false
}

// LoopBound returns the constant bound of the variable of loop f: [0, n-1]
// for a constant extent n; for a symbolic extent (an expression of outer
// loop vars, which must be bound already) [0, max-1], max being the largest
// value the extent can take, as TVM's analyzer bounds a var bound to a
// range of symbolic extent.
func (a *Analyzer) LoopBound(f *ir.For) Bound {
	if n, ok := f.ConstExtent(); ok {
		return RangeBound(0, n)
	}
	b := a.Bound(f.SymbolicExtent())
	if b.Max == PosInf {
		return Bound{0, PosInf}
	}
	return Bound{0, max(b.Max-1, 0)}
}

// BindLoop records the range of loop f's variable (see LoopBound).
func (a *Analyzer) BindLoop(f *ir.For) { a.bounds[f.Var] = a.LoopBound(f) }

// LoopSet is the set of values of loop f's variable: [0, n-1] for a
// constant extent n, [0, extent-1] (symbolic, simplified) otherwise, as
// TVM's IntSet::FromRange.
func (a *Analyzer) LoopSet(f *ir.For) IntSet {
	if n, ok := f.ConstExtent(); ok {
		return RangeSet(0, n)
	}
	e := f.SymbolicExtent()
	return IntSet{ir.IntImmOf(e.DType(), 0), a.simplifyBinary(ir.OpSub, e, ir.IntImmOf(e.DType(), 1))}
}
