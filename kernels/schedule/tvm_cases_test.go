package schedule_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
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

// tvmMatmul is TVM's matmul of test_tir_schedule_reduction.py: block
// "update", C[vi, vj] += A[vi, vk] * B[vj, vk], all 128x128.
func tvmMatmul(t testing.TB) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	a := b.Placeholder("A", ir.Float32, 128, 128)
	bb := b.Placeholder("B", ir.Float32, 128, 128)
	k := b.ReduceAxis("k", 128)
	c := b.ComputeReduce("update", []int64{128, 128}, func(i []ir.Expr) te.Reduction {
		return te.Sum(ir.Mul(a.At(i[0], k.Var()), bb.At(i[1], k.Var())), k)
	}, te.Names("i", "j"), te.BufferName("C"))
	f, err := b.Func("main", []*te.Tensor{a, bb, c})
	if err != nil {
		t.Fatal(err)
	}
	return tvmRename(f)
}

// colsum is TVM's colsum_with_vectorization: B[vi] += A[vk, vi] under
// loops k (serial) and i (vectorized).
func colsum(t testing.TB) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	a := b.Placeholder("A", ir.Float32, 128, 32)
	k := b.ReduceAxis("k", 128)
	c := b.ComputeReduce("B", []int64{32}, func(i []ir.Expr) te.Reduction {
		return te.Sum(a.At(k.Var(), i[0]), k)
	}, te.Names("i"))
	f, err := b.Func("main", []*te.Tensor{a, c})
	if err != nil {
		t.Fatal(err)
	}
	return tvmRename(f)
}

// TVM's test_tir_schedule_reduction.py decompose_reduction cases, and a
// loop annotation that the init loops do not copy (TVM v0.20 builds them
// from var, extent, kind and thread binding only).
func TestTVMDecomposeReduction(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(testing.TB) *ir.PrimFunc
		op   func(t *testing.T, s *schedule.Schedule) error
		want string // file under testdata/tvm, or "" for an expected error
		frag string
	}{
		{name: "decompose0", f: tvmMatmul, want: "decompose_reduction0",
			op: func(t *testing.T, s *schedule.Schedule) error {
				b := getBlock(t, s, "update")
				_, err := s.DecomposeReduction(b, getLoops(t, s, b)[0])
				return err
			}},
		{name: "decompose2", f: tvmMatmul, want: "decompose_reduction2",
			op: func(t *testing.T, s *schedule.Schedule) error {
				b := getBlock(t, s, "update")
				_, err := s.DecomposeReduction(b, getLoops(t, s, b)[2])
				return err
			}},
		{name: "decompose3 (loop under a reduction loop)", f: tvmMatmul, frag: "must be above every loop",
			op: func(t *testing.T, s *schedule.Schedule) error {
				b := getBlock(t, s, "update")
				ls := getLoops(t, s, b)
				if err := s.Reorder([]schedule.LoopRV{ls[2], ls[1]}); err != nil {
					t.Fatal(err)
				}
				_, err := s.DecomposeReduction(b, ls[1])
				return err
			}},
		{name: "decompose4", f: tvmMatmul, want: "decompose_reduction4",
			op: func(t *testing.T, s *schedule.Schedule) error {
				b := getBlock(t, s, "update")
				ls := getLoops(t, s, b)
				i := must[[]schedule.LoopRV](t)(s.Split(ls[0], []int64{16, 8}, true, false))
				must[[]schedule.LoopRV](t)(s.Split(ls[2], []int64{19, 7}, true, false))
				_, err := s.DecomposeReduction(b, i[1])
				return err
			}},
		{name: "different for kind", f: colsum, want: "decompose_reduction_vectorized",
			op: func(t *testing.T, s *schedule.Schedule) error {
				b := getBlock(t, s, "B")
				ls := getLoops(t, s, b)
				if err := s.Reorder([]schedule.LoopRV{ls[1], ls[0]}); err != nil {
					t.Fatal(err)
				}
				if err := s.Vectorize(ls[0]); err != nil {
					t.Fatal(err)
				}
				_, err := s.DecomposeReduction(b, ls[1])
				return err
			}},
		{name: "thread binding", f: colsum, want: "decompose_reduction_thread",
			op: func(t *testing.T, s *schedule.Schedule) error {
				b := getBlock(t, s, "B")
				ls := getLoops(t, s, b)
				if err := s.Bind(ls[0], "threadIdx.x"); err != nil {
					t.Fatal(err)
				}
				_, err := s.DecomposeReduction(b, ls[0])
				return err
			}},
		{name: "loop annotations stay on the update", f: tvmMatmul, want: "decompose_reduction_loop_annotation",
			op: func(t *testing.T, s *schedule.Schedule) error {
				b := getBlock(t, s, "update")
				ls := getLoops(t, s, b)
				if err := s.Annotate(ls[1], "pragma_auto_unroll_max_step", ir.AnnInt(16)); err != nil {
					t.Fatal(err)
				}
				_, err := s.DecomposeReduction(b, ls[0])
				return err
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSched(c.f(t))
			err := c.op(t, s)
			if c.want == "" {
				wantError(t, err, "DecomposeReduction", c.frag)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantTVM(t, s.Func(), c.want)
		})
	}
}

// copy2D is B[i, j] = A[i, j] over rows x cols, the shape of a cache
// stage's copy block.
func copy2D(t testing.TB, rows, cols int64) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	a := b.Placeholder("A", ir.Float32, rows, cols)
	c := b.Compute("B", []int64{rows, cols}, func(i []ir.Expr) ir.Expr { return a.At(i...) }, te.Names("ax0", "ax1"))
	f, err := b.Func("main", []*te.Tensor{a, c})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTVMSplitForms checks the bindings and predicate a split of a fused
// loop gets, in the forms TVM prints (IterMapSimplify keeps the fused sum
// whole; the predicate is appended as built): the cooperative fetch of
// p0_shared in DenseAdd_scheduled_gpu
// (tests/python/meta_schedule/test_meta_schedule_trace_apply.py), a fused
// 16x4 copy split by [1, 128, 2], and of A_shared in
// test_meta_schedule_postproc_rewrite_cooperative_fetch.py, a fused
// 512x512 copy split by [None, 8].
func TestTVMSplitForms(t *testing.T) {
	for _, c := range []struct {
		name       string
		rows, cols int64
		factors    []int64
		want       string
	}{
		{"imperfect", 16, 4, []int64{1, 128, 2}, "split_fused_imperfect"},
		{"perfect", 512, 512, []int64{schedule.Infer, 8}, "split_fused_perfect"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSched(copy2D(t, c.rows, c.cols))
			b := getBlock(t, s, "B")
			fused := must[schedule.LoopRV](t)(s.Fuse(getLoops(t, s, b), true))
			must[[]schedule.LoopRV](t)(s.Split(fused, c.factors, true, false))
			wantTVM(t, s.Func(), c.want)
		})
	}
}

// layoutTrans is TVM's before of test_reverse_compute_at_layout_trans:
// compute B = A + 1 (1x3x5x5x16), then T_layout_trans C[ax0, ax1, ax2,
// ax3, ax4] = B[ax0, (ax1*8 + ax4) // 16, ax2, ax3, (ax1*8 + ax4) % 16].
func layoutTrans(t testing.TB) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	a := b.Placeholder("A", ir.Float32, 1, 3, 5, 5, 16)
	bb := b.Compute("compute", []int64{1, 3, 5, 5, 16}, func(i []ir.Expr) ir.Expr { return ir.Add(a.At(i...), ir.F32(1)) }, te.BufferName("B"))
	c := b.Compute("T_layout_trans", []int64{1, 6, 5, 5, 8}, func(i []ir.Expr) ir.Expr {
		f := ir.Add(ir.Mul(i[1], ir.Int(8)), i[4])
		return bb.At(i[0], ir.FloorDiv(f, ir.Int(16)), i[2], i[3], ir.FloorMod(f, ir.Int(16)))
	}, te.Names("ax0", "ax1", "ax2", "ax3", "ax4"), te.BufferName("C"))
	f, err := b.Func("main", []*te.Tensor{a, c})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// tiledProducer is the case: a block D writing B[vi*4 + vj]
// (B has 128 elements, vi in [0, 32), vj in [0, 4)), consumed by
// C[i] = B[i] + 1 whose loop is split by 16.
func tiledProducer(t testing.TB) *ir.PrimFunc {
	t.Helper()
	a := ir.NewBuffer("A", ir.Float32, []int64{128}, "")
	bb := ir.NewBuffer("B", ir.Float32, []int64{128}, "")
	c := ir.NewBuffer("C", ir.Float32, []int64{128}, "")
	i, j := ir.NewFor("i", 32, nil), ir.NewFor("j", 4, nil)
	vi, vj := ir.NewVar("vi", ir.Int32), ir.NewVar("vj", ir.Int32)
	idx := ir.Add(ir.Mul(vi, ir.Int(4)), vj)
	prod := &ir.Block{
		Name:     "B",
		IterVars: []ir.IterVar{{Var: vi, Dom: ir.Dom{Extent: 32}}, {Var: vj, Dom: ir.Dom{Extent: 4}}},
		Reads:    []ir.BufferRegion{ir.PointRegion(a, idx)},
		Writes:   []ir.BufferRegion{ir.PointRegion(bb, idx)},
		Body:     ir.Store(bb, ir.Mul(ir.Load(a, idx), ir.F32(2)), idx),
	}
	j.Body = &ir.BlockRealize{IterValues: []ir.Expr{i.Var, j.Var}, Block: prod}
	i.Body = j
	k := ir.NewFor("k", 128, nil)
	vk := ir.NewVar("vk", ir.Int32)
	cons := &ir.Block{
		Name:     "C",
		IterVars: []ir.IterVar{{Var: vk, Dom: ir.Dom{Extent: 128}}},
		Reads:    []ir.BufferRegion{ir.PointRegion(bb, vk)},
		Writes:   []ir.BufferRegion{ir.PointRegion(c, vk)},
		Body:     ir.Store(c, ir.Add(ir.Load(bb, vk), ir.F32(1)), vk),
	}
	k.Body = &ir.BlockRealize{IterValues: []ir.Expr{k.Var}, Block: cons}
	return ir.NewPrimFunc("main", []*ir.Buffer{a, c}, []*ir.Buffer{bb}, &ir.SeqStmt{Stmts: []ir.Stmt{i, k}})
}

// TestTVMAffineComputeAt: TVM's test_reverse_compute_at_layout_trans
// (expected module as data), and the compute-at of a block
// writing B[vi*4 + vj] at a split consumer loop; both need the affine
// path (TVM's UpdateBlockVarDomainAffine), and both compute what they did.
func TestTVMAffineComputeAt(t *testing.T) {
	t.Run("reverse_compute_at layout_trans", func(t *testing.T) {
		f := layoutTrans(t)
		s := newSched(f)
		loops := getLoops(t, s, getBlock(t, s, "compute"))
		if err := s.ReverseComputeAt(getBlock(t, s, "T_layout_trans"), loops[1], false, -1); err != nil {
			t.Fatal(err)
		}
		wantTVM(t, s.Func(), "reverse_compute_at_layout_trans")
		checkSame(t, f, s.Func())
	})
	t.Run("compute_at vi*4+vj", func(t *testing.T) {
		f := tiledProducer(t)
		s := newSched(f)
		c := getBlock(t, s, "C")
		parts := must[[]schedule.LoopRV](t)(s.Split(getLoops(t, s, c)[0], []int64{8, 16}, true, false))
		if err := s.ComputeAt(getBlock(t, s, "B"), parts[0], false, -1); err != nil {
			t.Fatal(err)
		}
		wantTVM(t, s.Func(), "compute_at_affine_producer")
		checkSame(t, f, s.Func())
	})
}

// squareSum is TVM's square_sum of test_tir_schedule_rfactor.py:
// C[b] = sum over i, j of A[b, i, j] * A[b, i, j], 16x256x256.
func squareSum(t testing.TB) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	a := b.Placeholder("A", ir.Float32, 16, 256, 256)
	i, j := b.ReduceAxis("i", 256), b.ReduceAxis("j", 256)
	c := b.ComputeReduce("C", []int64{16}, func(x []ir.Expr) te.Reduction {
		v := a.At(x[0], i.Var(), j.Var())
		return te.Sum(ir.Mul(v, v), i, j)
	}, te.Names("b"))
	f, err := b.Func("main", []*te.Tensor{a, c})
	if err != nil {
		t.Fatal(err)
	}
	return tvmRename(f)
}

// rowsum is B[i] = sum over k of A[i, k] (128x128), with the given init
// value (TVM's rowsum, and rowsum_wrong_reduce_pattern1 with 1).
func rowsum(init float64) func(testing.TB) *ir.PrimFunc {
	return func(t testing.TB) *ir.PrimFunc {
		t.Helper()
		b := te.NewBuilder()
		a := b.Placeholder("A", ir.Float32, 128, 128)
		k := b.ReduceAxis("k", 128)
		c := b.ComputeReduce("B", []int64{128}, func(x []ir.Expr) te.Reduction {
			r := te.Sum(a.At(x[0], k.Var()), k)
			r.Init = ir.F32(init)
			return r
		}, te.Names("i"))
		f, err := b.Func("main", []*te.Tensor{a, c})
		if err != nil {
			t.Fatal(err)
		}
		return tvmRename(f)
	}
}

// rowsumNotSerial is TVM's rowsum_not_serial: rowsum with a parallel k
// loop (written so in TVMScript; the Parallel primitive refuses it).
func rowsumNotSerial(t testing.TB) *ir.PrimFunc {
	f := rowsum(0)(t)
	ir.WalkStmt(f.Body, func(x ir.Stmt) bool {
		if l, ok := x.(*ir.For); ok && l.Var.Name() == "k" {
			l.Kind = ir.Parallel
		}
		return true
	})
	return f
}

// TVM's test_tir_schedule_rfactor.py cases our IR expresses (one buffer
// per reduction): the expected modules of test_reduction_rfactor_matmul
// (factor axis 0 and -3), test_reduction_rfactor_square_sum, and the
// ScheduleError cases; each accepted result computes what the original did.
func TestTVMRFactor(t *testing.T) {
	splitK := func(t *testing.T, s *schedule.Schedule) []schedule.LoopRV {
		b := getBlock(t, s, "update")
		ls := getLoops(t, s, b)
		ks := must[[]schedule.LoopRV](t)(s.Split(ls[2], []int64{4, 8, 4}, true, false))
		return append(ls[:2:2], ks...)
	}
	for _, c := range []struct {
		name string
		f    func(testing.TB) *ir.PrimFunc
		op   func(t *testing.T, s *schedule.Schedule) (schedule.BlockRV, error)
		want string // expected module, or "" for an error containing frag
		rf   string // the name of the rfactor block
		frag string
	}{
		{name: "matmul", f: tvmMatmul, want: "rfactor_matmul", rf: "update_rf",
			op: func(t *testing.T, s *schedule.Schedule) (schedule.BlockRV, error) {
				return s.RFactor(splitK(t, s)[4], 0)
			}},
		{name: "matmul factor axis -3", f: tvmMatmul, want: "rfactor_matmul", rf: "update_rf",
			op: func(t *testing.T, s *schedule.Schedule) (schedule.BlockRV, error) {
				return s.RFactor(splitK(t, s)[4], -3)
			}},
		{name: "square sum", f: squareSum, want: "rfactor_square_sum", rf: "C_rf",
			op: func(t *testing.T, s *schedule.Schedule) (schedule.BlockRV, error) {
				return s.RFactor(getLoops(t, s, getBlock(t, s, "C"))[2], 1)
			}},
		{name: "predicate", f: rowsum(0), frag: "bounds its reduction loops",
			op: func(t *testing.T, s *schedule.Schedule) (schedule.BlockRV, error) {
				ls := getLoops(t, s, getBlock(t, s, "B"))
				ks := must[[]schedule.LoopRV](t)(s.Split(ls[1], []int64{13, 10}, true, false))
				return s.RFactor(ks[0], 1)
			}},
		{name: "factor axis 3", f: tvmMatmul, frag: "factor_axis 3 is out of range",
			op: func(t *testing.T, s *schedule.Schedule) (schedule.BlockRV, error) {
				return s.RFactor(splitK(t, s)[4], 3)
			}},
		{name: "factor axis -4", f: tvmMatmul, frag: "factor_axis -4 is out of range",
			op: func(t *testing.T, s *schedule.Schedule) (schedule.BlockRV, error) {
				return s.RFactor(splitK(t, s)[4], -4)
			}},
		{name: "not serial", f: rowsumNotSerial, frag: "needs a serial loop",
			op: func(t *testing.T, s *schedule.Schedule) (schedule.BlockRV, error) {
				return s.RFactor(getLoops(t, s, getBlock(t, s, "B"))[1], 0)
			}},
		{name: "wrong reduce pattern (init 1)", f: rowsum(1), frag: "matches no commutative reducer",
			op: func(t *testing.T, s *schedule.Schedule) (schedule.BlockRV, error) {
				return s.RFactor(getLoops(t, s, getBlock(t, s, "B"))[1], 0)
			}},
		{name: "wrong loops (data-parallel loop)", f: rowsum(0), frag: "used by a data-parallel iter var",
			op: func(t *testing.T, s *schedule.Schedule) (schedule.BlockRV, error) {
				return s.RFactor(getLoops(t, s, getBlock(t, s, "B"))[0], 0)
			}},
		{name: "not a reduction block", f: elementWise, frag: "is not a reduction block",
			op: func(t *testing.T, s *schedule.Schedule) (schedule.BlockRV, error) {
				return s.RFactor(getLoops(t, s, getBlock(t, s, "B"))[1], 0)
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.f(t)
			s := newSched(f)
			rf, err := c.op(t, s)
			if c.want == "" {
				wantError(t, err, "RFactor", c.frag)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := blockOf(t, s, rf).Name; got != c.rf {
				t.Errorf("rfactor block %q, want %q", got, c.rf)
			}
			wantTVM(t, s.Func(), c.want)
			checkSame(t, f, s.Func())
		})
	}
}

// TVM's test_cache_read_elementwise and test_cache_write_elementwise
// (test_tir_schedule_cache_read_write.py): stage names <buffer>_<scope>,
// buffers appended to the scope's allocations, the original blocks keep
// their names.
func TestTVMCacheElementwise(t *testing.T) {
	t.Run("cache_read", func(t *testing.T) {
		f := elementWise(t)
		s := newSched(f)
		a := must[schedule.BlockRV](t)(s.CacheRead(getBlock(t, s, "B"), 0, "global", nil))
		b := must[schedule.BlockRV](t)(s.CacheRead(getBlock(t, s, "C"), 0, "local", nil))
		if blockOf(t, s, a).Name != "A_global" || blockOf(t, s, b).Name != "B_local" {
			t.Errorf("stages %q, %q", blockOf(t, s, a).Name, blockOf(t, s, b).Name)
		}
		wantTVM(t, s.Func(), "cache_read_elementwise")
		checkSame(t, f, s.Func())
	})
	t.Run("cache_write", func(t *testing.T) {
		f := elementWise(t)
		s := newSched(f)
		b := must[schedule.BlockRV](t)(s.CacheWrite(getBlock(t, s, "B"), 0, "local", nil))
		c := must[schedule.BlockRV](t)(s.CacheWrite(getBlock(t, s, "C"), 0, "global", nil))
		if blockOf(t, s, b).Name != "B_local" || blockOf(t, s, c).Name != "C_global" {
			t.Errorf("stages %q, %q", blockOf(t, s, b).Name, blockOf(t, s, c).Name)
		}
		wantTVM(t, s.Func(), "cache_write_elementwise")
		checkSame(t, f, s.Func())
	})
}

// floordivFloormod is TVM's floordiv_and_floormod_indices: A writes
// temp[i, j] = X[j, i] + 1 (16x16), B reads Y[i] = temp[i // 16, i % 16].
func floordivFloormod(t testing.TB) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	x := b.Placeholder("X", ir.Float32, 16, 16)
	tmp := b.Compute("A", []int64{16, 16}, func(i []ir.Expr) ir.Expr { return ir.Add(x.At(i[1], i[0]), ir.F32(1)) },
		te.Names("i", "j"), te.BufferName("temp"))
	y := b.Compute("B", []int64{256}, func(i []ir.Expr) ir.Expr {
		return tmp.At(ir.FloorDiv(i[0], ir.Int(16)), ir.FloorMod(i[0], ir.Int(16)))
	}, te.Names("i"), te.BufferName("Y"))
	f, err := b.Func("main", []*te.Tensor{x, y})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// recursiveFloordivFloormod is TVM's recursive_floordiv_floormod: "In"
// writes the 7-d B from A, "Out" reads B[v1 // 8, v2 // 4, v3 // 32, v1,
// v2 % 4 // 2, v3 % 32, v2 % 2].
func recursiveFloordivFloormod(t testing.TB) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	c := ir.Int
	a := b.Placeholder("A", ir.Float32, 16, 64, 1, 8, 8, 32)
	bb := b.Compute("In", []int64{1, 128, 16, 8, 2, 32, 2}, func(v []ir.Expr) ir.Expr {
		f1 := ir.Add(ir.Add(ir.Mul(v[1], c(4)), ir.Mul(v[4], c(2))), v[6])
		f2 := ir.Add(ir.Mul(v[2], c(32)), v[5])
		f3 := ir.Add(ir.Mul(v[0], c(8)), v[3])
		return ir.Add(a.At(ir.FloorDiv(f1, c(32)), ir.FloorDiv(f2, c(8)), ir.FloorDiv(f3, c(8)), ir.FloorMod(f2, c(8)), f3, ir.FloorMod(f1, c(32))), ir.F32(3))
	}, te.Names("axis1", "axis2", "axis3", "axis4", "axis5", "axis6", "axis7"), te.BufferName("B"))
	out := b.Compute("Out", []int64{3, 512, 512}, func(v []ir.Expr) ir.Expr {
		return ir.Mul(bb.At(ir.FloorDiv(v[0], c(8)), ir.FloorDiv(v[1], c(4)), ir.FloorDiv(v[2], c(32)), v[0],
			ir.FloorDiv(ir.FloorMod(v[1], c(4)), c(2)), ir.FloorMod(v[2], c(32)), ir.FloorMod(v[1], c(2))), ir.F32(2))
	}, te.Names("ax1", "ax2", "ax3"), te.BufferName("C"))
	f, err := b.Func("main", []*te.Tensor{a, out})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TVM's test_reverse_compute_at_floordiv_and_floormod_indices and
// test_reverse_compute_at_floordiv_and_floormod_recursive.
func TestTVMReverseComputeAtFloordiv(t *testing.T) {
	for _, c := range []struct {
		name, prod, cons string
		f                func(testing.TB) *ir.PrimFunc
		at               int
	}{
		{"reverse_compute_at_floordiv_floormod", "A", "B", floordivFloormod, 0},
		{"reverse_compute_at_recursive_floordiv", "In", "Out", recursiveFloordivFloormod, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.f(t)
			s := newSched(f)
			if err := s.ReverseComputeAt(getBlock(t, s, c.cons), getLoops(t, s, getBlock(t, s, c.prod))[c.at], false, -1); err != nil {
				t.Fatal(err)
			}
			wantTVM(t, s.Func(), c.name)
		})
	}
}

// TestReverseComputeAtPadding: moving a padding stage under the loop of
// the stage it reads would compute only the interior of its output (its
// reads need nothing at the borders); TVM does so and leaves the borders
// unwritten, dragonx refuses. Without the affine path the move was refused
// for another reason (the index v_i1 - 1 was not understood).
func TestReverseComputeAtPadding(t *testing.T) {
	s := newSched(conv1d(t))
	cr := must[schedule.BlockRV](t)(s.CacheRead(getBlock(t, s, "PadInput"), 0, "shared", nil))
	err := s.ReverseComputeAt(getBlock(t, s, "PadInput"), getLoops(t, s, cr)[0], false, -1)
	wantError(t, err, "ReverseComputeAt", "only part of iter var v_i1's domain [0, 12)", "uncomputed")
}

// elementWise3D is TVM's elementwise of test_tir_schedule_split_fuse.py:
// B[vi, vj, vk] = A[vi, vj, vk] * 2, 128x128x128.
func elementWise3D(t testing.TB) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	a := b.Placeholder("A", ir.Float32, 128, 128, 128)
	c := b.Compute("B", []int64{128, 128, 128}, func(i []ir.Expr) ir.Expr { return ir.Mul(a.At(i...), ir.F32(2)) }, te.Names("i", "j", "k"))
	f, err := b.Func("main", []*te.Tensor{a, c})
	if err != nil {
		t.Fatal(err)
	}
	return tvmRename(f)
}

// TVM's test_fuse, test_split, test_split_with_inferred_factor and
// test_split_with_predicate (test_tir_schedule_split_fuse.py; split's
// preserve_unit_iters defaults to true in TVM's Python API).
func TestTVMSplitFuse(t *testing.T) {
	i := schedule.Infer
	for _, c := range []struct {
		name    string
		fuse    bool
		factors [3][]int64
	}{
		{name: "fuse", fuse: true},
		{name: "split_case0", factors: [3][]int64{{2, 1, 64}, {4, 32}, {16, 8}}},
		{name: "split_case1", factors: [3][]int64{{i, 1, 64}, {2, i, 64}, {2, 1, i}}},
		{name: "split_with_predicate", factors: [3][]int64{{1000, 2, 3}, {i, 129}, {3, i}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := elementWise3D(t)
			s := newSched(f)
			ls := getLoops(t, s, getBlock(t, s, "B"))
			if c.fuse {
				must[schedule.LoopRV](t)(s.Fuse(ls, true))
			} else {
				for k, l := range ls {
					must[[]schedule.LoopRV](t)(s.Split(l, c.factors[k], true, false))
				}
			}
			wantTVM(t, s.Func(), "elementwise_"+c.name)
		})
	}
}

// TVM's test_reverse_compute_at_tiled: B tiled (i_0, j_0, i_1, j_1) by
// 16x16, then C (C = B + 1) reverse-computed at i_1 without unit loops.
// The tiled function is made here with Split and Reorder.
func TestTVMReverseComputeAtTiled(t *testing.T) {
	f := elementWise(t)
	s := newSched(f)
	b := getBlock(t, s, "B")
	ls := getLoops(t, s, b)
	is := must[[]schedule.LoopRV](t)(s.Split(ls[0], []int64{8, 16}, true, false))
	js := must[[]schedule.LoopRV](t)(s.Split(ls[1], []int64{8, 16}, true, false))
	if err := s.Reorder([]schedule.LoopRV{is[0], js[0], is[1], js[1]}); err != nil {
		t.Fatal(err)
	}
	if err := s.ReverseComputeAt(getBlock(t, s, "C"), is[1], false, -1); err != nil {
		t.Fatal(err)
	}
	wantTVM(t, s.Func(), "reverse_compute_at_tiled")
	checkSame(t, f, s.Func())
}

// TestReverseComputeInlineSecondConsumer: a consumer cannot be
// reverse-inlined into a producer whose buffer another block also reads
// (TVM's NonSingleProducerError: the producer must have a single
// consumer); the inlining used to remove the buffer under the other
// reader, found by the random-schedule test.
func TestReverseComputeInlineSecondConsumer(t *testing.T) {
	b := te.NewBuilder()
	a := b.Placeholder("A", ir.Float32, 8, 8)
	bb := b.Compute("B", []int64{8, 8}, func(i []ir.Expr) ir.Expr { return ir.Mul(a.At(i...), ir.F32(2)) })
	c := b.Compute("C", []int64{8, 8}, func(i []ir.Expr) ir.Expr { return ir.Add(bb.At(i...), ir.F32(1)) })
	d := b.Compute("D", []int64{8, 8}, func(i []ir.Expr) ir.Expr { return ir.Mul(bb.At(i...), c.At(i...)) })
	f, err := b.Func("main", []*te.Tensor{a, d})
	if err != nil {
		t.Fatal(err)
	}
	s := newSched(f)
	wantError(t, s.ReverseComputeInline(getBlock(t, s, "C")), "ReverseComputeInline", `B is also read by "D"`, "single consumer")
}
