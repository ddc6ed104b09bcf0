package arith

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"dragonx/kernels/ir"
)

var seed = flag.Uint64("seed", 1, "seed of the property tests")

func testRand(t *testing.T) *rand.Rand {
	t.Helper()
	if *seed != 1 {
		t.Logf("seed %d", *seed)
	}
	return rand.New(rand.NewPCG(*seed, 0x5eed))
}

type vars struct{ i, j, k, x, y *ir.Var }

func newVars() vars {
	return vars{ir.NewVar("i", ir.Int32), ir.NewVar("j", ir.Int32), ir.NewVar("k", ir.Int32),
		ir.NewVar("x", ir.Int32), ir.NewVar("y", ir.Int32)}
}

func c(v int64) ir.Expr { return ir.Int(v) }

func TestSimplify(t *testing.T) {
	v := newVars()
	i, j, k, x, y := v.i, v.j, v.k, v.x, v.y
	tests := []struct {
		name string
		in   ir.Expr
		want string
	}{
		{"fold", ir.Add(c(2), ir.Mul(c(3), c(4))), "14"},
		{"collect", ir.Add(ir.Add(i, j), ir.Sub(i, j)), "i * 2"},
		{"cancel", ir.Sub(ir.Add(ir.Mul(i, c(4)), j), ir.Mul(i, c(4))), "j"},
		{"order by coefficient", ir.Add(j, ir.Mul(i, c(16))), "i * 16 + j"},
		{"negative first", ir.Sub(c(3), i), "3 - i"},
		{"negative only", ir.Sub(c(0), i), "i * -1"},
		{"constant last", ir.Add(c(-3), i), "i - 3"},
		{"mul one", ir.Mul(i, c(1)), "i"},
		{"floordiv split", ir.FloorDiv(ir.Add(ir.Mul(i, c(16)), j), c(16)), "i"},
		{"floormod split", ir.FloorMod(ir.Add(ir.Mul(i, c(16)), j), c(16)), "j"},
		{"floordiv distribute", ir.FloorDiv(ir.Add(ir.Mul(i, c(32)), k), c(16)), "i * 2 + k // 16"},
		{"floormod drop multiple", ir.FloorMod(ir.Add(ir.Mul(i, c(32)), k), c(16)), "k % 16"},
		{"floordiv nested", ir.FloorDiv(ir.FloorDiv(k, c(4)), c(8)), "k // 32"},
		{"floormod nested", ir.FloorMod(ir.FloorMod(k, c(32)), c(8)), "k % 8"},
		{"floordiv gcd", ir.FloorDiv(ir.Mul(k, c(4)), c(8)), "k // 2"},
		{"floormod gcd", ir.FloorMod(ir.Mul(k, c(4)), c(8)), "k % 2 * 4"},
		{"fuse back", ir.Add(ir.Mul(ir.FloorDiv(k, c(16)), c(16)), ir.FloorMod(k, c(16))), "k"},
		{"floordiv small", ir.FloorDiv(j, c(16)), "0"},
		// TVM's floordiv(x*c1 + y, c2) residue rule (the compute-at region
		// of test_compute_at_non_perfect_channel_group: c_o*360 // 16 is
		// c_o*22 for c_o in [0, 2)).
		{"floordiv residue", ir.FloorDiv(ir.Mul(i, c(18)), c(16)), "i"},
		{"floordiv residue with offset", ir.FloorDiv(ir.Add(ir.Mul(i, c(18)), c(33)), c(16)), "i + 2"},
		{"floordiv residue, one more", ir.FloorDiv(ir.Mul(j, c(17)), c(16)), "j"},
		{"floordiv residue too wide", ir.FloorDiv(ir.Mul(i, c(36)), c(16)), "i * 9 // 4"},
		{"floordiv shifted", ir.FloorDiv(ir.Add(j, c(32)), c(16)), "2"},
		{"min decided", ir.Min(j, c(100)), "j"},
		{"max decided", ir.Max(ir.Add(i, c(1)), i), "i + 1"},
		{"min open", ir.Min(i, j), "T.min(i, j)"},
		{"compare true", ir.LT(j, c(16)), "T.bool(True)"},
		{"compare false", ir.GE(j, c(16)), "T.bool(False)"},
		{"compare swap", ir.GE(x, c(3)), "3 <= x"},
		{"and fold", ir.And(ir.LT(j, c(16)), ir.LT(x, y)), "x < y"},
		// TVM's rules that gather an integer comparison's constants on one
		// side (compute_at's T.where(16 <= i) in test_compute_at_concat).
		{"compare shifted", ir.GE(ir.Sub(x, c(16)), c(0)), "16 <= x"},
		{"compare constant right", ir.LT(ir.Add(x, c(3)), c(10)), "x < 7"},
		{"compare constant left", ir.LT(c(5), ir.Sub(c(10), x)), "x < 5"},
		{"compare negated term", ir.LT(ir.Sub(c(10), x), c(4)), "6 < x"},
		{"compare le", ir.LE(ir.Add(x, c(2)), c(9)), "x <= 7"},
		{"compare gt", ir.GT(ir.Add(x, y), c(3)), "3 < x + y"},
		{"or fold", ir.Or(ir.LT(j, c(16)), ir.LT(x, y)), "T.bool(True)"},
		{"select fold", ir.SelectOf(ir.LT(j, c(100)), x, y), "x"},
		{"truncdiv nonneg", ir.Div(ir.Add(ir.Mul(i, c(8)), j), c(8)), "i + j // 8"},
		{"fused split", ir.FloorDiv(ir.Add(ir.Mul(x, c(32)), k), c(16)), "x * 2 + k // 16"},
		{"fused split small", ir.FloorDiv(ir.Add(ir.Mul(x, c(32)), j), c(16)), "x * 2"},
		{"float fold f32", ir.Add(ir.F32(0.1), ir.F32(0.2)), "T.float32(0.30000001192092896)"},
		{"cast fold", ir.CastTo(ir.Float32, ir.Add(c(1), c(2))), "T.float32(3)"},
		{"if_then_else fold", ir.IfElse(ir.LT(j, c(16)), ir.F32(1), ir.F32(2)), "T.float32(1)"},
		// TVM's floordiv(x + c1, 2) - floordiv(x + c2, 2) rule (T2D's
		// compute-at extent).
		{"halves", ir.Add(ir.Sub(ir.FloorDiv(ir.Add(x, c(1)), c(2)), ir.FloorDiv(x, c(2))), c(1)), "x % 2 + 1"},
		{"halves shifted", ir.Sub(ir.FloorDiv(ir.Add(x, c(3)), c(2)), ir.FloorDiv(ir.Add(x, c(2)), c(2))), "x % 2"},
		{"halves reversed", ir.Sub(ir.FloorDiv(x, c(2)), ir.FloorDiv(ir.Add(x, c(1)), c(2))), "x % 2 * -1"},
		{"halves scaled", ir.Mul(ir.Sub(ir.FloorDiv(ir.Add(x, c(5)), c(2)), ir.FloorDiv(x, c(2))), c(96)), "x % 2 * 96 + 192"},
		{"thirds left alone", ir.Sub(ir.FloorDiv(ir.Add(x, c(1)), c(3)), ir.FloorDiv(x, c(3))), "(x + 1) // 3 - x // 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAnalyzer()
			a.BindRange(i, 0, 8)
			a.BindRange(j, 0, 16)
			a.BindRange(k, 0, 128)
			got := ir.ExprString(a.Simplify(tt.in))
			if got != tt.want {
				t.Errorf("Simplify(%s) = %s, want %s", ir.ExprString(tt.in), got, tt.want)
			}
		})
	}
}

// TestLoopBound bounds the variable of a loop of symbolic extent by the
// largest value of the extent, and relaxes it over [0, extent - 1].
func TestLoopBound(t *testing.T) {
	v := newVars()
	a := NewAnalyzer()
	a.BindRange(v.i, 0, 4)
	l := ir.LoopExpr(v.j, ir.Add(ir.Mul(ir.FloorMod(v.i, c(2)), c(96)), c(96)), nil)
	if got := a.LoopBound(l); got != (Bound{0, 191}) {
		t.Errorf("LoopBound = %v, want [0, 191]", got)
	}
	if got := a.LoopSet(l).String(); got != "[0, i % 2 * 96 + 95]" {
		t.Errorf("LoopSet = %s", got)
	}
	// The set of j + k, k in range(j + 1) relaxed with j: the end of k's
	// set uses j, relaxed in turn.
	k := ir.LoopExpr(v.k, ir.Add(v.j, c(1)), nil)
	dom := map[*ir.Var]IntSet{v.j: RangeSet(0, 8), v.k: a.LoopSet(k)}
	if got := a.EvalSet(ir.Add(v.j, v.k), dom).String(); got != "[0, 14]" {
		t.Errorf("EvalSet = %s, want [0, 14]", got)
	}
}

func TestBound(t *testing.T) {
	v := newVars()
	i, j, x := v.i, v.j, v.x
	tests := []struct {
		in   ir.Expr
		want Bound
	}{
		{ir.Add(ir.Mul(i, c(16)), j), Bound{0, 127}},
		{ir.Sub(i, i), Point(0)},
		{ir.FloorDiv(j, c(4)), Bound{0, 3}},
		{ir.FloorMod(ir.Add(j, c(3)), c(4)), Bound{0, 3}},
		{ir.FloorMod(i, c(16)), Bound{0, 7}},
		{ir.Sub(c(10), j), Bound{-5, 10}},
		{ir.Mul(i, j), Bound{0, 105}},
		{ir.Min(i, j), Bound{0, 7}},
		{ir.Add(x, c(1)), Everything()},
		{ir.FloorMod(x, c(5)), Bound{0, 4}},
		{ir.FloorDiv(ir.Sub(i, c(3)), c(2)), Bound{-2, 2}},
		// A digit of a fused loop with a symbolic inner extent e:
		// floordiv(floormod(x, e*5), e) lies in [0, 4] when e >= 1.
		{ir.FloorDiv(ir.FloorMod(x, ir.Mul(ir.Mul(c(256), ir.Add(ir.FloorMod(i, c(2)), c(4))), c(5))), ir.Mul(c(256), ir.Add(ir.FloorMod(i, c(2)), c(4)))), Bound{0, 4}},
		{ir.FloorDiv(ir.FloorMod(x, ir.Mul(ir.Mul(c(256), ir.Sub(i, c(1))), c(5))), ir.Mul(c(256), ir.Sub(i, c(1)))), Everything()},
	}
	for _, tt := range tests {
		a := NewAnalyzer()
		a.BindRange(i, 0, 8)
		a.BindRange(j, 0, 16)
		if got := a.Bound(tt.in); got != tt.want {
			t.Errorf("Bound(%s) = %v, want %v", ir.ExprString(tt.in), got, tt.want)
		}
	}
}

// randExpr builds a random integer expression over vs.
func randExpr(r *rand.Rand, vs []*ir.Var, depth int) ir.Expr {
	if depth == 0 || r.IntN(4) == 0 {
		if r.IntN(3) == 0 {
			return c(int64(r.IntN(21) - 10))
		}
		return vs[r.IntN(len(vs))]
	}
	a := randExpr(r, vs, depth-1)
	b := randExpr(r, vs, depth-1)
	switch r.IntN(10) {
	case 0, 1:
		return ir.Add(a, b)
	case 2:
		return ir.Sub(a, b)
	case 3:
		return ir.Mul(a, c(int64(r.IntN(9)-4)))
	case 4:
		return ir.FloorDiv(a, c(int64(r.IntN(8)+1)))
	case 5:
		return ir.FloorMod(a, c(int64(r.IntN(8)+1)))
	case 6:
		return ir.Min(a, b)
	case 7:
		return ir.Max(a, b)
	case 8:
		return ir.SelectOf(ir.LT(a, b), a, b)
	default:
		return ir.Mul(a, b)
	}
}

func TestSimplifyProperty(t *testing.T) {
	r := testRand(t)
	v := newVars()
	vs := []*ir.Var{v.i, v.j, v.k, v.x}
	n := 3000
	if testing.Short() {
		n = 500
	}
	for iter := 0; iter < n; iter++ {
		e := randExpr(r, vs, 4)
		a := NewAnalyzer()
		ext := map[*ir.Var]int64{}
		for _, w := range vs[:3] {
			ext[w] = int64(r.IntN(20) + 1)
			a.BindRange(w, 0, ext[w])
		}
		s := a.Simplify(e)
		b := a.Bound(e)
		for p := 0; p < 10; p++ {
			env := map[*ir.Var]int64{v.x: int64(r.IntN(41) - 20)}
			for _, w := range vs[:3] {
				env[w] = int64(r.IntN(int(ext[w])))
			}
			want, err := evalInt(e, env)
			if err != nil {
				continue
			}
			got, err := evalInt(s, env)
			if err != nil {
				t.Fatalf("Simplify(%s) = %s, which does not evaluate: %v", ir.ExprString(e), ir.ExprString(s), err)
			}
			if got != want {
				t.Fatalf("Simplify(%s) = %s: at %v got %d, want %d", ir.ExprString(e), ir.ExprString(s), envString(env), got, want)
			}
			if want < b.Min || want > b.Max {
				t.Fatalf("Bound(%s) = %v, but the value at %v is %d", ir.ExprString(e), b, envString(env), want)
			}
		}
	}
}

// TestSimplifyCompareProperty checks the comparison rewrites on every
// comparison of x + c, x - c, c + x, c - x or x with a constant, both
// ways round, for x over [-20, 20].
func TestSimplifyCompareProperty(t *testing.T) {
	x := newVars().x
	forms := func(k int64) []ir.Expr {
		return []ir.Expr{x, ir.Add(x, c(k)), ir.Sub(x, c(k)), ir.Add(c(k), x), ir.Sub(c(k), x)}
	}
	ops := []func(a, b ir.Expr) ir.Expr{ir.LT, ir.LE, ir.GT, ir.GE}
	for k := int64(-3); k <= 3; k++ {
		for m := int64(-3); m <= 3; m++ {
			for _, f := range forms(k) {
				for _, op := range ops {
					for _, e := range []ir.Expr{op(f, c(m)), op(c(m), f)} {
						s := NewAnalyzer().Simplify(e)
						for v := int64(-20); v <= 20; v++ {
							env := map[*ir.Var]int64{x: v}
							want, err1 := evalInt(e, env)
							got, err2 := evalInt(s, env)
							if err1 != nil || err2 != nil || got != want {
								t.Fatalf("Simplify(%s) = %s: at x=%d got %d (%v), want %d (%v)", ir.ExprString(e), ir.ExprString(s), v, got, err2, want, err1)
							}
						}
					}
				}
			}
		}
	}
}

func envString(env map[*ir.Var]int64) string {
	s := ""
	for _, name := range []string{"i", "j", "k", "x", "y"} {
		for v, val := range env {
			if v.Name() == name {
				s += " " + name + "=" + ir.ExprString(ir.Int(val))
			}
		}
	}
	return s
}

func TestEvalSetProperty(t *testing.T) {
	r := testRand(t)
	v := newVars()
	vs := []*ir.Var{v.i, v.j, v.k, v.x}
	n := 2000
	if testing.Short() {
		n = 300
	}
	for iter := 0; iter < n; iter++ {
		e := randExpr(r, vs, 3)
		a := NewAnalyzer()
		// i is a symbolic outer loop; j and k are relaxed; x is free.
		a.BindRange(v.i, 0, 8)
		ej, ek := int64(r.IntN(8)+1), int64(r.IntN(8)+1)
		dom := map[*ir.Var]IntSet{
			v.j: RangeSet(0, ej),
			v.k: IntervalSet(ir.Mul(v.i, c(ek)), ir.Add(ir.Mul(v.i, c(ek)), c(ek-1))),
		}
		set := a.EvalSet(e, dom)
		for p := 0; p < 10; p++ {
			iv := int64(r.IntN(8))
			env := map[*ir.Var]int64{v.i: iv, v.x: int64(r.IntN(11) - 5),
				v.j: int64(r.IntN(int(ej))), v.k: iv*ek + int64(r.IntN(int(ek)))}
			val, err := evalInt(e, env)
			if err != nil {
				continue
			}
			if set.Min != nil {
				lo, err := evalInt(set.Min, env)
				if err == nil && val < lo {
					t.Fatalf("EvalSet(%s) = %v: value %d below %d at%s", ir.ExprString(e), set, val, lo, envString(env))
				}
			}
			if set.Max != nil {
				hi, err := evalInt(set.Max, env)
				if err == nil && val > hi {
					t.Fatalf("EvalSet(%s) = %v: value %d above %d at%s", ir.ExprString(e), set, val, hi, envString(env))
				}
			}
		}
	}
}

func TestEvalSet(t *testing.T) {
	v := newVars()
	i, j := v.i, v.j
	a := NewAnalyzer()
	a.BindRange(i, 0, 8)
	dom := map[*ir.Var]IntSet{j: RangeSet(0, 4)}
	tests := []struct {
		in   ir.Expr
		want string
	}{
		{ir.Add(ir.Mul(i, c(4)), j), "[i * 4, i * 4 + 3]"},
		{ir.Sub(i, j), "[i - 3, i]"},
		{ir.FloorDiv(ir.Add(ir.Mul(i, c(4)), j), c(2)), "[i * 2, i * 2 + 1]"},
		{ir.FloorMod(ir.Add(ir.Mul(i, c(4)), j), c(8)), "[i % 2 * 4, i % 2 * 4 + 3]"},
		{ir.FloorDiv(ir.Add(ir.Mul(i, c(4)), j), c(8)), "[i // 2, i // 2]"},
		{ir.FloorMod(ir.Add(ir.Add(ir.Mul(i, c(8)), j), c(2)), c(4)), "[0, 3]"},
		{ir.Min(j, c(2)), "[0, 2]"},
		{i, "[i, i]"},
	}
	for _, tt := range tests {
		if got := a.EvalSet(tt.in, dom).String(); got != tt.want {
			t.Errorf("EvalSet(%s) = %s, want %s", ir.ExprString(tt.in), got, tt.want)
		}
	}
	u := a.Union(SinglePoint(i), SinglePoint(ir.Add(i, c(3))))
	if got := u.String(); got != "[i, i + 3]" {
		t.Errorf("Union(i, i+3) = %s, want [i, i + 3]", got)
	}
	x := a.Intersect(RangeSet(0, 10), IntervalSet(c(5), c(20)))
	if got := x.String(); got != "[5, 9]" {
		t.Errorf("Intersect([0,9], [5,20]) = %s, want [5, 9]", got)
	}
	if !a.IsEmpty(a.Intersect(RangeSet(0, 4), RangeSet(10, 4))) {
		t.Errorf("IsEmpty([0,3] ∩ [10,13]) = false, want true")
	}
	r, _ := a.ToRange(a.EvalSet(ir.Add(ir.Mul(i, c(4)), j), dom))
	if got := ir.ExprString(r.Min) + " " + ir.ExprString(r.Extent); got != "i * 4 4" {
		t.Errorf("ToRange = %s, want i * 4 4", got)
	}
}

func TestDetectIterSum(t *testing.T) {
	f := ir.NewVar("f", ir.Int32)
	g := ir.NewVar("g", ir.Int32)
	a := NewAnalyzer()
	a.BindRange(f, 0, 128)
	a.BindRange(g, 0, 6)
	tests := []struct {
		in   ir.Expr
		want string
	}{
		{f, "[floormod(floordiv(f, 1), 128)*1]+0"},
		{ir.FloorDiv(f, c(16)), "[floormod(floordiv(f, 16), 8)*1]+0"},
		{ir.FloorMod(f, c(16)), "[floormod(floordiv(f, 1), 16)*1]+0"},
		{ir.FloorDiv(ir.FloorMod(f, c(64)), c(16)), "[floormod(floordiv(f, 16), 4)*1]+0"},
		{ir.FloorMod(ir.FloorDiv(f, c(4)), c(8)), "[floormod(floordiv(f, 4), 8)*1]+0"},
		{ir.Add(ir.Mul(ir.FloorDiv(f, c(16)), c(6)), g), "[floormod(floordiv(f, 16), 8)*6 floormod(floordiv(g, 1), 6)*1]+0"},
		{ir.Add(ir.FloorDiv(g, c(4)), c(3)), "[floormod(floordiv(g, 4), 2)*1]+3"},
	}
	for _, tt := range tests {
		s, ok := a.DetectIterSum(tt.in)
		if !ok {
			t.Errorf("DetectIterSum(%s) failed", ir.ExprString(tt.in))
			continue
		}
		got := "["
		for i, sp := range s.Splits {
			if i > 0 {
				got += " "
			}
			got += sp.String()
		}
		got += "]+" + ir.ExprString(ir.Int(s.Base))
		if got != tt.want {
			t.Errorf("DetectIterSum(%s) = %s, want %s", ir.ExprString(tt.in), got, tt.want)
		}
	}
	for _, bad := range []ir.Expr{ir.Mul(f, g), ir.FloorDiv(ir.FloorMod(g, c(4)), c(3)), ir.Min(f, g)} {
		if s, ok := a.DetectIterSum(bad); ok {
			t.Errorf("DetectIterSum(%s) = %v, want failure", ir.ExprString(bad), s)
		}
	}
}

func TestDetectIterSumProperty(t *testing.T) {
	r := testRand(t)
	f := ir.NewVar("f", ir.Int32)
	a := NewAnalyzer()
	a.BindRange(f, 0, 96)
	divs := []int64{1, 2, 3, 4, 6, 8, 12, 16, 32, 48, 96}
	for iter := 0; iter < 300; iter++ {
		d := divs[r.IntN(len(divs))]
		m := divs[r.IntN(len(divs))]
		var e ir.Expr = f
		switch r.IntN(3) {
		case 0:
			e = ir.FloorDiv(ir.FloorMod(f, c(m*d)), c(d))
		case 1:
			e = ir.FloorMod(ir.FloorDiv(f, c(d)), c(m))
		case 2:
			e = ir.FloorDiv(f, c(d))
		}
		e = ir.Add(ir.Mul(e, c(int64(r.IntN(5)+1))), c(int64(r.IntN(5))))
		s, ok := a.DetectIterSum(e)
		if !ok {
			t.Fatalf("DetectIterSum(%s) failed", ir.ExprString(e))
		}
		for fv := int64(0); fv < 96; fv++ {
			want, _ := evalInt(e, map[*ir.Var]int64{f: fv})
			got := s.Base
			for _, sp := range s.Splits {
				got += (fv / sp.Lower) % sp.Extent * sp.Scale
			}
			if got != want {
				t.Fatalf("DetectIterSum(%s) = %v: at f=%d gives %d, want %d", ir.ExprString(e), s, fv, got, want)
			}
		}
	}
}

func TestCheckAffineBinding(t *testing.T) {
	f := ir.NewVar("f", ir.Int32)
	i0 := ir.NewVar("i0", ir.Int32)
	i1 := ir.NewVar("i1", ir.Int32)
	a := NewAnalyzer()
	a.BindRange(f, 0, 128)
	a.BindRange(i0, 0, 4)
	a.BindRange(i1, 0, 32)
	tests := []struct {
		name   string
		values []ir.Expr
		ok     bool
	}{
		{"fused", []ir.Expr{ir.FloorDiv(f, c(16)), ir.FloorMod(f, c(16))}, true},
		{"split", []ir.Expr{ir.Add(ir.Mul(i0, c(32)), i1)}, true},
		{"gap", []ir.Expr{ir.Add(ir.Mul(i0, c(64)), i1)}, true},
		{"overlap within", []ir.Expr{ir.Add(ir.Mul(i0, c(16)), i1)}, false},
		{"reuse across", []ir.Expr{f, ir.FloorMod(f, c(4))}, false},
		{"nonlinear", []ir.Expr{ir.Mul(i0, i1)}, false},
	}
	for _, tt := range tests {
		err := a.CheckAffineBinding(tt.values)
		if (err == nil) != tt.ok {
			t.Errorf("%s: CheckAffineBinding = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestDetectLinear(t *testing.T) {
	v := newVars()
	a := NewAnalyzer()
	l, ok := a.DetectLinear(ir.Add(ir.Sub(ir.Mul(v.i, c(3)), v.j), ir.Add(v.x, c(2))), []*ir.Var{v.i, v.j})
	if !ok || l.Coeffs[0] != 3 || l.Coeffs[1] != -1 || ir.ExprString(l.Base) != "x + 2" {
		t.Errorf("DetectLinear = %v %v %v", ok, l.Coeffs, l.Base)
	}
	if _, ok := a.DetectLinear(ir.FloorDiv(v.i, c(2)), []*ir.Var{v.i}); ok {
		t.Errorf("DetectLinear(i // 2) succeeded")
	}
}

// TestAnalyzerReuse: one analyzer answering many questions in a row (it
// hands the terms of its canonical sums back after each call, see mark)
// answers each exactly as a fresh analyzer does.
func TestAnalyzerReuse(t *testing.T) {
	r := testRand(t)
	v := newVars()
	vs := []*ir.Var{v.i, v.j, v.k, v.x}
	long := NewAnalyzer()
	for _, w := range vs[:3] {
		long.BindRange(w, 0, 7)
	}
	for iter := 0; iter < 1500; iter++ {
		e, f := randExpr(r, vs, 4), randExpr(r, vs, 3)
		fresh := NewAnalyzer()
		for _, w := range vs[:3] {
			fresh.BindRange(w, 0, 7)
		}
		dom := map[*ir.Var]IntSet{v.j: RangeSet(0, 7), v.k: IntervalSet(v.i, ir.Add(v.i, c(3)))}
		ask := func(a *Analyzer) string {
			set := a.EvalSet(e, dom)
			lin, ok := a.DetectLinear(e, []*ir.Var{v.i, v.j})
			base := "-"
			if ok {
				base = ir.ExprString(lin.Base)
			}
			d, dok := a.ConstDiff(e, f)
			rg := "-"
			if x, ok := a.ToRange(a.Union(set, a.EvalSet(f, dom))); ok {
				rg = ir.ExprString(x.Min) + " ext " + ir.ExprString(x.Extent)
			}
			return fmt.Sprintf("%s | %v | %s %v | %v %v | %d %v | %s", ir.ExprString(a.Simplify(e)), a.Bound(e), set, base,
				a.CanProveEqual(e, f), lin.Coeffs, d, dok, rg)
		}
		if got, want := ask(long), ask(fresh); got != want {
			t.Fatalf("%s, %s: a reused analyzer answers\n%s\nwhere a fresh one answers\n%s", ir.ExprString(e), ir.ExprString(f), got, want)
		}
	}
}

// TestSumIs: sumIs(s, e) holds only when fromSum(s) builds e again (the
// soundness that lets Simplify and toSum return an expression instead of
// rebuilding it), and holds for what fromSum built (unless it fuses).
func TestSumIs(t *testing.T) {
	r := testRand(t)
	v := newVars()
	vs := []*ir.Var{v.i, v.j, v.k, v.x}
	a := NewAnalyzer()
	for _, w := range vs[:3] {
		a.BindRange(w, 0, 9)
	}
	matched := 0
	for iter := 0; iter < 3000; iter++ {
		e := randExpr(r, vs, 4)
		if !e.DType().IsInt() {
			continue
		}
		m := a.mark()
		s := a.toSum(e)
		built := a.fromSum(s)
		for _, x := range []ir.Expr{e, built, a.Simplify(e), a.Simplify(built)} {
			if a.sumIs(s, x) != ir.SameExpr(x, built) && !(needsFuse(s.terms) || len(s.terms) > 8) {
				t.Fatalf("sumIs(toSum(%s), %s) = %v, but fromSum builds %s", ir.ExprString(e), ir.ExprString(x), a.sumIs(s, x), ir.ExprString(built))
			}
			if a.sumIs(s, x) && !ir.SameExpr(x, built) {
				t.Fatalf("sumIs(toSum(%s), %s) holds, but fromSum builds %s", ir.ExprString(e), ir.ExprString(x), ir.ExprString(built))
			}
		}
		if a.sumIs(s, e) {
			matched++
		}
		a.release(m)
	}
	if matched == 0 {
		t.Error("no random expression was in canonical form already")
	}
	// Mismatches by one detail each.
	i, j := v.i, v.j
	s := sum{t: ir.Int32, c: -3, terms: []term{{2, i}, {-1, j}}}
	for _, x := range []ir.Expr{
		ir.Sub(ir.Sub(ir.Mul(i, c(2)), j), c(2)),                     // constant
		ir.Sub(ir.Add(ir.Mul(i, c(2)), j), c(3)),                     // sign of a term
		ir.Sub(ir.Sub(ir.Mul(j, c(2)), i), c(3)),                     // order
		ir.Sub(ir.Sub(ir.Mul(i, ir.IntImmOf(ir.Int64, 2)), j), c(3)), // dtype of a coefficient
		ir.Add(ir.Sub(ir.Mul(i, c(2)), j), ir.Int(-3)),               // form of the constant
	} {
		if a.sumIs(s, x) {
			t.Errorf("sumIs(2*i - j - 3, %s) holds", ir.ExprString(x))
		}
	}
	if want := ir.Sub(ir.Sub(ir.Mul(i, c(2)), j), c(3)); !a.sumIs(s, want) {
		t.Errorf("sumIs(2*i - j - 3, %s) does not hold", ir.ExprString(want))
	}
	if want := ir.Sub(c(3), ir.Mul(j, c(2))); !a.sumIs(sum{t: ir.Int32, c: 3, terms: []term{{-2, j}}}, want) {
		t.Errorf("sumIs(3 - 2*j, %s) does not hold", ir.ExprString(want))
	}
}
