package cudagen

import (
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
)

func bin(op ir.BinOp, a, b ir.Expr) ir.Expr { return ir.NewBinary(op, a, b) }
func c(v int64) ir.Expr                     { return ir.Int(v) }

// TestLaneCoef checks the affine-in-the-lane proofs against evaluation at
// every point of small ranges: a proved coefficient must hold everywhere,
// and the cases TVM's vectorizer cannot prove must not be proved here.
func TestLaneCoef(t *testing.T) {
	tx := ir.NewVar("tx", ir.Int32)
	v := ir.NewVar("v", ir.Int32)
	add := func(a, b ir.Expr) ir.Expr { return bin(ir.OpAdd, a, b) }
	mul := func(a, b ir.Expr) ir.Expr { return bin(ir.OpMul, a, b) }
	fd := func(a, b ir.Expr) ir.Expr { return bin(ir.OpFloorDiv, a, b) }
	fm := func(a, b ir.Expr) ir.Expr { return bin(ir.OpFloorMod, a, b) }
	for _, tc := range []struct {
		name    string
		e       ir.Expr
		w       int64
		coef    int64
		ok      bool
		aligned bool
	}{
		{"contiguous", add(mul(tx, c(4)), v), 4, 1, true, true},
		{"misaligned", add(add(mul(tx, c(4)), c(1)), v), 4, 1, true, false},
		{"stride 2", add(mul(tx, c(8)), mul(v, c(2))), 4, 2, true, false},
		// (tx*2 + v) // 4 * 128 + (tx*2 + v) % 4: the dense fetch of p0.
		{"split w2", add(mul(fd(add(mul(tx, c(2)), v), c(4)), c(128)), fm(add(mul(tx, c(2)), v), c(4))), 2, 1, true, true},
		// The same with 4 lanes crosses a bucket of 4 when tx is odd.
		{"split w4", add(mul(fd(add(mul(tx, c(2)), v), c(4)), c(128)), fm(add(mul(tx, c(2)), v), c(4))), 4, 0, false, false},
		{"broadcast", fd(v, c(4)), 4, 0, true, false},
		// (tx + v) // 4 with 2 lanes: tx = 3 puts the lanes in two groups
		// (the bound is strict: step*(w-1) < gcd).
		{"bucket edge", fd(add(tx, v), c(4)), 2, 0, false, false},
		{"min", bin(ir.OpMin, v, c(2)), 4, 0, false, false},
	} {
		got, ok := laneCoef(tc.e, v, tc.w)
		if ok != tc.ok || (ok && got != tc.coef) {
			t.Errorf("%s: laneCoef(%s) = %d, %v; want %d, %v", tc.name, ir.ExprString(tc.e), got, ok, tc.coef, tc.ok)
		}
		if a := aligned(tc.e, v, tc.w); a != tc.aligned {
			t.Errorf("%s: aligned(%s) = %v, want %v", tc.name, ir.ExprString(tc.e), a, tc.aligned)
		}
		if !ok {
			continue
		}
		for x := int64(0); x < 64; x++ {
			e0, _ := ir.EvalInt(tc.e, map[*ir.Var]int64{tx: x, v: 0})
			for l := int64(0); l < tc.w; l++ {
				el, _ := ir.EvalInt(tc.e, map[*ir.Var]int64{tx: x, v: l})
				if el != e0+got*l {
					t.Fatalf("%s: tx=%d lane %d: %d, want %d + %d*%d", tc.name, x, l, el, e0, got, l)
				}
			}
			if a := aligned(tc.e, v, tc.w); a && e0%tc.w != 0 {
				t.Fatalf("%s: proved aligned but tx=%d gives %d", tc.name, x, e0)
			}
		}
	}
}

// TestUniformCond: a predicate a + v < b is the same on every lane when a
// and b are multiples of the width, and not otherwise; <= never is.
func TestUniformCond(t *testing.T) {
	tx := ir.NewVar("tx", ir.Int32)
	v := ir.NewVar("v", ir.Int32)
	lhs := bin(ir.OpAdd, bin(ir.OpMul, tx, c(4)), v)
	for _, tc := range []struct {
		e    ir.Expr
		want bool
	}{
		{bin(ir.OpLT, lhs, c(64)), true},
		{bin(ir.OpGT, c(64), lhs), true},
		{bin(ir.OpLT, lhs, c(62)), false},
		{bin(ir.OpLE, lhs, c(64)), false},
		{bin(ir.OpLT, tx, c(3)), true},
		{bin(ir.OpAnd, bin(ir.OpLT, lhs, c(64)), bin(ir.OpGE, lhs, c(8))), true},
	} {
		if got := uniformCond(tc.e, v, 4); got != tc.want {
			t.Errorf("uniformCond(%s) = %v, want %v", ir.ExprString(tc.e), got, tc.want)
		}
	}
}

// TestVectorizeFallback: a vectorized loop whose store is misaligned is a
// plain unrolled loop that says why; an aligned one is one float4 store,
// and a load under an if_then_else branch stays a scalar load per lane
// (a padded input must not be read outside its guard).
func TestVectorizeFallback(t *testing.T) {
	a := ir.NewBuffer("A", ir.Float32, []int64{1024}, "global")
	b := ir.NewBuffer("B", ir.Float32, []int64{1024}, "global")
	tx := ir.NewVar("tx", ir.Int32)
	gen := func(off int64, guard bool) string {
		v := ir.NewVar("v", ir.Int32)
		idx := bin(ir.OpAdd, bin(ir.OpAdd, bin(ir.OpMul, tx, c(4)), c(off)), v)
		var val ir.Expr = ir.Load(a, idx)
		if guard {
			val = ir.NewCall(ir.CallIfThenElse, bin(ir.OpLT, idx, c(1000)), ir.Load(a, idx), ir.FloatImmOf(ir.Float32, 0))
		}
		k := &lower.Kernel{Name: "k", Grid: [3]int64{1, 1, 1}, Block: [3]int64{250, 1, 1}}
		k.ThreadIdx[0] = tx
		k.Body = []lower.Stmt{&lower.Loop{Var: v, Extent: c(4), Kind: lower.Vectorized,
			Body: []lower.Stmt{&lower.Store{Buffer: b, Index: idx, Value: val}}}}
		src, err := Generate(&lower.Program{Name: "p", Params: []*ir.Buffer{a, b}, Kernels: []*lower.Kernel{k}})
		if err != nil {
			t.Fatal(err)
		}
		return src.Code
	}
	if s := gen(0, false); !strings.Contains(s, "const float4 dx_v0 = *reinterpret_cast<const float4 *>(&A[") || !strings.Contains(s, "*reinterpret_cast<float4 *>(&B[") {
		t.Errorf("aligned copy is not a float4 load and store:\n%s", s)
	}
	if s := gen(2, false); strings.Contains(s, "float4") || !strings.Contains(s, "plain loop (the store is not contiguous and aligned)") {
		t.Errorf("misaligned copy was vectorized:\n%s", s)
	}
	if s := gen(0, true); strings.Contains(s, "reinterpret_cast<const float4") || !strings.Contains(s, "*reinterpret_cast<float4 *>(&B[") {
		t.Errorf("guarded load: want scalar loads and a float4 store:\n%s", s)
	}
}
