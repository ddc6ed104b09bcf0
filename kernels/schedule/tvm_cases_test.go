package schedule_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/te"
)

// The cases of TVM's tests/python/tir-schedule/test_tir_schedule_*.py,
// with their expected modules ported as data under testdata/tvm: each
// file holds TVM's expected function, printed in the TVMScript dialect of
// ir.PrimFunc.Script (T.block, T.alloc_buffer, explicit T.reads and
// T.writes, as TVM v0.20 prints them). Comparison ignores only
// whitespace.

// tvmRename gives the iter vars of every block the names the hand-written
// TVMScript of TVM's tests uses ("vi" where te names it "v_i").
func tvmRename(f *ir.PrimFunc) *ir.PrimFunc {
	ir.WalkStmt(f.Body, func(x ir.Stmt) bool {
		b, ok := x.(*ir.Block)
		if !ok {
			return true
		}
		sub := map[*ir.Var]ir.Expr{}
		for i, iv := range b.IterVars {
			if n, ok := strings.CutPrefix(iv.Var.Name(), "v_"); ok {
				nv := ir.NewVar("v"+n, iv.Var.DType())
				sub[iv.Var] = nv
				b.IterVars[i].Var = nv
			}
		}
		ir.SubstituteStmt(b, sub)
		return true
	})
	return f
}

// elementWise is TVM's element_wise: B = A*2, C = B+1, 128x128.
func elementWise(t testing.TB) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	a := b.Placeholder("A", ir.Float32, 128, 128)
	bb := b.Compute("B", []int64{128, 128}, func(i []ir.Expr) ir.Expr { return ir.Mul(a.At(i...), ir.F32(2)) }, te.Names("i", "j"))
	c := b.Compute("C", []int64{128, 128}, func(i []ir.Expr) ir.Expr { return ir.Add(bb.At(i...), ir.F32(1)) }, te.Names("i", "j"))
	f, err := b.Func("main", []*te.Tensor{a, c})
	if err != nil {
		t.Fatal(err)
	}
	return tvmRename(f)
}

// wantTVM compares f's printed script with testdata/tvm/name.tir,
// ignoring whitespace.
func wantTVM(t *testing.T, f *ir.PrimFunc, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "tvm", name+".tir"))
	if err != nil {
		t.Fatal(err)
	}
	got := f.Script()
	if normScript(got) != normScript(string(data)) {
		t.Errorf("printed IR differs from TVM's %s:\n--- got\n%s\n--- want (TVM)\n%s", name, got, data)
	}
}

// normScript drops the comment lines before the function (where the data
// files name their source), and the T.func_attr line (TVM's tests compare
// with assert_structural_equal_ignore_global_symbol), and joins the rest
// with single spaces.
func normScript(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		tl := strings.TrimSpace(l)
		if strings.HasPrefix(tl, "T.func_attr(") || strings.HasPrefix(l, "# ") && !strings.HasPrefix(tl, "# with T.block") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(strings.Fields(strings.Join(keep, "\n")), " ")
}

// TVM's test_set_scope, test_set_scope_fail_on_output_buffer,
// test_set_scope_fail_on_index_out_of_bound and
// test_set_scope_fail_on_invalid_scope.
func TestTVMSetScope(t *testing.T) {
	s := newSched(elementWise(t))
	if err := s.SetScope(getBlock(t, s, "B"), 0, "shared"); err != nil {
		t.Fatal(err)
	}
	wantTVM(t, s.Func(), "set_scope")

	for _, c := range []struct {
		name  string
		block string
		i     int64
		scope string
		frag  string
	}{
		{"output buffer", "C", 0, "shared", "not allocated by a block"},
		{"index out of bound", "B", 1, "shared", "out of range"},
		{"negative index", "B", -1, "shared", "out of range"},
		{"invalid scope", "B", 0, "test_scope", "invalid storage scope"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSched(elementWise(t))
			wantError(t, s.SetScope(getBlock(t, s, c.block), c.i, c.scope), "SetScope", c.frag)
		})
	}
}
