package analysis_test

import (
	"errors"
	"strings"
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/ir"
	"dragonx/kernels/te"
)

func dense(t *testing.T) *ir.PrimFunc {
	t.Helper()
	f, err := fixtures.DenseNT(128, 128, 128)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func block(t *testing.T, f *ir.PrimFunc, name string) *ir.Block {
	t.Helper()
	b, err := ir.FindBlock(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWellFormedFixtures(t *testing.T) {
	conv, err := fixtures.Conv2DNHWC(1, 224, 224, 3, 64, 7, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	c1d, err := fixtures.Conv1DNLC(1, 256, 64, 128, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*ir.PrimFunc{
		"dense": dense(t), "conv2d": conv, "conv1d": c1d, "c1d scheduled": fixtures.C1DScheduled(),
		"decomposed": decomposed(t), "imperfect split": imperfectSplit(true),
	} {
		if err := analysis.VerifyWellFormed(f); err != nil {
			t.Errorf("%s: %v\n%s", name, err, err.(*analysis.WellFormedError).Detail())
		}
	}
}

// decomposed is dense with its reduction decomposed by hand, as
// DecomposeReduction leaves it: a T_matmul_NT_init block, then the update
// block without init.
func decomposed(t *testing.T) *ir.PrimFunc {
	f := dense(t)
	ix := ir.NewIndex(f)
	b := block(t, f, "T_matmul_NT")
	loops := ix.Loops(b)
	init := b.Init.(*ir.BufferStore)
	b.Init = nil
	b.Name = "T_matmul_NT_update"
	vi, vj := ir.NewVar("v_i", ir.Int32), ir.NewVar("v_j", ir.Int32)
	ib := &ir.Block{
		Name:     "T_matmul_NT_init",
		IterVars: []ir.IterVar{{Var: vi, Dom: ir.Dom{Extent: 128}}, {Var: vj, Dom: ir.Dom{Extent: 128}}},
		Writes:   []ir.BufferRegion{ir.PointRegion(init.Buffer, vi, vj)},
		Body:     ir.Store(init.Buffer, init.Value, vi, vj),
	}
	ir.NewIndex(f).Replace(loops[2], ir.Seq(
		&ir.BlockRealize{IterValues: []ir.Expr{loops[0].Var, loops[1].Var}, Block: ib},
		loops[2],
	))
	return f
}

// imperfectSplit is a 100-element copy under loops split 4 x 32, with or
// without the predicate that an imperfect split needs.
func imperfectSplit(withPredicate bool) *ir.PrimFunc {
	A := ir.NewBuffer("A", ir.Float32, []int64{100}, "")
	B := ir.NewBuffer("B", ir.Float32, []int64{100}, "")
	i0, i1, v := ir.NewVar("i_0", ir.Int32), ir.NewVar("i_1", ir.Int32), ir.NewVar("v", ir.Int32)
	fused := ir.Add(ir.Mul(i0, ir.Int(32)), i1)
	r := &ir.BlockRealize{IterValues: []ir.Expr{fused}, Block: &ir.Block{
		Name:     "B",
		IterVars: []ir.IterVar{{Var: v, Dom: ir.Dom{Extent: 100}}},
		Reads:    []ir.BufferRegion{ir.PointRegion(A, v)},
		Writes:   []ir.BufferRegion{ir.PointRegion(B, v)},
		Body:     ir.Store(B, ir.Load(A, v), v),
	}}
	if withPredicate {
		r.Predicate = ir.LT(fused, ir.Int(100))
	}
	return ir.NewPrimFunc("main", []*ir.Buffer{A, B}, nil,
		ir.Loop(i0, 4, ir.Loop(i1, 32, r)))
}

// concat is TE's concatenate of two elementwise results of 16 and 8
// elements (TVM's test_compute_at_concat): T_concat[ax] =
// if_then_else(16 <= ax, T_add_2[ax - 16], T_add_1[ax]), whose loads are
// in bounds only under the guard (ax >= 16 in the first arm, ax < 16 in
// the second). cond, when not nil, then replaces the condition.
func concat(t *testing.T, cond func(ax ir.Expr) ir.Expr) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	x := b.Placeholder("x", ir.Float32, 16)
	y := b.Placeholder("y", ir.Float32, 8)
	a1 := b.Compute("T_add_1", []int64{16}, func(i []ir.Expr) ir.Expr { return ir.Add(x.At(i...), ir.F32(1)) })
	a2 := b.Compute("T_add_2", []int64{8}, func(i []ir.Expr) ir.Expr { return ir.Add(y.At(i...), ir.F32(2)) })
	out := b.Compute("T_concat", []int64{24}, func(i []ir.Expr) ir.Expr {
		return ir.IfElse(ir.LE(ir.Int(16), i[0]), a2.At(ir.Sub(i[0], ir.Int(16))), a1.At(i[0]))
	})
	f, err := b.Func("main", []*te.Tensor{x, y, out})
	if err != nil {
		t.Fatal(err)
	}
	if cond != nil {
		blk := block(t, f, "T_concat")
		st := blk.Body.(*ir.BufferStore)
		args := st.Value.(*ir.Call).Args()
		st.Value = ir.IfElse(cond(blk.IterVars[0].Var), args[1], args[2])
	}
	return f
}

// TestVerifyGuardedLoads checks that the condition of an if_then_else
// guards the loads of its arms (its negation the second arm's), and that
// loads the guard does not keep in bounds are still refused.
func TestVerifyGuardedLoads(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cond   func(ax ir.Expr) ir.Expr
		reason string // "" when well formed
	}{
		{"guarded", nil, ""},
		{"guarded by a negation", func(ax ir.Expr) ir.Expr { return ir.NotOf(ir.LT(ax, ir.Int(16))) }, ""},
		{"guarded by a negated disjunction in the first arm only", func(ax ir.Expr) ir.Expr {
			return ir.NotOf(ir.Or(ir.LT(ax, ir.Int(16)), ir.LT(ir.Int(30), ax)))
		}, "load of T_add_1: index v_i0 of dimension 0 ranges over [0, 23], outside [0, 16)"},
		{"unguarded", func(ax ir.Expr) ir.Expr { return ir.True() },
			"load of T_add_2: index v_i0 - 16 of dimension 0 ranges over [-16, 7], outside [0, 8)"},
		{"second arm beyond the guard", func(ax ir.Expr) ir.Expr { return ir.LE(ir.Int(20), ax) },
			"load of T_add_1: index v_i0 of dimension 0 ranges over [0, 19], outside [0, 16)"},
		{"first arm beyond the guard", func(ax ir.Expr) ir.Expr { return ir.LE(ir.Int(12), ax) },
			"load of T_add_2: index v_i0 - 16 of dimension 0 ranges over [-4, 7], outside [0, 8)"},
		{"no guard from a negated conjunction", func(ax ir.Expr) ir.Expr {
			return ir.And(ir.LE(ir.Int(16), ax), ir.LT(ax, ir.Int(24)))
		}, "load of T_add_1: index v_i0 of dimension 0 ranges over [0, 23], outside [0, 16)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := analysis.VerifyWellFormed(concat(t, tc.cond))
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var wf *analysis.WellFormedError
			if !errors.As(err, &wf) {
				t.Fatalf("VerifyWellFormed = %v, want a *WellFormedError", err)
			}
			if !strings.Contains(wf.Detail(), tc.reason) {
				t.Errorf("no problem containing %q; got:\n%s", tc.reason, wf.Detail())
			}
		})
	}
}

func TestVerifyProblems(t *testing.T) {
	tests := []struct {
		name   string
		build  func(t *testing.T) *ir.PrimFunc
		where  string
		reason string
	}{
		{"outer loop var in body", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			b := block(t, f, "T_matmul_NT")
			i := ir.NewIndex(f).Loops(b)[0].Var
			st := b.Body.(*ir.BufferStore)
			st.Indices[0] = i
			return f
		}, `block "T_matmul_NT"`, "uses i, which is not visible here"},
		{"undefined var in binding", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			ir.NewIndex(f).Realize(block(t, f, "T_matmul_NT")).IterValues[0] = ir.NewVar("ghost", ir.Int32)
			return f
		}, `block "T_matmul_NT"`, "uses undefined variable ghost"},
		{"var defined twice", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			loops := ir.NewIndex(f).Loops(block(t, f, "T_matmul_NT"))
			loops[1].Var = loops[0].Var
			return f
		}, "loop i in block", "variable i is defined again"},
		{"binding outside domain", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			ir.NewIndex(f).Loops(block(t, f, "T_matmul_NT"))[0].SetExtent(256)
			return f
		}, `block "T_matmul_NT"`, "iter var v_i (spatial) with domain [0, 128) is bound to i, which ranges over [0, 255]"},
		{"imperfect split without predicate", func(t *testing.T) *ir.PrimFunc { return imperfectSplit(false) },
			`block "B"`, "is bound to i_0 * 32 + i_1, which ranges over [0, 127]"},
		{"duplicate block name", func(t *testing.T) *ir.PrimFunc {
			f := decomposed(t)
			block(t, f, "T_matmul_NT_init").Name = "T_matmul_NT_update"
			return f
		}, `block "T_matmul_NT_update"`, "block name is not unique"},
		{"root name", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			f.Root().Name = "top"
			return f
		}, "function main", `root block is named "top"`},
		{"zero extent", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			ir.NewIndex(f).Loops(block(t, f, "T_matmul_NT"))[2].SetExtent(0)
			return f
		}, "loop k", "extent 0"},
		{"invalid thread tag", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			l := ir.NewIndex(f).Loops(block(t, f, "T_matmul_NT"))[0]
			l.Kind, l.Thread = ir.ThreadBinding, "threadIdx.w"
			return f
		}, "loop i", `bound to invalid thread tag "threadIdx.w"`},
		{"tag on a serial loop", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			ir.NewIndex(f).Loops(block(t, f, "T_matmul_NT"))[0].Thread = "blockIdx.x"
			return f
		}, "loop i", `serial loop has thread tag "blockIdx.x"`},
		{"nested tag with other extent", func(t *testing.T) *ir.PrimFunc {
			f := fixtures.C1DScheduled()
			l := ir.NewIndex(f).Loops(block(t, f, "PadInput_shared"))[5]
			l.Kind, l.Thread = ir.ThreadBinding, "threadIdx.x"
			return f
		}, "loop ax0_ax1_ax2_fused", "bound to threadIdx.x with extent 260 inside loop n_2_l_2_co_2_fused bound to it with extent 4"},
		{"kernel with two extents for one tag", func(t *testing.T) *ir.PrimFunc {
			f := fixtures.C1DScheduled()
			ix := ir.NewIndex(f)
			a := ix.Loops(block(t, f, "PadInput_shared"))[4]  // rc_0
			b := ix.Loops(block(t, f, "conv1d_nlc_local"))[4] // ax1
			a.Kind, a.Thread = ir.ThreadBinding, "threadIdx.y"
			b.Kind, b.Thread = ir.ThreadBinding, "threadIdx.y"
			return f
		}, "loop ax1", "bound to threadIdx.y with extent 4, but the kernel already binds it with extent 16"},
		{"buffer not allocated", func(t *testing.T) *ir.PrimFunc {
			f, err := fixtures.Conv2DNHWC(1, 8, 8, 3, 4, 3, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			f.Root().AllocBuffers = nil
			return f
		}, `block "PadInput"`, "store to PadInput, which is neither a parameter nor allocated by an enclosing block"},
		{"buffer allocated twice", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			f.Root().AllocBuffers = []*ir.Buffer{f.Params[0]}
			return f
		}, `block "root"`, "buffer p0 is allocated again (or is a parameter)"},
		{"store out of bounds", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			b := block(t, f, "T_matmul_NT")
			st := b.Body.(*ir.BufferStore)
			st.Indices[1] = ir.Add(st.Indices[1], ir.Int(1))
			return f
		}, `block "T_matmul_NT"`, "store to T_matmul_NT: index v_j + 1 of dimension 1 ranges over [1, 128], outside [0, 128)"},
		{"unguarded padding load", func(t *testing.T) *ir.PrimFunc {
			f, err := fixtures.Conv2DNHWC(1, 8, 8, 3, 4, 3, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			st := block(t, f, "PadInput").Body.(*ir.BufferStore)
			st.Value = st.Value.(*ir.Call).Args()[1] // drop the if_then_else
			return f
		}, `block "PadInput"`, "load of inputs: index v_i1 - 1 of dimension 1 ranges over [-1, 8], outside [0, 8)"},
		{"load outside declared region", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			b := block(t, f, "T_matmul_NT")
			b.Reads[0].Region[0].Min = ir.Add(b.Reads[0].Region[0].Min, ir.Int(1))
			return f
		}, `block "T_matmul_NT"`, "load of p0[v_i, v_k] lies outside the block's declared region of p0"},
		{"load not in reads", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			b := block(t, f, "T_matmul_NT")
			b.Reads = b.Reads[:1]
			return f
		}, `block "T_matmul_NT"`, "load of p1, which is not in the block's T.reads"},
		{"reduction without init", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			block(t, f, "T_matmul_NT").Init = nil
			return f
		}, `block "T_matmul_NT"`, "reduction block has no init, and no earlier block writes T_matmul_NT"},
		{"init without reduce", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			block(t, f, "T_matmul_NT").IterVars[2].Kind = ir.Spatial
			return f
		}, `block "T_matmul_NT"`, "block has an init but no reduce iter var"},
		{"reduction writes along reduce var", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			b := block(t, f, "T_matmul_NT")
			b.Writes[0].Region[1].Min = b.IterVars[2].Var
			return f
		}, `block "T_matmul_NT"`, "reduction writes T_matmul_NT at a location that depends on a reduce iter var (dimension 1)"},
		{"write region outside buffer", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			b := block(t, f, "T_matmul_NT")
			b.Writes[0].Region[0].Extent = ir.Int(2)
			return f
		}, `block "T_matmul_NT"`, "writes: region of T_matmul_NT spans [0, 129) in dimension 0, outside the buffer's extent 128"},
		{"store of wrong dtype", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			b := block(t, f, "T_matmul_NT")
			b.Init.(*ir.BufferStore).Value = ir.Int(0)
			return f
		}, `block "T_matmul_NT" init`, "stores a int32 value into float32 buffer T_matmul_NT"},
		{"binding count", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			r := ir.NewIndex(f).Realize(block(t, f, "T_matmul_NT"))
			r.IterValues = r.IterValues[:2]
			return f
		}, `block "T_matmul_NT"`, "2 bindings for 3 iter vars"},
		{"bad shape", func(t *testing.T) *ir.PrimFunc {
			f := dense(t)
			f.Params[0] = ir.NewBuffer("p0", ir.Float32, []int64{128, 0}, "")
			return f
		}, "function main", "buffer p0 has extent 0 in dimension 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := analysis.VerifyWellFormed(tt.build(t))
			var wf *analysis.WellFormedError
			if !errors.As(err, &wf) {
				t.Fatalf("VerifyWellFormed = %v, want a *WellFormedError", err)
			}
			for _, p := range wf.Problems {
				if strings.HasPrefix(p.Where, tt.where) && strings.Contains(p.Reason, tt.reason) {
					return
				}
			}
			t.Errorf("no problem at %q containing %q; got:\n%s", tt.where, tt.reason, wf.Detail())
		})
	}
}

func TestWellFormedErrorMessage(t *testing.T) {
	f := dense(t)
	block(t, f, "T_matmul_NT").Init = nil
	f.Root().Name = "top"
	err := analysis.VerifyWellFormed(f)
	if err == nil || !strings.HasPrefix(err.Error(), "kernels: main is ill-formed: function main: root block is named") || !strings.Contains(err.Error(), "(and 1 more)") {
		t.Errorf("Error() = %v", err)
	}
}

// TestVerifySymbolicExtents: a loop of symbolic extent is well-formed when
// its extent uses outer loops only and keeps the bindings in their
// domains, which the check sees by enumerating the loops involved (a
// constant bound of j in range(i + 1) would be [0, 3] for any i).
func TestVerifySymbolicExtents(t *testing.T) {
	if err := analysis.VerifyWellFormed(fixtures.Triangular(4, 1)); err != nil {
		t.Fatalf("the triangular copy: %v", err)
	}
	symbolic := func(f *ir.PrimFunc) *ir.For {
		var j *ir.For
		ir.WalkStmt(f.Body, func(s ir.Stmt) bool {
			if l, ok := s.(*ir.For); ok && l.SymbolicExtent() != nil {
				j = l
			}
			return true
		})
		return j
	}
	tests := []struct {
		name   string
		f      func() *ir.PrimFunc
		reason string
	}{
		{"extent past the domain", func() *ir.PrimFunc { return fixtures.Triangular(4, 2) },
			"iter var vj (spatial) with domain [0, 4) is bound to j, which ranges over [0, 4]"},
		{"extent uses the loop itself", func() *ir.PrimFunc {
			f := fixtures.Triangular(4, 1)
			j := symbolic(f)
			j.SetExtentExpr(ir.Add(j.Var, ir.Int(1)))
			return f
		}, "extent uses j, which is not visible here"},
		{"extent always negative", func() *ir.PrimFunc {
			f := fixtures.Triangular(4, 1)
			j := symbolic(f)
			j.SetExtentExpr(ir.Sub(ir.Int(-1), j.SymbolicExtent()))
			return f
		}, "extent -1 - (i + 1) is always negative"},
		{"thread-bound loop of symbolic extent", func() *ir.PrimFunc {
			f := fixtures.Triangular(4, 1)
			j := symbolic(f)
			j.Kind, j.Thread = ir.ThreadBinding, "threadIdx.x"
			return f
		}, "bound to threadIdx.x with the non-constant extent i + 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := analysis.VerifyWellFormed(tt.f())
			if err == nil || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("got %v, want a problem %q", err, tt.reason)
			}
		})
	}
}
