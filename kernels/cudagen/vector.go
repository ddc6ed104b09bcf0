package cudagen

import (
	"fmt"

	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
)

// Vectorization.
//
// A Vectorized loop over lane v in [0, w), w = 2 or 4, becomes one
// float2/float4 access when every index in its body is an exact affine
// function of v: laneCoef proves idx(v) = idx(0) + c*v for every v in
// [0, w), and divisor proves that idx(0) is a multiple of w (so the
// vector is aligned: every buffer is 16-byte aligned). The rules, TVM's
// ramp simplification reduced to what lowered indices hold:
//
//   - idx without v: c = 0; v: c = 1; sums, differences and products by
//     constants combine the coefficients;
//   - floordiv(a, d) and floormod(a, d), d > 0 constant, a = a0 + ca*v
//     with ca >= 0: a0 is a multiple of g = gcd(divisor(a0), d) modulo d,
//     so a0 mod d <= d - g, and when ca*(w-1) < g the lanes stay in one
//     bucket of d: floordiv has c = 0, floormod c = ca;
//   - anything else holding v (min, max, select, a load, a truncating
//     division) is not proved.
//
// divisor(e) is a number that always divides e (0 when e is always 0),
// with v taken as 0: constants, gcd over sums, products of the factors,
// divisions that keep exactness, gcd with the modulus for a modulo.

// laneCoef returns c with e(v) = e(0) + c*v for every v in [0, w), or
// false when that is not proved.
func laneCoef(e ir.Expr, v *ir.Var, w int64) (int64, bool) {
	if !ir.UsesVar(e, func(x *ir.Var) bool { return x == v }) {
		return 0, true
	}
	switch x := e.(type) {
	case *ir.Var:
		return 1, x == v
	case *ir.Cast:
		if x.DType().IsInt() && x.A().DType().IsInt() && x.DType().Bits() >= x.A().DType().Bits() {
			return laneCoef(x.A(), v, w)
		}
	case *ir.Binary:
		a, okA := laneCoef(x.A(), v, w)
		b, okB := laneCoef(x.B(), v, w)
		if !okA || !okB {
			return 0, false
		}
		switch x.Op() {
		case ir.OpAdd:
			return a + b, true
		case ir.OpSub:
			return a - b, true
		case ir.OpMul:
			if cb, ok := ir.IsConstInt(x.B()); ok {
				return a * cb, true
			}
			if ca, ok := ir.IsConstInt(x.A()); ok {
				return ca * b, true
			}
			if a == 0 && b == 0 {
				return 0, true // v only where it cancels out
			}
		case ir.OpFloorDiv, ir.OpFloorMod:
			d, ok := ir.IsConstInt(x.B())
			if !ok || d <= 0 || b != 0 || a < 0 {
				return 0, false
			}
			g := gcd(divisor(x.A(), v), d)
			if a*(w-1) >= g {
				return 0, false
			}
			if x.Op() == ir.OpFloorDiv {
				return 0, true
			}
			return a, true
		}
	}
	return 0, false
}

// divisor returns a non-negative number that always divides e with v = 0
// (0: e is always 0).
func divisor(e ir.Expr, v *ir.Var) int64 {
	switch x := e.(type) {
	case *ir.IntImm:
		if x.Value() < 0 {
			return -x.Value()
		}
		return x.Value()
	case *ir.Var:
		if x == v {
			return 0
		}
		return 1
	case *ir.Cast:
		if x.DType().IsInt() && x.A().DType().IsInt() && x.DType().Bits() >= x.A().DType().Bits() {
			return divisor(x.A(), v)
		}
		return 1
	case *ir.Select:
		return gcd(divisor(x.True(), v), divisor(x.False(), v))
	case *ir.Binary:
		a, b := divisor(x.A(), v), divisor(x.B(), v)
		switch x.Op() {
		case ir.OpAdd, ir.OpSub, ir.OpMin, ir.OpMax:
			return gcd(a, b)
		case ir.OpMul:
			if a > 0 && b > 0 && a*b/b != a {
				return 1 // overflow: say nothing
			}
			return a * b
		case ir.OpFloorDiv, ir.OpDiv:
			d, ok := ir.IsConstInt(x.B())
			if !ok || d <= 0 {
				return 1
			}
			if a == 0 {
				return 0
			}
			if a%d == 0 {
				return a / d
			}
		case ir.OpFloorMod, ir.OpMod:
			d, ok := ir.IsConstInt(x.B())
			if !ok || d <= 0 {
				return 1
			}
			if a%d == 0 { // a == 0 included
				return 0
			}
			return gcd(a, d)
		}
	}
	return 1
}

func gcd(a, b int64) int64 {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// aligned reports whether idx moves with the lane (coefficient 1) from a
// multiple of w.
func aligned(idx ir.Expr, v *ir.Var, w int64) bool {
	c, ok := laneCoef(idx, v, w)
	return ok && c == 1 && divisor(idx, v)%w == 0
}

// uniformCond reports whether condition e has the same value on every
// lane: it does not hold v, or is a comparison a < b (a >= b, b > a,
// b <= a) whose difference moves with the lane from a multiple of w (so
// a - b + v < 0 exactly when a - b < 0), or a logical combination of such.
func uniformCond(e ir.Expr, v *ir.Var, w int64) bool {
	if !ir.UsesVar(e, func(x *ir.Var) bool { return x == v }) {
		return true
	}
	switch x := e.(type) {
	case *ir.Not:
		return uniformCond(x.A(), v, w)
	case *ir.Binary:
		switch x.Op() {
		case ir.OpAnd, ir.OpOr:
			return uniformCond(x.A(), v, w) && uniformCond(x.B(), v, w)
		case ir.OpLT, ir.OpGE, ir.OpGT, ir.OpLE:
			if !x.A().DType().IsInt() {
				return false
			}
			a, okA := laneCoef(x.A(), v, w)
			b, okB := laneCoef(x.B(), v, w)
			if !okA || !okB {
				return false
			}
			d := a - b // coefficient of A - B
			if x.Op() == ir.OpGT || x.Op() == ir.OpLE {
				d = -d // B - A < 0, B - A >= 0
			}
			return d == 1 && gcd(divisor(x.A(), v), divisor(x.B(), v))%w == 0
		}
	}
	return false
}

// vectorize writes loop x (a Vectorized loop, its variable printed as
// name) as one vector access when that is proved exact; otherwise it
// writes nothing and says why.
func (kg *kernelGen) vectorize(x *lower.Loop, name string, ind int) (done bool, why string, err error) {
	w, ok := ir.IsConstInt(x.Extent)
	if !ok || (w != 2 && w != 4) {
		return false, fmt.Sprintf("extent %s, not 2 or 4", ir.ExprString(x.Extent)), nil
	}
	v := x.Var
	// The body: Blocks and Ifs around one Store.
	var conds []ir.Expr
	var st *lower.Store
	var blocks []string
	body := x.Body
	for st == nil {
		if len(body) != 1 {
			return false, "the body is not one store", nil
		}
		switch s := body[0].(type) {
		case *lower.Block:
			blocks = append(blocks, s.Name)
			body = s.Body
		case *lower.If:
			if len(s.Else) > 0 {
				return false, "a condition with an else branch", nil
			}
			if !uniformCond(s.Cond, v, w) {
				return false, "a condition that may differ between lanes", nil
			}
			conds = append(conds, s.Cond)
			body = s.Then
		case *lower.Store:
			st = s
		default:
			return false, "the body is not one store", nil
		}
	}
	if st.Value.DType() != ir.Float32 {
		return false, "a value that is not float32", nil
	}
	if !aligned(st.Index, v, w) {
		return false, "the store is not contiguous and aligned", nil
	}
	// Loads that every lane runs and that move with the lane become vector
	// loads; loads under a select or if_then_else branch stay scalar per
	// lane (hoisting them out of their guard could read out of bounds, as
	// a padded convolution's input load would), as do loads of one element
	// for all lanes.
	var vec []*ir.BufferLoad
	bad := ""
	visitLoads(st.Value, false, func(l *ir.BufferLoad, guarded bool) {
		if bad != "" || guarded {
			return
		}
		if len(l.Indices()) != 1 {
			bad = "a load with several indices"
			return
		}
		idx := l.Indices()[0]
		if c, ok := laneCoef(idx, v, w); ok && c == 0 {
			return
		}
		if !aligned(idx, v, w) {
			bad = fmt.Sprintf("the load of %s is not contiguous and aligned", l.Buffer().Name())
			return
		}
		vec = append(vec, l)
	})
	if bad != "" {
		return false, bad, nil
	}

	// Write it: lane 0's indices and conditions, vector loads, one value
	// per lane, one vector store.
	vt := fmt.Sprintf("float%d", w)
	comps := []string{"x", "y", "z", "w"}[:w]
	kg.vars[v] = "0"
	defer delete(kg.vars, v)
	kg.line(ind, "{ // vectorize %s: %s over %s, lanes %d", x.Var.Name(), vt, name, w)
	for _, b := range blocks {
		kg.line(ind+1, "// block %s", b)
	}
	in := ind + 1
	for _, c := range conds {
		s, err := kg.expr(c)
		if err != nil {
			return false, "", err
		}
		kg.line(in, "if (%s) {", s)
		in++
	}
	regs := map[*ir.BufferLoad]string{}
	for _, l := range vec {
		p, err := kg.access(l.Buffer(), l.Indices()[0])
		if err != nil {
			return false, "", err
		}
		r := fmt.Sprintf("dx_v%d", kg.tmp)
		kg.tmp++
		kg.line(in, "const %s %s = *reinterpret_cast<const %s *>(&%s);", vt, r, vt, p)
		regs[l] = r
	}
	dst, err := kg.access(st.Buffer, st.Index)
	if err != nil {
		return false, "", err
	}
	r := fmt.Sprintf("dx_v%d", kg.tmp)
	kg.tmp++
	kg.line(in, "%s %s;", vt, r)
	for i, c := range comps {
		kg.vars[v] = fmt.Sprint(i)
		kg.lane = map[*ir.BufferLoad]string{}
		for l, reg := range regs {
			kg.lane[l] = reg + "." + c
		}
		val, err := kg.expr(st.Value)
		kg.lane = nil
		if err != nil {
			return false, "", err
		}
		kg.line(in, "%s.%s = %s;", r, c, val)
	}
	kg.line(in, "*reinterpret_cast<%s *>(&%s) = %s;", vt, dst, r)
	for in > ind+1 {
		in--
		kg.line(in, "}")
	}
	kg.line(ind, "}")
	return true, "", nil
}

// visitLoads calls fn on the loads of e that are not inside another
// load's index, saying whether each is guarded: in a branch of a select or
// an if_then_else, evaluated only where the condition says.
func visitLoads(e ir.Expr, guarded bool, fn func(*ir.BufferLoad, bool)) {
	switch x := e.(type) {
	case *ir.BufferLoad:
		fn(x, guarded)
	case *ir.Binary:
		visitLoads(x.A(), guarded, fn)
		visitLoads(x.B(), guarded, fn)
	case *ir.Not:
		visitLoads(x.A(), guarded, fn)
	case *ir.Cast:
		visitLoads(x.A(), guarded, fn)
	case *ir.Select:
		visitLoads(x.Cond(), guarded, fn)
		visitLoads(x.True(), true, fn)
		visitLoads(x.False(), true, fn)
	case *ir.Call:
		for i, a := range x.Args() {
			visitLoads(a, guarded || (x.Op() == ir.CallIfThenElse && i > 0), fn)
		}
	}
}
