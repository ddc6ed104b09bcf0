package schedule_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/interp"
	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
	"dragonx/kernels/te"
)

// The small workloads the tests schedule.

func dense(t testing.TB) *ir.PrimFunc {
	t.Helper()
	f, err := fixtures.DenseNT(8, 12, 16)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func conv1d(t testing.TB) *ir.PrimFunc {
	t.Helper()
	f, err := fixtures.Conv1DNLC(1, 10, 4, 6, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// chain is A -> B = A*2 -> C = B+1 -> D = C*C, all 6x8: three elementwise
// blocks B, C and D.
func chain(t testing.TB) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	a := b.Placeholder("A", ir.Float32, 6, 8)
	bb := b.Compute("B", []int64{6, 8}, func(i []ir.Expr) ir.Expr { return ir.Mul(a.At(i...), ir.F32(2)) })
	c := b.Compute("C", []int64{6, 8}, func(i []ir.Expr) ir.Expr { return ir.Add(bb.At(i...), ir.F32(1)) })
	d := b.Compute("D", []int64{6, 8}, func(i []ir.Expr) ir.Expr { return ir.Mul(c.At(i...), c.At(i...)) })
	f, err := b.Func("main", []*te.Tensor{a, d})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// reduceRelu is S[i] = sum_k A[i, k], then R[i] = max(S[i], 0): a
// reduction block S followed by an elementwise block R.
func reduceRelu(t testing.TB) *ir.PrimFunc {
	t.Helper()
	b := te.NewBuilder()
	a := b.Placeholder("A", ir.Float32, 12, 10)
	k := b.ReduceAxis("k", 10)
	s := b.ComputeReduce("S", []int64{12}, func(i []ir.Expr) te.Reduction {
		return te.Sum(a.At(i[0], k.Var()), k)
	})
	r := b.Compute("R", []int64{12}, func(i []ir.Expr) ir.Expr { return ir.Max(s.At(i[0]), ir.F32(0)) })
	f, err := b.Func("main", []*te.Tensor{a, r})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// opaqueBlock is a copy B[i] = A[i] whose iter var is opaque: the
// schedule cannot prove anything about reordering or parallelising it.
func opaqueBlock(t testing.TB) *ir.PrimFunc {
	t.Helper()
	a := ir.NewBuffer("A", ir.Float32, []int64{4, 6}, "")
	bb := ir.NewBuffer("B", ir.Float32, []int64{4, 6}, "")
	i, j := ir.NewFor("i", 4, nil), ir.NewFor("j", 6, nil)
	vi, vj := ir.NewVar("vi", ir.Int32), ir.NewVar("vj", ir.Int32)
	blk := &ir.Block{
		Name:     "B",
		IterVars: []ir.IterVar{{Var: vi, Dom: ir.Dom{Extent: 4}, Kind: ir.Opaque}, {Var: vj, Dom: ir.Dom{Extent: 6}}},
		Reads:    []ir.BufferRegion{ir.PointRegion(a, vi, vj)},
		Writes:   []ir.BufferRegion{ir.PointRegion(bb, vi, vj)},
		Body:     ir.Store(bb, ir.Load(a, vi, vj), vi, vj),
	}
	j.Body = &ir.BlockRealize{IterValues: []ir.Expr{i.Var, j.Var}, Block: blk}
	i.Body = j
	return ir.NewPrimFunc("main", []*ir.Buffer{a, bb}, nil, i)
}

// newSched returns a checking schedule of f.
func newSched(f *ir.PrimFunc) *schedule.Schedule {
	s := schedule.New(f, 1)
	s.SetCheck(true)
	return s
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func getBlock(t testing.TB, s *schedule.Schedule, name string) schedule.BlockRV {
	t.Helper()
	b, err := s.GetBlock(name, "main")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func getLoops(t testing.TB, s *schedule.Schedule, b schedule.BlockRV) []schedule.LoopRV {
	t.Helper()
	ls, err := s.GetLoops(b)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func loopOf(t testing.TB, s *schedule.Schedule, l schedule.LoopRV) *ir.For {
	t.Helper()
	x, err := s.GetLoopOf(l)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func blockOf(t testing.TB, s *schedule.Schedule, b schedule.BlockRV) *ir.Block {
	t.Helper()
	x, err := s.GetBlockOf(b)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// checkSame verifies sched and checks with the interpreter that it
// computes what base does.
func checkSame(t testing.TB, base, sched *ir.PrimFunc) {
	t.Helper()
	if err := analysis.VerifyWellFormed(sched); err != nil {
		t.Fatalf("%v\n%s", err, sched.Script())
	}
	if err := sameResults(base, sched, 3); err != nil {
		t.Fatalf("%v\n%s", err, sched.Script())
	}
}

func sameResults(base, sched *ir.PrimFunc, seed uint64) error {
	return interp.SameOutputs(context.Background(), base, sched, seed, 1e-4, 1e-4)
}

// wantError checks that err is a schedule error of primitive prim whose
// message contains every fragment.
func wantError(t testing.TB, err error, prim string, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s succeeded, want an error mentioning %q", prim, fragments)
	}
	var se *schedule.Error
	var de *schedule.DecisionError
	switch {
	case errors.As(err, &se):
		if se.Primitive != prim {
			t.Errorf("error from %s, want %s: %v", se.Primitive, prim, err)
		}
	case errors.As(err, &de):
		if de.Primitive != prim {
			t.Errorf("error from %s, want %s: %v", de.Primitive, prim, err)
		}
	default:
		t.Fatalf("error %v (%T) is not a schedule error", err, err)
	}
	if !strings.HasPrefix(err.Error(), "kernels: ") {
		t.Errorf("error %q lacks the package prefix", err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

// constExtent returns a loop's constant extent, -1 for a symbolic one.
func constExtent(l *ir.For) int64 {
	if n, ok := l.ConstExtent(); ok {
		return n
	}
	return -1
}
