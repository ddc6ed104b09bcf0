package analysis

import "dragonx/kernels/ir"

// evalInt evaluates an integer or bool expression (bools as 0/1) over
// variable values; ok is false for anything else (loads, floats, division
// by zero).
func evalInt(e ir.Expr, env map[*ir.Var]int64) (int64, bool) {
	switch x := e.(type) {
	case *ir.IntImm:
		return x.Value(), true
	case *ir.Var:
		v, ok := env[x]
		return v, ok
	case *ir.Not:
		a, ok := evalInt(x.A(), env)
		return b2i(a == 0), ok
	case *ir.Select:
		c, ok1 := evalInt(x.Cond(), env)
		t, ok2 := evalInt(x.True(), env)
		f, ok3 := evalInt(x.False(), env)
		if c != 0 {
			return t, ok1 && ok2 && ok3
		}
		return f, ok1 && ok2 && ok3
	case *ir.Binary:
		a, ok := evalInt(x.A(), env)
		if !ok {
			return 0, false
		}
		b, ok := evalInt(x.B(), env)
		if !ok {
			return 0, false
		}
		switch x.Op() {
		case ir.OpAdd:
			return a + b, true
		case ir.OpSub:
			return a - b, true
		case ir.OpMul:
			return a * b, true
		case ir.OpDiv, ir.OpMod, ir.OpFloorDiv, ir.OpFloorMod:
			if b == 0 {
				return 0, false
			}
			q, m := a/b, a%b
			switch x.Op() {
			case ir.OpDiv:
				return q, true
			case ir.OpMod:
				return m, true
			case ir.OpFloorDiv:
				if m != 0 && (m < 0) != (b < 0) {
					q--
				}
				return q, true
			}
			if m != 0 && (m < 0) != (b < 0) {
				m += b
			}
			return m, true
		case ir.OpMin:
			return min(a, b), true
		case ir.OpMax:
			return max(a, b), true
		case ir.OpEQ:
			return b2i(a == b), true
		case ir.OpNE:
			return b2i(a != b), true
		case ir.OpLT:
			return b2i(a < b), true
		case ir.OpLE:
			return b2i(a <= b), true
		case ir.OpGT:
			return b2i(a > b), true
		case ir.OpGE:
			return b2i(a >= b), true
		case ir.OpAnd:
			return b2i(a != 0 && b != 0), true
		case ir.OpOr:
			return b2i(a != 0 || b != 0), true
		}
	}
	return 0, false
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
