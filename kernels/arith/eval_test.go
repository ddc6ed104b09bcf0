package arith

import (
	"errors"
	"fmt"

	"dragonx/kernels/ir"
)

// evalInt is an independent reference evaluator for integer and bool
// expressions (bools as 0/1), used as the oracle of the property tests.
func evalInt(e ir.Expr, env map[*ir.Var]int64) (int64, error) {
	switch x := e.(type) {
	case *ir.IntImm:
		return x.Value(), nil
	case *ir.Var:
		v, ok := env[x]
		if !ok {
			return 0, fmt.Errorf("unbound %s", x.Name())
		}
		return v, nil
	case *ir.Not:
		v, err := evalInt(x.A(), env)
		return b2i(v == 0), err
	case *ir.Select:
		c, err := evalInt(x.Cond(), env)
		if err != nil {
			return 0, err
		}
		t, err := evalInt(x.True(), env)
		if err != nil {
			return 0, err
		}
		f, err := evalInt(x.False(), env)
		if err != nil {
			return 0, err
		}
		if c != 0 {
			return t, nil
		}
		return f, nil
	case *ir.Binary:
		a, err := evalInt(x.A(), env)
		if err != nil {
			return 0, err
		}
		b, err := evalInt(x.B(), env)
		if err != nil {
			return 0, err
		}
		// Operands beyond 2^40 overflow somewhere: no index gets there, and
		// the simplifier reasons in exact integers, so skip such inputs.
		const lim = 1 << 40
		if a > lim || a < -lim || b > lim || b < -lim {
			return 0, errOverflow
		}
		switch x.Op() {
		case ir.OpAdd:
			return a + b, nil
		case ir.OpSub:
			return a - b, nil
		case ir.OpMul:
			return a * b, nil
		case ir.OpDiv, ir.OpMod, ir.OpFloorDiv, ir.OpFloorMod:
			if b == 0 {
				return 0, fmt.Errorf("division by zero")
			}
			switch x.Op() {
			case ir.OpDiv:
				return a / b, nil
			case ir.OpMod:
				return a % b, nil
			case ir.OpFloorDiv:
				q := a / b
				if a%b != 0 && (a < 0) != (b < 0) {
					q--
				}
				return q, nil
			}
			m := a % b
			if m != 0 && (m < 0) != (b < 0) {
				m += b
			}
			return m, nil
		case ir.OpMin:
			return min(a, b), nil
		case ir.OpMax:
			return max(a, b), nil
		case ir.OpEQ:
			return b2i(a == b), nil
		case ir.OpNE:
			return b2i(a != b), nil
		case ir.OpLT:
			return b2i(a < b), nil
		case ir.OpLE:
			return b2i(a <= b), nil
		case ir.OpGT:
			return b2i(a > b), nil
		case ir.OpGE:
			return b2i(a >= b), nil
		case ir.OpAnd:
			return b2i(a != 0 && b != 0), nil
		case ir.OpOr:
			return b2i(a != 0 || b != 0), nil
		}
	}
	return 0, fmt.Errorf("cannot evaluate %s", ir.ExprString(e))
}

var errOverflow = errors.New("overflow")

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
