package cexpr

import (
	"errors"
	"math"
	"strconv"
	"testing"

	"dragonx/kernels/ir"
)

var errTest = errors.New("test dialect")

// testDialect writes reals of their own type, integers in decimal and
// every binary operator that C lacks as a call named after it.
func testDialect(form FloatForm) *Dialect {
	return &Dialect{
		Err: errTest,
		Int: func(v int64, _ ir.DType) (string, error) { return strconv.FormatInt(v, 10), nil },
		Real: func(t ir.DType) string {
			if t == ir.Float64 {
				return "double"
			}
			return "float"
		},
		Float: form,
		Cast:  func(ir.DType) (string, string) { return "((T)(", "))" },
		Func: func(op ir.BinOp, _ ir.DType) (string, error) {
			switch op {
			case ir.OpFloorDiv, ir.OpFloorMod, ir.OpMin, ir.OpMax:
				return "f_" + op.String(), nil
			}
			return "", nil
		},
		Call: func(op ir.CallOp, t ir.DType) (string, error) {
			if n, ok := MathName(op); ok {
				return n, nil
			}
			return "", errTest
		},
	}
}

// TestFloatForms: both literal forms are exact, carry the suffix of the
// real type, and parenthesise what would otherwise parse differently.
func TestFloatForms(t *testing.T) {
	for _, c := range []struct {
		form FloatForm
		v    *ir.FloatImm
		want string
	}{
		{Hex, ir.F32(3), "(0x1.8p+01f)"},
		{Hex, ir.FloatImmOf(ir.Float64, -0.1), "(-0x1.999999999999ap-04)"},
		{Decimal, ir.F32(3), "3.0f"},
		{Decimal, ir.F32(0.1), "0.1f"},
		{Decimal, ir.FloatImmOf(ir.Float64, 0.1), "0.1"},
		{Decimal, ir.F32(math.Copysign(0, -1)), "(-0.0f)"},
		{Decimal, ir.F32(-2.5e-20), "(-2.5e-20f)"},
		{Decimal, ir.F32(math.Inf(-1)), "(-(float)INFINITY)"},
		{Hex, ir.FloatImmOf(ir.Float64, math.NaN()), "((double)NAN)"},
	} {
		w := &Writer{D: testDialect(c.form)}
		got, err := w.Expr(c.v)
		if err != nil || got != c.want {
			t.Errorf("form %d, %v: %q, %v; want %q", c.form, c.v.Value(), got, err, c.want)
		}
	}
}

// TestFloorDivision: C's / and % stand for floor division and modulo only
// where the dividend cannot be negative (Signed variables can) and the
// divisor is a positive constant.
func TestFloorDivision(t *testing.T) {
	i, s := ir.NewVar("i", ir.Int32), ir.NewVar("s", ir.Int32)
	w := &Writer{
		D:      testDialect(Decimal),
		Name:   func(v *ir.Var) (string, error) { return v.Name(), nil },
		Signed: func(v *ir.Var) bool { return v == s },
	}
	for _, c := range []struct {
		e    ir.Expr
		want string
	}{
		{ir.FloorDiv(ir.Add(ir.Mul(i, ir.Int(3)), ir.Int(1)), ir.Int(4)), "(((i * 3) + 1) / 4)"},
		{ir.FloorMod(i, ir.Int(4)), "(i % 4)"},
		{ir.FloorDiv(s, ir.Int(4)), "f_floordiv(s, 4)"},
		{ir.FloorDiv(ir.Add(i, ir.Int(-1)), ir.Int(4)), "f_floordiv((i + -1), 4)"},
		{ir.FloorMod(i, ir.Int(-4)), "f_floormod(i, -4)"},
		{ir.FloorMod(i, i), "f_floormod(i, i)"},
	} {
		got, err := w.Expr(c.e)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", ir.ExprString(c.e), got, err, c.want)
		}
	}
}

// TestErrors: failures wrap the dialect's error.
func TestErrors(t *testing.T) {
	w := &Writer{D: testDialect(Hex)}
	for _, e := range []ir.Expr{
		ir.FloatImmOf(ir.Float16, 1),
		ir.NewCall(ir.CallSigmoid, ir.F32(1)),
	} {
		if _, err := w.Expr(e); !errors.Is(err, errTest) {
			t.Errorf("%s: %v, want the dialect's error", ir.ExprString(e), err)
		}
	}
}
