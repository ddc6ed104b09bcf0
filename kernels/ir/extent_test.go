package ir_test

import (
	"strings"
	"testing"

	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/ir"
)

// TestSymbolicExtentAPI checks the one API loops are read through: a
// constant extent comes back from ConstExtent without an expression, a
// symbolic one only as an expression, and an immediate set as an
// expression becomes a constant.
func TestSymbolicExtentAPI(t *testing.T) {
	i, j := ir.NewVar("i", ir.Int32), ir.NewVar("j", ir.Int32)
	l := ir.Loop(j, 8, nil)
	if n, ok := l.ConstExtent(); !ok || n != 8 || l.SymbolicExtent() != nil {
		t.Errorf("constant loop: ConstExtent = %d, %v; SymbolicExtent = %v", n, ok, l.SymbolicExtent())
	}
	if got := ir.ExprString(l.ExtentExpr()); got != "8" {
		t.Errorf("ExtentExpr = %s", got)
	}
	l.SetExtentExpr(ir.Add(i, ir.Int(1)))
	if _, ok := l.ConstExtent(); ok {
		t.Error("a symbolic extent reads as a constant")
	}
	if got := ir.ExprString(l.ExtentExpr()); got != "i + 1" {
		t.Errorf("ExtentExpr = %s", got)
	}
	l.SetExtentExpr(ir.Int(3))
	if n, ok := l.ConstExtent(); !ok || n != 3 {
		t.Errorf("an immediate extent is not folded to a constant: %d, %v", n, ok)
	}
	a, b := ir.LoopExpr(ir.NewVar("a", ir.Int32), ir.Add(i, ir.Int(1)), nil), ir.LoopExpr(ir.NewVar("b", ir.Int32), ir.Add(i, ir.Int(1)), nil)
	if !ir.SameExtent(a, b) || ir.SameExtent(a, ir.Loop(j, 3, nil)) || !ir.SameExtent(ir.Loop(i, 3, nil), ir.Loop(j, 3, nil)) {
		t.Error("SameExtent is wrong")
	}
}

// TestSymbolicExtentScript prints a loop of symbolic extent as TVM's
// printer does: inside a T.grid while it does not use the grid's own
// variables, otherwise as a loop of its own, and with no T.axis.remap for
// an iter var bound to it.
func TestSymbolicExtentScript(t *testing.T) {
	want := `
        for i in range(4):
            for j, k in T.grid(i + 1, 2):
                with T.block("B"):
                    vi = T.axis.spatial(4, i)
                    vj = T.axis.spatial(4, j)
                    vk = T.axis.spatial(2, k)`
	got := fixtures.Triangular(4, 1).Script()
	dedent := func(s string) string {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimLeft(l, " ")
		}
		return strings.Join(lines, "\n")
	}
	if !strings.Contains(dedent(got), dedent(strings.TrimPrefix(want, "\n"))) || !strings.Contains(got, "    for j, k in T.grid(i + 1, 2):") {
		t.Errorf("script:\n%s\nwant it to contain:%s", got, want)
	}
}

// TestSymbolicExtentHashEqualClone: a symbolic extent is part of the
// structure (hash, Equal), survives Clone, and the clone's loop is its own.
func TestSymbolicExtentHashEqualClone(t *testing.T) {
	f, g := fixtures.Triangular(4, 1), fixtures.Triangular(4, 2)
	if ir.Equal(f, g) || ir.Hash(f) == ir.Hash(g) {
		t.Errorf("extents i + 1 and i + 2: Equal %v, hashes %x and %x", ir.Equal(f, g), ir.Hash(f), ir.Hash(g))
	}
	if d := ir.Diff(f, g); !strings.Contains(d, "extent i + 1 vs i + 2") {
		t.Errorf("Diff = %q", d)
	}
	c := f.Clone()
	if !ir.Equal(f, c) || ir.Hash(f) != ir.Hash(c) {
		t.Fatalf("clone differs: %s", ir.Diff(f, c))
	}
	inner := func(f *ir.PrimFunc) *ir.For {
		var j *ir.For
		ir.WalkStmt(f.Body, func(s ir.Stmt) bool {
			if l, ok := s.(*ir.For); ok && l.SymbolicExtent() != nil {
				j = l
			}
			return true
		})
		return j
	}
	inner(c).SetExtent(2)
	if inner(f) == nil || !ir.Equal(f, fixtures.Triangular(4, 1)) {
		t.Error("changing the clone's extent changed the original")
	}
	// A substitution reaches the extent
	i := fixtures.Triangular(4, 1)
	var outer *ir.For
	ir.WalkStmt(i.Body, func(s ir.Stmt) bool {
		if l, ok := s.(*ir.For); ok && outer == nil {
			outer = l
		}
		return true
	})
	ir.SubstituteStmt(outer.Body, map[*ir.Var]ir.Expr{outer.Var: ir.Int(2)})
	// (unfolded: TVM's printer writes the node as T.Add(2, 1)).
	if got := ir.ExprString(inner(i).ExtentExpr()); got != "T.Add(2, 1)" {
		t.Errorf("substituted extent = %s", got)
	}
}
