package analysis_test

import (
	"strings"
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/ir"
)

func regionString(rs []ir.BufferRegion) string {
	b := &ir.Block{Name: "x", Reads: rs}
	s := ir.StmtString(b)
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "T.reads(") {
			return strings.TrimSuffix(strings.TrimPrefix(t, "T.reads("), ")")
		}
	}
	return s
}

func TestBlockAccessRegion(t *testing.T) {
	A := ir.NewBuffer("A", ir.Float32, []int64{64, 64}, "")
	B := ir.NewBuffer("B", ir.Float32, []int64{6, 6}, "")
	C := ir.NewBuffer("C", ir.Float32, []int64{64}, "")
	v, w := ir.NewVar("v", ir.Int32), ir.NewVar("w", ir.Int32)
	ra, rb := ir.NewVar("r_a", ir.Int32), ir.NewVar("r_b", ir.Int32)
	j := ir.NewVar("j", ir.Int32)
	ivs := []ir.IterVar{{Var: v, Dom: ir.Dom{Extent: 16}}, {Var: w, Dom: ir.Dom{Extent: 6}},
		{Var: ra, Dom: ir.Dom{Extent: 6}, Kind: ir.Reduce}, {Var: rb, Dom: ir.Dom{Extent: 6}, Kind: ir.Reduce}}
	tests := []struct {
		name          string
		init, body    ir.Stmt
		reads, writes string
	}{
		{"union of two points (winograd)", nil,
			ir.Store(C, ir.Mul(ir.Load(B, ra, w), ir.Load(B, rb, w)), v),
			"B[T.min(r_a, r_b):T.min(r_a, r_b) + (T.max(r_a, r_b) - T.min(r_a, r_b) + 1), w]", "C[v]"},
		{"inner loop relaxed", nil,
			ir.Loop(j, 4, ir.Store(C, ir.Load(A, ir.Add(ir.Mul(v, ir.Int(4)), j), w), ir.Add(ir.Mul(v, ir.Int(4)), j))),
			"A[v * 4:v * 4 + 4, w]", "C[v * 4:v * 4 + 4]"},
		{"order of first access", nil,
			ir.Store(C, ir.Add(ir.Load(B, w, w), ir.Load(A, v, w)), v),
			"B[w, w], A[v, w]", "C[v]"},
		{"init drops the written buffer from reads",
			ir.Store(C, ir.F32(0), v),
			ir.Store(C, ir.Add(ir.Load(C, v), ir.Load(A, v, ra)), v),
			"A[v, r_a]", "C[v]"},
		{"same buffer, shifted", nil,
			ir.Store(C, ir.Add(ir.Load(A, v, w), ir.Load(A, ir.Add(v, ir.Int(2)), w)), v),
			"A[v:v + 3, w]", "C[v]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &ir.Block{Name: "b", IterVars: ivs, Init: tt.init, Body: tt.body}
			reads, writes := analysis.BlockAccessRegion(b)
			if got := regionString(reads); got != tt.reads {
				t.Errorf("reads = %s, want %s", got, tt.reads)
			}
			if got := regionString(writes); got != tt.writes {
				t.Errorf("writes = %s, want %s", got, tt.writes)
			}
		})
	}
}

func TestBlockAccessRegionNested(t *testing.T) {
	// An outer block over a tile: its regions come from the inner block's
	// regions, bindings substituted and the loops between relaxed.
	A := ir.NewBuffer("A", ir.Float32, []int64{64}, "")
	C := ir.NewBuffer("C", ir.Float32, []int64{64}, "")
	vo, vi, i := ir.NewVar("vo", ir.Int32), ir.NewVar("vi", ir.Int32), ir.NewVar("i", ir.Int32)
	inner := &ir.Block{Name: "inner", IterVars: []ir.IterVar{{Var: vi, Dom: ir.Dom{Extent: 64}}},
		Reads:  []ir.BufferRegion{ir.PointRegion(A, vi)},
		Writes: []ir.BufferRegion{ir.PointRegion(C, vi)},
		Body:   ir.Store(C, ir.Load(A, vi), vi)}
	outer := &ir.Block{Name: "outer", IterVars: []ir.IterVar{{Var: vo, Dom: ir.Dom{Extent: 8}}},
		Body: ir.Loop(i, 8, &ir.BlockRealize{
			IterValues: []ir.Expr{ir.Add(ir.Mul(vo, ir.Int(8)), i)}, Block: inner})}
	reads, writes := analysis.BlockAccessRegion(outer)
	if got := regionString(reads); got != "A[vo * 8:vo * 8 + 8]" {
		t.Errorf("reads = %s", got)
	}
	if got := regionString(writes); got != "C[vo * 8:vo * 8 + 8]" {
		t.Errorf("writes = %s", got)
	}
}
