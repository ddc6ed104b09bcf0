package ir_test

import (
	"strings"
	"testing"

	"dragonx/kernels/ir"
)

func TestExprString(t *testing.T) {
	i, j := ir.NewVar("i", ir.Int32), ir.NewVar("j", ir.Int32)
	f := ir.NewVar("f", ir.Float32)
	A := ir.NewBuffer("A", ir.Float32, []int64{4, 4}, "")
	S := ir.NewBuffer("S", ir.Float32, nil, "")
	c := ir.Int
	tests := []struct {
		e    ir.Expr
		want string
	}{
		{ir.Add(ir.Mul(i, c(4)), j), "i * 4 + j"},
		{ir.Mul(ir.Add(i, c(4)), j), "(i + 4) * j"},
		{ir.Sub(i, ir.Sub(j, c(1))), "i - (j - 1)"},
		{ir.Sub(ir.Sub(i, j), c(1)), "i - j - 1"},
		{ir.Add(i, ir.Add(j, c(1))), "i + (j + 1)"},
		{ir.FloorDiv(ir.FloorMod(i, c(64)), c(16)), "i % 64 // 16"},
		{ir.FloorMod(ir.FloorDiv(i, c(4)), c(8)), "i // 4 % 8"},
		{ir.Mul(i, c(-1)), "i * -1"},
		{ir.Div(i, c(2)), "T.Div(i, 2)"},
		{ir.Mod(i, c(2)), "T.truncmod(i, 2)"},
		{ir.Div(f, ir.F32(2)), "f / T.float32(2)"},
		{ir.Min(i, ir.Max(j, c(0))), "T.min(i, T.max(j, 0))"},
		{ir.And(ir.LE(c(3), i), ir.LT(i, c(227)), ir.LE(c(3), j)), "3 <= i and i < 227 and 3 <= j"},
		{ir.Or(ir.And(ir.LT(i, j), ir.LT(j, c(3))), ir.EQ(i, c(0))), "i < j and j < 3 or i == 0"},
		{ir.And(ir.Or(ir.LT(i, j), ir.LT(j, c(3))), ir.EQ(i, c(0))), "(i < j or j < 3) and i == 0"},
		{ir.NotOf(ir.LT(i, j)), "not i < j"},
		{ir.EQ(ir.LT(i, j), ir.True()), "(i < j) == T.bool(True)"},
		{ir.IfElse(ir.LT(i, c(3)), ir.Load(A, i, j), ir.F32(0)), "T.if_then_else(i < 3, A[i, j], T.float32(0))"},
		{ir.SelectOf(ir.LT(i, c(3)), f, ir.F32(0.5)), "T.Select(i < 3, f, T.float32(0.5))"},
		{ir.CastTo(ir.Float32, i), `T.Cast("float32", i)`},
		{ir.Exp(ir.Sub(f, ir.F32(1e-5))), "T.exp(f - T.float32(1e-05))"},
		{ir.F32(-3.4028234663852886e+38), "T.float32(-3.4028234663852886e+38)"},
		{ir.F32(0.11180339723346898), "T.float32(0.11180339723346898)"},
		{ir.IntImmOf(ir.Int64, 5), "T.int64(5)"},
		{ir.Load(S), "S[()]"},
		{ir.Pow(f, ir.F32(2)), "T.pow(f, T.float32(2))"},
		// TVM's sugar rule: the operator only where tvm's operator
		// function would not fold the node (TVM's nrm_1, cap_0, dil_0).
		{ir.LT(ir.Add(ir.Mul(c(0), c(128)), j), c(1)), "T.Mul(0, 128) + j < 1"},
		{ir.Add(ir.Add(ir.Mul(i, c(2)), j), c(0)), "T.Add(i * 2 + j, 0)"},
		{ir.Mul(ir.Add(c(0), i), c(4)), "T.Add(0, i) * 4"},
		{ir.Sub(c(0), i), "0 - i"},
		{ir.Sub(i, c(0)), "T.Sub(i, 0)"},
		{ir.Mul(i, c(1)), "T.Mul(i, 1)"},
		{ir.Mul(c(0), i), "T.Mul(0, i)"},
		{ir.FloorDiv(i, c(1)), "T.FloorDiv(i, 1)"},
		{ir.FloorDiv(c(0), i), "T.FloorDiv(0, i)"},
		{ir.FloorMod(i, c(1)), "T.FloorMod(i, 1)"},
		{ir.FloorMod(c(0), i), "T.FloorMod(0, i)"},
		{ir.FloorMod(i, c(2)), "i % 2"},
		{ir.FloorMod(ir.IntImmOf(ir.Int64, 7), ir.IntImmOf(ir.Int64, 2)), "T.FloorMod(T.int64(7), T.int64(2))"},
		{ir.Add(f, ir.F32(0)), "T.Add(f, T.float32(0))"},
		{ir.Mul(ir.F32(2), ir.F32(3)), "T.Mul(T.float32(2), T.float32(3))"},
		{ir.Div(f, ir.F32(1)), "T.Div(f, T.float32(1))"},
		{ir.LT(c(1), c(2)), "T.LT(1, 2)"},
		{ir.EQ(i, c(2)), "i == 2"},
		{ir.And(ir.True(), ir.LT(i, j)), "T.And(T.bool(True), i < j)"},
		{ir.Or(ir.LT(i, j), ir.False()), "T.Or(i < j, T.bool(False))"},
		{ir.Add(ir.Mul(i, c(2)), ir.Add(j, c(0))), "i * 2 + T.Add(j, 0)"},
	}
	for _, tt := range tests {
		if got := ir.ExprString(tt.e); got != tt.want {
			t.Errorf("ExprString = %s, want %s", got, tt.want)
		}
	}
}

func TestScriptForms(t *testing.T) {
	// Loop kinds, annotations, predicates, non-trivial bindings, duplicate
	// names, statement-level if, non-float32 and scoped buffers.
	A := ir.NewBuffer("A", ir.Float32, []int64{100}, "")
	B := ir.NewBuffer("A", ir.Float32, []int64{100}, "") // same name: printed A_1
	idx := ir.NewBuffer("idx", ir.Int32, []int64{4}, "")
	sh := ir.NewBuffer("A_shared", ir.Float16, []int64{100}, "shared")
	i0, i1 := ir.NewVar("i_0", ir.Int32), ir.NewVar("i_1", ir.Int32)
	v := ir.NewVar("v", ir.Int32)
	fused := ir.Add(ir.Mul(i0, ir.Int(32)), i1)
	blk := &ir.Block{
		Name:     "B",
		IterVars: []ir.IterVar{{Var: v, Dom: ir.Dom{Min: 0, Extent: 100}}},
		Reads:    []ir.BufferRegion{{Buffer: A, Region: []ir.Range{ir.RangeOf(0, 100)}}},
		Writes:   []ir.BufferRegion{ir.PointRegion(B, v)},
		Body: &ir.IfThenElse{
			Cond: ir.LT(v, ir.Int(50)),
			Then: ir.Store(B, ir.Load(A, v), v),
			Else: ir.Store(B, ir.F32(0), v),
		},
	}
	inner := ir.Loop(i1, 32, &ir.BlockRealize{IterValues: []ir.Expr{fused}, Predicate: ir.LT(fused, ir.Int(100)), Block: blk})
	inner.Kind = ir.Vectorized
	outer := ir.Loop(i0, 4, inner)
	outer.Kind = ir.Unrolled
	outer.Annotations.Set("pragma_auto_unroll_max_step", ir.AnnInt(64))
	p := ir.Loop(ir.NewVar("t", ir.Int32), 2, outer)
	p.Kind, p.Thread = ir.ThreadBinding, "threadIdx.x"
	f := ir.NewPrimFunc("main", []*ir.Buffer{A, B, idx}, []*ir.Buffer{sh}, p)
	golden(t, "script_forms", f.Script())
}

// TestRegionSlices checks the end of a printed region slice: TVM prints
// min + extent built by tvm::add, so a zero min or constant bounds fold
// and any other sum is the infix +.
func TestRegionSlices(t *testing.T) {
	A := ir.NewBuffer("A", ir.Float32, []int64{16, 16}, "")
	i := ir.NewVar("i", ir.Int32)
	v := ir.NewVar("v", ir.Int32)
	ext := ir.Add(ir.FloorMod(i, ir.Int(2)), ir.Int(1))
	blk := &ir.Block{
		Name:     "B",
		IterVars: []ir.IterVar{{Var: v, Dom: ir.Dom{Extent: 16}}},
		Reads:    []ir.BufferRegion{{Buffer: A, Region: []ir.Range{{Min: ir.Int(0), Extent: ext}, {Min: v, Extent: ext}}}},
		Writes:   []ir.BufferRegion{{Buffer: A, Region: []ir.Range{ir.RangeOf(2, 4), {Min: v, Extent: ir.Int(3)}}}},
		Body:     ir.Store(A, ir.F32(0), v, v),
	}
	got := ir.StmtString(&ir.BlockRealize{IterValues: []ir.Expr{i}, Block: blk})
	for _, want := range []string{"T.reads(A[0:i % 2 + 1, v:v + (i % 2 + 1)])", "T.writes(A[2:6, v:v + 3])"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in\n%s", want, got)
		}
	}
}
