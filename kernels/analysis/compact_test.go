package analysis_test

import (
	"strings"
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// TestCompactRegion: one block writes S[v], v = bx*32 + tx*4 + i, under
// blockIdx bx (2), threadIdx tx (8) and a serial loop i (4); another reads
// S[w], w = bx*32 + j, under bx and a loop j (32).
func TestCompactRegion(t *testing.T) {
	S := ir.NewBuffer("S", ir.Float32, []int64{64}, "shared")
	bx, tx := ir.NewVar("bx", ir.Int32), ir.NewVar("tx", ir.Int32)
	i, j := ir.NewVar("i", ir.Int32), ir.NewVar("j", ir.Int32)
	v, w := ir.NewVar("v", ir.Int32), ir.NewVar("w", ir.Int32)
	point := func(x *ir.Var) ir.BufferRegion {
		return ir.BufferRegion{Buffer: S, Region: []ir.Range{ir.PointRange(x)}}
	}
	write := &ir.BlockRealize{
		IterValues: []ir.Expr{ir.Add(ir.Add(ir.Mul(bx, ir.Int(32)), ir.Mul(tx, ir.Int(4))), i)},
		Block:      &ir.Block{Name: "W", IterVars: []ir.IterVar{{Var: v, Dom: ir.Dom{Extent: 64}}}, Writes: []ir.BufferRegion{point(v)}},
	}
	read := &ir.BlockRealize{
		IterValues: []ir.Expr{ir.Add(ir.Mul(bx, ir.Int(32)), j)},
		Block:      &ir.Block{Name: "R", IterVars: []ir.IterVar{{Var: w, Dom: ir.Dom{Extent: 64}}}, Reads: []ir.BufferRegion{point(w)}},
	}
	lj := ir.Loop(j, 32, read)
	li := ir.Loop(i, 4, write)
	ltx := ir.Loop(tx, 8, li)
	ltx.Kind, ltx.Thread = ir.ThreadBinding, "threadIdx.x"
	lbx := ir.Loop(bx, 2, &ir.SeqStmt{Stmts: []ir.Stmt{ltx, lj}})
	lbx.Kind, lbx.Thread = ir.ThreadBinding, "blockIdx.x"
	wr := analysis.BufferAccess{Path: []ir.Stmt{lbx, ltx, li, write.Block}, Realize: write, Region: write.Block.Writes[0]}
	rd := analysis.BufferAccess{Path: []ir.Stmt{lbx, lj, read.Block}, Realize: read, Region: read.Block.Reads[0]}
	threads := func(f *ir.For, under bool) bool {
		return under || (f.Kind == ir.ThreadBinding && ir.ThreadRank(f.Thread) >= 1)
	}
	none := func(*ir.For, bool) bool { return false }
	guarded := *write
	guarded.Predicate = ir.LT(ir.Add(ir.Mul(tx, ir.Int(4)), i), ir.Int(20))
	wrGuarded := wr
	wrGuarded.Realize = &guarded
	tests := []struct {
		name     string
		accs     []analysis.BufferAccess
		relax    func(*ir.For, bool) bool
		min, max string
		ext      int64
	}{
		{"both blocks: all but blockIdx relaxed", []analysis.BufferAccess{wr, rd}, threads, "bx * 32", "bx * 32 + 31", 32},
		{"writer alone: its serial loop stays", []analysis.BufferAccess{wr}, threads, "bx * 32 + i", "bx * 32 + i + 28", 29},
		{"nothing relaxed: a point", []analysis.BufferAccess{wr}, none, "bx * 32 + tx * 4 + i", "bx * 32 + tx * 4 + i", 1},
		{"split predicate narrows tx and i", []analysis.BufferAccess{wrGuarded, rd}, threads, "bx * 32", "bx * 32 + 31", 32},
		{"split predicate, writer alone", []analysis.BufferAccess{wrGuarded}, func(f *ir.For, _ bool) bool { return f != lbx }, "bx * 32", "bx * 32 + 19", 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shape, exts, err := analysis.CompactRegion(arith.NewAnalyzer(), S, tt.accs, tt.relax)
			if err != nil {
				t.Fatal(err)
			}
			if got := ir.ExprString(shape[0].Min); got != tt.min {
				t.Errorf("min = %s, want %s", got, tt.min)
			}
			if got := ir.ExprString(arith.Simplify(shape[0].Max)); got != tt.max {
				t.Errorf("max = %s, want %s", got, tt.max)
			}
			if exts[0] != tt.ext {
				t.Errorf("extent = %d, want %d", exts[0], tt.ext)
			}
		})
	}
	bad := wr
	bad.Region = ir.BufferRegion{Buffer: S, Region: []ir.Range{ir.PointRange(v), ir.PointRange(v)}}
	if _, _, err := analysis.CompactRegion(arith.NewAnalyzer(), S, []analysis.BufferAccess{bad}, threads); err == nil || !strings.Contains(err.Error(), "rank 1") {
		t.Errorf("region of rank 2 on a buffer of rank 1: err = %v", err)
	}
	if _, _, err := analysis.CompactRegion(arith.NewAnalyzer(), S, nil, threads); err == nil {
		t.Error("no access: no error")
	}
}
