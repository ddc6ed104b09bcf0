package ir

// EvalInt evaluates an integer or bool expression (bools as 0/1) over
// variable values, with TVM's semantics for each division operator
// (truncating div/mod, flooring floordiv/floormod); ok is false for
// anything else (loads, floats, an unbound variable, division by zero).
func EvalInt(e Expr, env map[*Var]int64) (int64, bool) {
	switch x := e.(type) {
	case *IntImm:
		return x.Value(), true
	case *Var:
		v, ok := env[x]
		return v, ok
	case *Not:
		a, ok := EvalInt(x.A(), env)
		return b2i(a == 0), ok
	case *Select:
		c, ok1 := EvalInt(x.Cond(), env)
		t, ok2 := EvalInt(x.True(), env)
		f, ok3 := EvalInt(x.False(), env)
		if c != 0 {
			return t, ok1 && ok2 && ok3
		}
		return f, ok1 && ok2 && ok3
	case *Binary:
		a, ok := EvalInt(x.A(), env)
		if !ok {
			return 0, false
		}
		b, ok := EvalInt(x.B(), env)
		if !ok {
			return 0, false
		}
		switch x.Op() {
		case OpAdd:
			return a + b, true
		case OpSub:
			return a - b, true
		case OpMul:
			return a * b, true
		case OpDiv, OpMod, OpFloorDiv, OpFloorMod:
			if b == 0 {
				return 0, false
			}
			q, m := a/b, a%b
			switch x.Op() {
			case OpDiv:
				return q, true
			case OpMod:
				return m, true
			case OpFloorDiv:
				if m != 0 && (m < 0) != (b < 0) {
					q--
				}
				return q, true
			}
			if m != 0 && (m < 0) != (b < 0) {
				m += b
			}
			return m, true
		case OpMin:
			return min(a, b), true
		case OpMax:
			return max(a, b), true
		case OpEQ:
			return b2i(a == b), true
		case OpNE:
			return b2i(a != b), true
		case OpLT:
			return b2i(a < b), true
		case OpLE:
			return b2i(a <= b), true
		case OpGT:
			return b2i(a > b), true
		case OpGE:
			return b2i(a >= b), true
		case OpAnd:
			return b2i(a != 0 && b != 0), true
		case OpOr:
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
