// Package cexpr prints ir expressions in the C family: the C of the
// numerical gate (kernels/cgen) and the CUDA C++ of kernels/cudagen. The
// shape of the output (parentheses, ternaries, casts, infix operators and
// calls) is shared; what differs between the two is a Dialect: the integer
// type and its literals, the real type and its literals, and the names of
// the functions that compute what C has no operator for.
package cexpr

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"dragonx/kernels/ir"
)

// FloatForm is how a dialect writes finite floating-point constants.
type FloatForm int

const (
	// Hex writes the exact hexadecimal literal, always parenthesised:
	// (0x1.8p+01f).
	Hex FloatForm = iota
	// Decimal writes the shortest decimal that reads back as the same
	// value, parenthesised only when negative: 3.0f, (-0.5f).
	Decimal
)

// Dialect is what differs between the C-family languages a Writer prints.
type Dialect struct {
	// Err is the error every failure wraps (the generator's
	// ErrUnsupported).
	Err error
	// Int prints an integer or bool constant of dtype t, or fails naming
	// why it cannot be written.
	Int func(v int64, t ir.DType) (string, error)
	// Real is the C type computing floating-point values of dtype t:
	// "float" or "double".
	Real func(t ir.DType) string
	// Float is the form of finite floating-point constants.
	Float FloatForm
	// Cast returns the text written before and after the operand of a
	// cast to t.
	Cast func(t ir.DType) (open, close string)
	// Func names the function computing binary op on operands of dtype t,
	// or returns "" to write op as an infix operator. The writer does not
	// ask it for an integer floor division or modulo of a non-negative
	// dividend by a positive constant (C's / and % then), nor for the
	// modulo of reals (fmod).
	Func func(op ir.BinOp, t ir.DType) (string, error)
	// Call names the function computing intrinsic op (not if_then_else)
	// of floating-point dtype t. MathName has the C library's base names.
	Call func(op ir.CallOp, t ir.DType) (string, error)
}

// Writer prints ir expressions in its dialect.
type Writer struct {
	D *Dialect
	// Name returns the expression of a variable.
	Name func(*ir.Var) (string, error)
	// Load returns the expression of a buffer element.
	Load func(*ir.BufferLoad) (string, error)
	// Signed reports a variable that may be negative (nil: none may).
	Signed func(*ir.Var) bool
}

// Expr prints e.
func (w *Writer) Expr(e ir.Expr) (string, error) {
	var sb strings.Builder
	if err := w.write(&sb, e); err != nil {
		return "", err
	}
	return sb.String(), nil
}

func (w *Writer) write(sb *strings.Builder, e ir.Expr) error {
	t := e.DType()
	if t == ir.Float16 {
		return fmt.Errorf("%w: float16 expression %s", w.D.Err, ir.ExprString(e))
	}
	switch x := e.(type) {
	case *ir.IntImm:
		s, err := w.D.Int(x.Value(), t)
		if err != nil {
			return err
		}
		sb.WriteString(s)
		return nil
	case *ir.FloatImm:
		sb.WriteString(w.floatLit(x.Value(), t))
		return nil
	case *ir.Var:
		n, err := w.Name(x)
		if err != nil {
			return err
		}
		sb.WriteString(n)
		return nil
	case *ir.BufferLoad:
		s, err := w.Load(x)
		if err != nil {
			return err
		}
		sb.WriteString(s)
		return nil
	case *ir.Not:
		sb.WriteString("(!")
		if err := w.write(sb, x.A()); err != nil {
			return err
		}
		sb.WriteString(")")
		return nil
	case *ir.Select:
		return w.ternary(sb, x.Cond(), x.True(), x.False())
	case *ir.Cast:
		open, close := w.D.Cast(t)
		sb.WriteString(open)
		if err := w.write(sb, x.A()); err != nil {
			return err
		}
		sb.WriteString(close)
		return nil
	case *ir.Binary:
		return w.binary(sb, x)
	case *ir.Call:
		return w.call(sb, x)
	}
	return fmt.Errorf("%w: expression %T (%s)", w.D.Err, e, ir.ExprString(e))
}

// suffix is the C library's suffix of functions on reals of dtype t: "f"
// for float, none for double.
func (w *Writer) suffix(t ir.DType) string {
	if w.D.Real(t) == "float" {
		return "f"
	}
	return ""
}

// floatLit prints v exactly as a constant of the real type of t.
func (w *Writer) floatLit(v float64, t ir.DType) string {
	real := w.D.Real(t)
	switch {
	case math.IsNaN(v):
		return "((" + real + ")NAN)"
	case math.IsInf(v, 1):
		return "((" + real + ")INFINITY)"
	case math.IsInf(v, -1):
		return "(-(" + real + ")INFINITY)"
	}
	bits := 64
	if real == "float" {
		bits = 32
		v = float64(float32(v))
	}
	suffix := w.suffix(t)
	if w.D.Float == Hex {
		return "(" + strconv.FormatFloat(v, 'x', -1, bits) + suffix + ")"
	}
	s := strconv.FormatFloat(v, 'g', -1, bits)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	if strings.HasPrefix(s, "-") {
		return "(" + s + suffix + ")"
	}
	return s + suffix
}

func (w *Writer) ternary(sb *strings.Builder, c, a, b ir.Expr) error {
	sb.WriteString("(")
	for i, e := range []ir.Expr{c, a, b} {
		if i == 1 {
			sb.WriteString(" ? ")
		} else if i == 2 {
			sb.WriteString(" : ")
		}
		if err := w.write(sb, e); err != nil {
			return err
		}
	}
	sb.WriteString(")")
	return nil
}

var infix = map[ir.BinOp]string{
	ir.OpAdd: "+", ir.OpSub: "-", ir.OpMul: "*", ir.OpDiv: "/", ir.OpMod: "%", ir.OpEQ: "==", ir.OpNE: "!=",
	ir.OpLT: "<", ir.OpLE: "<=", ir.OpGT: ">", ir.OpGE: ">=", ir.OpAnd: "&&", ir.OpOr: "||",
	// Only where the dividend is non-negative and the divisor a positive
	// constant: C's truncating / and % are then floor division and modulo.
	ir.OpFloorDiv: "/", ir.OpFloorMod: "%",
}

func (w *Writer) binary(sb *strings.Builder, x *ir.Binary) error {
	at := x.A().DType()
	float := at.IsFloat()
	fn := ""
	switch {
	case (x.Op() == ir.OpFloorDiv || x.Op() == ir.OpFloorMod) && !float && w.nonNegative(x.A()) && positiveConst(x.B()):
		// Infix: cheaper than the sign fix-up.
	case x.Op() == ir.OpMod && float:
		fn = "fmod" + w.suffix(at)
	default:
		var err error
		if fn, err = w.D.Func(x.Op(), at); err != nil {
			return err
		}
	}
	if fn != "" {
		sb.WriteString(fn + "(")
		if err := w.write(sb, x.A()); err != nil {
			return err
		}
		sb.WriteString(", ")
		if err := w.write(sb, x.B()); err != nil {
			return err
		}
		sb.WriteString(")")
		return nil
	}
	op, ok := infix[x.Op()]
	if !ok {
		return fmt.Errorf("%w: operator %s", w.D.Err, x.Op())
	}
	sb.WriteString("(")
	if err := w.write(sb, x.A()); err != nil {
		return err
	}
	sb.WriteString(" " + op + " ")
	if err := w.write(sb, x.B()); err != nil {
		return err
	}
	sb.WriteString(")")
	return nil
}

// nonNegative reports whether integer expression e is never negative:
// built from variables that cannot be (loop variables, thread and block
// indices; not those w.Signed names), non-negative constants, sums,
// products, and divisions, modulos, minima and maxima of such.
func (w *Writer) nonNegative(e ir.Expr) bool {
	switch x := e.(type) {
	case *ir.IntImm:
		return x.Value() >= 0
	case *ir.Var:
		return w.Signed == nil || !w.Signed(x)
	case *ir.Cast:
		return x.DType().IsInt() && x.A().DType().IsInt() && x.DType().Bits() >= x.A().DType().Bits() && w.nonNegative(x.A())
	case *ir.Binary:
		switch x.Op() {
		case ir.OpAdd, ir.OpMul, ir.OpMin, ir.OpMax:
			return w.nonNegative(x.A()) && w.nonNegative(x.B())
		case ir.OpFloorDiv, ir.OpFloorMod, ir.OpDiv, ir.OpMod:
			return w.nonNegative(x.A()) && positiveConst(x.B())
		}
	}
	return false
}

func positiveConst(e ir.Expr) bool {
	c, ok := e.(*ir.IntImm)
	return ok && c.Value() > 0
}

func (w *Writer) call(sb *strings.Builder, x *ir.Call) error {
	args := x.Args()
	if len(args) != x.Op().Arity() {
		return fmt.Errorf("%w: %s with %d arguments", w.D.Err, x.Op(), len(args))
	}
	if x.Op() == ir.CallIfThenElse {
		return w.ternary(sb, args[0], args[1], args[2])
	}
	t := x.DType()
	if !t.IsFloat() {
		return fmt.Errorf("%w: %s of %s", w.D.Err, x.Op(), t)
	}
	fn, err := w.D.Call(x.Op(), t)
	if err != nil {
		return err
	}
	sb.WriteString(fn + "(")
	for i, a := range args {
		if i > 0 {
			sb.WriteString(", ")
		}
		if err := w.write(sb, a); err != nil {
			return err
		}
	}
	sb.WriteString(")")
	return nil
}

var mathNames = map[ir.CallOp]string{
	ir.CallExp: "exp", ir.CallLog: "log", ir.CallSqrt: "sqrt", ir.CallTanh: "tanh", ir.CallErf: "erf",
	ir.CallPow: "pow", ir.CallFabs: "fabs", ir.CallFloor: "floor", ir.CallCeil: "ceil",
	ir.CallSin: "sin", ir.CallCos: "cos",
}

// MathName is the C library's function (double; add "f" for float) that
// computes op, if it has one of the same meaning (round, rsqrt and sigmoid
// are the dialect's choice).
func MathName(op ir.CallOp) (string, bool) {
	n, ok := mathNames[op]
	return n, ok
}

// Ident turns an IR name into a C identifier fragment: every character
// other than an ASCII letter, digit or underscore becomes an underscore.
func Ident(s string) string {
	var sb strings.Builder
	for _, r := range s {
		if r < 128 && (r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	return sb.String()
}
