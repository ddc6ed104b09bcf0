package cgen

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"dragonx/kernels/ir"
)

// exprWriter prints ir expressions as C. Integer and bool expressions are
// computed in int64_t (an index that overflows int32 is wrong on the GPU
// too, but must not be undefined behaviour here); floating-point ones in
// float (the kernel) or double (the reference).
type exprWriter struct {
	// real is the C type of floating-point values: "float" or "double".
	real string
	// name returns the C expression of a variable.
	name func(*ir.Var) (string, error)
	// load returns the C expression of a buffer element.
	load func(*ir.BufferLoad) (string, error)
	// signed reports a variable that may be negative (nil: none may).
	signed func(*ir.Var) bool
}

func (w *exprWriter) suffix() string {
	if w.real == "float" {
		return "f"
	}
	return ""
}

func (w *exprWriter) expr(e ir.Expr) (string, error) {
	var sb strings.Builder
	if err := w.write(&sb, e); err != nil {
		return "", err
	}
	return sb.String(), nil
}

func (w *exprWriter) write(sb *strings.Builder, e ir.Expr) error {
	t := e.DType()
	if t == ir.Float16 {
		return fmt.Errorf("%w: float16 expression %s", ErrUnsupported, ir.ExprString(e))
	}
	switch x := e.(type) {
	case *ir.IntImm:
		if t == ir.Bool {
			if x.Value() != 0 {
				sb.WriteString("1")
			} else {
				sb.WriteString("0")
			}
			return nil
		}
		if x.Value() == math.MinInt64 {
			sb.WriteString("INT64_MIN")
			return nil
		}
		fmt.Fprintf(sb, "INT64_C(%d)", x.Value())
		return nil
	case *ir.FloatImm:
		sb.WriteString(w.floatLit(x.Value()))
		return nil
	case *ir.Var:
		n, err := w.name(x)
		if err != nil {
			return err
		}
		sb.WriteString(n)
		return nil
	case *ir.BufferLoad:
		s, err := w.load(x)
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
		return w.cast(sb, t, x.A())
	case *ir.Binary:
		return w.binary(sb, x)
	case *ir.Call:
		return w.call(sb, x)
	}
	return fmt.Errorf("%w: expression %T (%s)", ErrUnsupported, e, ir.ExprString(e))
}

func (w *exprWriter) floatLit(v float64) string {
	switch {
	case math.IsNaN(v):
		return "((" + w.real + ")NAN)"
	case math.IsInf(v, 1):
		return "((" + w.real + ")INFINITY)"
	case math.IsInf(v, -1):
		return "(-(" + w.real + ")INFINITY)"
	}
	if w.real == "float" {
		return "(" + strconv.FormatFloat(float64(float32(v)), 'x', -1, 32) + "f)"
	}
	return "(" + strconv.FormatFloat(v, 'x', -1, 64) + ")"
}

func (w *exprWriter) ternary(sb *strings.Builder, c, a, b ir.Expr) error {
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

func (w *exprWriter) cast(sb *strings.Builder, t ir.DType, a ir.Expr) error {
	var ct string
	switch {
	case t.IsFloat():
		ct = w.real
	case t == ir.Bool:
		sb.WriteString("((")
		if err := w.write(sb, a); err != nil {
			return err
		}
		sb.WriteString(") != 0)")
		return nil
	case t == ir.Int8:
		ct = "int8_t"
	case t == ir.UInt8:
		ct = "uint8_t"
	case t == ir.Int32:
		ct = "int32_t"
	default:
		ct = "int64_t"
	}
	if t.IsInt() {
		// Narrow, then widen back: integers are int64_t here.
		sb.WriteString("((int64_t)(" + ct + ")(")
		if err := w.write(sb, a); err != nil {
			return err
		}
		sb.WriteString("))")
		return nil
	}
	sb.WriteString("((" + ct + ")(")
	if err := w.write(sb, a); err != nil {
		return err
	}
	sb.WriteString("))")
	return nil
}

var binC = map[ir.BinOp]string{
	ir.OpAdd: "+", ir.OpSub: "-", ir.OpMul: "*", ir.OpEQ: "==", ir.OpNE: "!=",
	ir.OpLT: "<", ir.OpLE: "<=", ir.OpGT: ">", ir.OpGE: ">=", ir.OpAnd: "&&", ir.OpOr: "||",
}

func (w *exprWriter) binary(sb *strings.Builder, x *ir.Binary) error {
	float := x.A().DType().IsFloat()
	fn := ""
	switch x.Op() {
	case ir.OpDiv:
		if float {
			break
		}
		fn = "dx_div"
	case ir.OpMod:
		fn = "dx_mod"
		if float {
			fn = "fmod" + w.suffix()
		}
	case ir.OpFloorDiv, ir.OpFloorMod:
		if !float && w.nonNegative(x.A()) && positiveConst(x.B()) {
			// C's truncating / and % are floor division and modulo here,
			// and cheaper (no sign fix-up).
			op := " / "
			if x.Op() == ir.OpFloorMod {
				op = " % "
			}
			sb.WriteString("(")
			if err := w.write(sb, x.A()); err != nil {
				return err
			}
			sb.WriteString(op)
			if err := w.write(sb, x.B()); err != nil {
				return err
			}
			sb.WriteString(")")
			return nil
		}
		fn = "dx_floordiv"
		if x.Op() == ir.OpFloorMod {
			fn = "dx_floormod"
		}
		if float {
			fn += w.real
		}
	case ir.OpMin:
		fn = "dx_min"
		if float {
			fn = "dx_min" + w.real
		}
	case ir.OpMax:
		fn = "dx_max"
		if float {
			fn = "dx_max" + w.real
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
	op, ok := binC[x.Op()]
	if x.Op() == ir.OpDiv {
		op, ok = "/", true
	}
	if !ok {
		return fmt.Errorf("%w: operator %s", ErrUnsupported, x.Op())
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
// built from variables that cannot be (loop variables, threadIdx and
// blockIdx; not those w.signed names), non-negative constants, additions,
// multiplications, and divisions, modulos, minima and maxima of such.
func (w *exprWriter) nonNegative(e ir.Expr) bool {
	switch x := e.(type) {
	case *ir.IntImm:
		return x.Value() >= 0
	case *ir.Var:
		return w.signed == nil || !w.signed(x)
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

func (w *exprWriter) call(sb *strings.Builder, x *ir.Call) error {
	args := x.Args()
	if x.Op() == ir.CallIfThenElse {
		if len(args) != 3 {
			return fmt.Errorf("%w: if_then_else with %d arguments", ErrUnsupported, len(args))
		}
		return w.ternary(sb, args[0], args[1], args[2])
	}
	if !x.DType().IsFloat() {
		return fmt.Errorf("%w: %s of %s", ErrUnsupported, x.Op(), x.DType())
	}
	s := w.suffix()
	var fn string
	switch x.Op() {
	case ir.CallExp:
		fn = "exp" + s
	case ir.CallLog:
		fn = "log" + s
	case ir.CallSqrt:
		fn = "sqrt" + s
	case ir.CallRsqrt:
		fn = "dx_rsqrt" + w.real
	case ir.CallTanh:
		fn = "tanh" + s
	case ir.CallSigmoid:
		fn = "dx_sigmoid" + w.real
	case ir.CallErf:
		fn = "erf" + s
	case ir.CallPow:
		fn = "pow" + s
	case ir.CallFabs:
		fn = "fabs" + s
	case ir.CallFloor:
		fn = "floor" + s
	case ir.CallCeil:
		fn = "ceil" + s
	case ir.CallRound:
		fn = "nearbyint" + s
	case ir.CallSin:
		fn = "sin" + s
	case ir.CallCos:
		fn = "cos" + s
	default:
		return fmt.Errorf("%w: call %s", ErrUnsupported, x.Op())
	}
	if len(args) != x.Op().Arity() {
		return fmt.Errorf("%w: %s with %d arguments", ErrUnsupported, x.Op(), len(args))
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

// prelude is the C both generated programs start with: headers, the
// integer helpers (TVM's truncated and floor division), NaN-propagating
// min and max (a poisoned value must not vanish in a max), the bounds
// check and the reading and writing of buffers.
//
// A program is preludeHead, its table of access sites (dx_sites: what an
// out-of-bounds report names), prelude, then its code.
const preludeHead = `#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
`

const prelude = `
__attribute__((noreturn, cold, noinline)) static void dx_oob(int site, int64_t i, int64_t n) {
	fprintf(stderr, "dragonx-numeric: out of bounds: %s: index %lld, outside [0, %lld)\n", dx_sites[site], (long long)i, (long long)n);
	exit(3);
}
static inline int64_t dx_ck(int64_t i, int64_t n, int site) {
	if (__builtin_expect((uint64_t)i >= (uint64_t)n, 0)) dx_oob(site, i, n);
	return i;
}
__attribute__((noreturn, cold, noinline)) static void dx_die(const char *msg) {
	fprintf(stderr, "dragonx-numeric: %s\n", msg);
	exit(2);
}
static inline int64_t dx_div(int64_t a, int64_t b) { if (b == 0) dx_die("integer division by zero"); return a / b; }
static inline int64_t dx_mod(int64_t a, int64_t b) { if (b == 0) dx_die("integer modulo by zero"); return a % b; }
static inline int64_t dx_floordiv(int64_t a, int64_t b) {
	if (b == 0) dx_die("integer division by zero");
	int64_t q = a / b;
	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t dx_floormod(int64_t a, int64_t b) {
	if (b == 0) dx_die("integer modulo by zero");
	int64_t r = a % b;
	return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t dx_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t dx_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline float dx_minfloat(float a, float b) { return (a != a || b != b) ? NAN : (a < b ? a : b); }
static inline float dx_maxfloat(float a, float b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }
static inline double dx_mindouble(double a, double b) { return (a != a || b != b) ? NAN : (a < b ? a : b); }
static inline double dx_maxdouble(double a, double b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }
static inline float dx_floordivfloat(float a, float b) { return floorf(a / b); }
static inline float dx_floormodfloat(float a, float b) { return a - floorf(a / b) * b; }
static inline double dx_floordivdouble(double a, double b) { return floor(a / b); }
static inline double dx_floormoddouble(double a, double b) { return a - floor(a / b) * b; }
static inline float dx_rsqrtfloat(float a) { return 1.0f / sqrtf(a); }
static inline double dx_rsqrtdouble(double a) { return 1.0 / sqrt(a); }
static inline float dx_sigmoidfloat(float a) { return 1.0f / (1.0f + expf(-a)); }
static inline double dx_sigmoiddouble(double a) { return 1.0 / (1.0 + exp(-a)); }

static void dx_read(void *p, size_t n) {
	unsigned char *c = p;
	while (n > 0) {
		size_t k = fread(c, 1, n, stdin);
		if (k == 0) dx_die("short input");
		c += k;
		n -= k;
	}
}
static void dx_write(const void *p, size_t n) {
	if (fwrite(p, 1, n, stdout) != n) dx_die("cannot write the output");
}
static void *dx_alloc(size_t n) {
	void *p = malloc(n ? n : 1);
	if (p == NULL) dx_die("out of memory");
	return p;
}
static void dx_poisonf(float *p, int64_t n) { for (int64_t i = 0; i < n; i++) p[i] = NAN; }
static void dx_poisond(double *p, int64_t n) { for (int64_t i = 0; i < n; i++) p[i] = NAN; }
`

// cName turns an IR name into a C identifier fragment.
func cName(s string) string {
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

// cString quotes s as a C string literal.
func cString(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r < 32 || r >= 127:
			sb.WriteByte('?')
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}
