package ir

import "testing"

func TestEvalInt(t *testing.T) {
	x, y := NewVar("x", Int32), NewVar("y", Int32)
	env := map[*Var]int64{x: -7, y: 2}
	for _, c := range []struct {
		name string
		e    Expr
		want int64
		ok   bool
	}{
		{"add", Add(x, Int(3)), -4, true},
		{"truncating div", Div(x, y), -3, true},
		{"truncating mod", Mod(x, y), -1, true},
		{"floordiv", FloorDiv(x, y), -4, true},
		{"floormod", FloorMod(x, y), 1, true},
		{"floordiv negative divisor", FloorDiv(Int(7), Int(-2)), -4, true},
		{"floormod negative divisor", FloorMod(Int(7), Int(-2)), -1, true},
		{"min max", Max(Min(x, y), Int(-5)), -5, true},
		{"compare and", And(LT(x, y), GE(y, Int(2))), 1, true},
		{"not", NotOf(EQ(x, y)), 1, true},
		{"select", SelectOf(LT(y, x), Int(10), Int(20)), 20, true},
		{"division by zero", FloorDiv(x, Int(0)), 0, false},
		{"unbound var", Add(NewVar("z", Int32), Int(1)), 0, false},
		{"float", FloatImmOf(Float32, 1.5), 0, false},
	} {
		got, ok := EvalInt(c.e, env)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("%s: EvalInt(%v) = %d, %v; want %d, %v", c.name, c.e, got, ok, c.want, c.ok)
		}
	}
}
