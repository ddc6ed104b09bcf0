package interp_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/interp"
	"dragonx/kernels/ir"
	"dragonx/kernels/te"
)

func run(t *testing.T, f *ir.PrimFunc, args [][]float32) {
	t.Helper()
	p, err := interp.Compile(f)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if err := p.Run(context.Background(), args); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func check(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if err := interp.AllClose(got, want, 1e-5, 1e-5); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestMatmul(t *testing.T) {
	const m, n, k = 24, 20, 16
	f, err := fixtures.DenseNT(m, n, k)
	if err != nil {
		t.Fatal(err)
	}
	args := interp.RandomArgs(f, 1)
	run(t, f, args)
	a, b := args[0], args[1]
	want := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var acc float32
			for r := 0; r < k; r++ {
				acc += a[i*k+r] * b[j*k+r]
			}
			want[i*n+j] = acc
		}
	}
	check(t, "T_matmul_NT", args[2], want)
}

func TestConv2DPadded(t *testing.T) {
	const N, H, W, CI, CO, K, S, P = 1, 9, 7, 3, 4, 3, 2, 1
	f, err := fixtures.Conv2DNHWC(N, H, W, CI, CO, K, S, P)
	if err != nil {
		t.Fatal(err)
	}
	args := interp.RandomArgs(f, 2)
	run(t, f, args)
	in, w := args[0], args[1]
	OH, OW := (H+2*P-K)/S+1, (W+2*P-K)/S+1
	want := make([]float32, N*OH*OW*CO)
	for n := 0; n < N; n++ {
		for oh := 0; oh < OH; oh++ {
			for ow := 0; ow < OW; ow++ {
				for co := 0; co < CO; co++ {
					var acc float32
					for rh := 0; rh < K; rh++ {
						for rw := 0; rw < K; rw++ {
							for rc := 0; rc < CI; rc++ {
								h, ww := oh*S+rh-P, ow*S+rw-P
								var x float32
								if h >= 0 && h < H && ww >= 0 && ww < W {
									x = in[((n*H+h)*W+ww)*CI+rc]
								}
								acc += x * w[((rh*K+rw)*CI+rc)*CO+co]
							}
						}
					}
					want[((n*OH+oh)*OW+ow)*CO+co] = acc
				}
			}
		}
	}
	check(t, "conv2d_nhwc", args[2], want)
}

// softmax is topi's softmax over the last axis of an (m, n) tensor: the
// four T_softmax_* blocks, with a max and a sum reduction.
func softmax(t *testing.T, m, n int64) *ir.PrimFunc {
	b := te.NewBuilder()
	A := b.Placeholder("A", ir.Float32, m, n)
	k := b.ReduceAxis("k", n)
	maxe := b.ComputeReduce("T_softmax_maxelem", []int64{m}, func(i []ir.Expr) te.Reduction {
		return te.Max(A.At(i[0], k.Var()), k)
	})
	exp := b.Compute("T_softmax_exp", []int64{m, n}, func(i []ir.Expr) ir.Expr {
		return ir.Exp(ir.Sub(A.At(i[0], i[1]), maxe.At(i[0])))
	})
	k2 := b.ReduceAxis("k", n)
	sum := b.ComputeReduce("T_softmax_expsum", []int64{m}, func(i []ir.Expr) te.Reduction {
		return te.Sum(exp.At(i[0], k2.Var()), k2)
	})
	norm := b.Compute("T_softmax_norm", []int64{m, n}, func(i []ir.Expr) ir.Expr {
		return ir.Div(exp.At(i[0], i[1]), sum.At(i[0]))
	}, te.Attr("axis", ir.AnnInt(1)))
	f, err := b.Func("main", []*te.Tensor{A, norm})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSoftmax(t *testing.T) {
	const m, n = 5, 33
	f := softmax(t, m, n)
	args := interp.RandomArgs(f, 3)
	for i := range args[0] {
		args[0][i] *= 20 // make the max subtraction matter
	}
	run(t, f, args)
	a := args[0]
	want := make([]float32, m*n)
	for i := 0; i < m; i++ {
		mx := float32(-math.MaxFloat32)
		for j := 0; j < n; j++ {
			mx = max(mx, a[i*n+j])
		}
		var s float32
		e := make([]float32, n)
		for j := 0; j < n; j++ {
			e[j] = float32(math.Exp(float64(a[i*n+j] - mx)))
			s += e[j]
		}
		for j := 0; j < n; j++ {
			want[i*n+j] = e[j] / s
		}
	}
	check(t, "softmax", args[1], want)
}

func TestNormReduction(t *testing.T) {
	const B, M, N = 3, 6, 5
	b := te.NewBuilder()
	A := b.Placeholder("A", ir.Float32, B, M, N)
	i, j := b.ReduceAxis("i", M), b.ReduceAxis("j", N)
	C := b.ComputeReduce("C", []int64{B}, func(x []ir.Expr) te.Reduction {
		a := A.At(x[0], i.Var(), j.Var())
		return te.Sum(ir.Mul(a, a), i, j)
	}, te.Names("b"))
	D := b.Compute("D", []int64{B}, func(x []ir.Expr) ir.Expr { return ir.Sqrt(C.At(x[0])) }, te.Names("b"))
	f, err := b.Func("main", []*te.Tensor{A, D})
	if err != nil {
		t.Fatal(err)
	}
	args := interp.RandomArgs(f, 4)
	run(t, f, args)
	want := make([]float32, B)
	for bb := 0; bb < B; bb++ {
		var s float32
		for x := 0; x < M*N; x++ {
			v := args[0][bb*M*N+x]
			s += v * v
		}
		want[bb] = float32(math.Sqrt(float64(s)))
	}
	check(t, "norm", args[1], want)
}

// TestScheduledMatchesUnscheduled runs TVM's scheduled C1D sketch (thread
// bindings, shared and local cache stages, split and fused loops) and the
// unscheduled conv1d on the same inputs.
func TestScheduledMatchesUnscheduled(t *testing.T) {
	plain, err := fixtures.Conv1DNLC(1, 256, 64, 128, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := interp.SameOutputs(context.Background(), plain, fixtures.C1DScheduled(), 5, 1e-4, 1e-4); err != nil {
		t.Errorf("scheduled conv1d_nlc: %v", err)
	}
}

// TestBrokenScheduleIsCaught breaks the scheduled C1D on purpose, as a
// wrong region inference would (the PadInput_shared copy loop stops 4
// elements short, leaving the last padded row of each tile unfetched), and
// checks that the comparison fails: the gate must be able to fail.
func TestBrokenScheduleIsCaught(t *testing.T) {
	plain, err := fixtures.Conv1DNLC(1, 256, 64, 128, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	sched := fixtures.C1DScheduled()
	blk, err := ir.FindBlock(sched, "PadInput_shared")
	if err != nil {
		t.Fatal(err)
	}
	loops := ir.NewIndex(sched).Loops(blk)
	last := loops[len(loops)-1]
	n, _ := last.ConstExtent()
	last.SetExtent(n - 4)
	err = interp.SameOutputs(context.Background(), plain, sched, 5, 1e-3, 2e-3)
	if err == nil || !strings.Contains(err.Error(), "buffer conv1d_nlc:") {
		t.Errorf("a schedule that skips part of the input tile: %v, want a difference in conv1d_nlc", err)
	} else {
		t.Logf("caught: %v", err)
	}
}

func TestRunErrors(t *testing.T) {
	A := ir.NewBuffer("A", ir.Float32, []int64{4}, "")
	i := ir.NewVar("i", ir.Int32)
	vi := ir.NewVar("vi", ir.Int32)
	mk := func(loop, dom int64, idx ir.Expr, alloc *ir.Buffer, val ir.Expr) *ir.PrimFunc {
		blk := &ir.Block{Name: "B", IterVars: []ir.IterVar{{Var: vi, Dom: ir.Dom{Extent: dom}}},
			Body: ir.Store(A, val, idx)}
		var allocs []*ir.Buffer
		if alloc != nil {
			allocs = []*ir.Buffer{alloc}
		}
		return ir.NewPrimFunc("main", []*ir.Buffer{A}, allocs,
			ir.Loop(i, loop, &ir.BlockRealize{IterValues: []ir.Expr{i}, Block: blk}))
	}
	tmp := ir.NewBuffer("tmp", ir.Float32, []int64{4}, "")
	tests := []struct {
		name string
		f    *ir.PrimFunc
		want string
	}{
		{"store out of bounds", mk(4, 4, ir.Add(vi, ir.Int(1)), nil, ir.F32(1)), "store to A: index 4 of dimension 0 outside [0, 4)"},
		{"binding outside domain", mk(8, 4, vi, nil, ir.F32(1)), `block "B": iter var vi bound to 4, outside its domain [0, 4)`},
		{"load out of bounds", mk(4, 4, vi, nil, ir.Load(A, ir.Sub(vi, ir.Int(1)))), "load of A: index -1 of dimension 0 outside [0, 4)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := interp.Compile(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Run(context.Background(), [][]float32{make([]float32, 4)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	t.Run("uninitialized read is NaN", func(t *testing.T) {
		f := mk(4, 4, vi, tmp, ir.Load(tmp, vi))
		args := [][]float32{make([]float32, 4)}
		run(t, f, args)
		if err := interp.AllClose(args[0], make([]float32, 4), 1e-3, 1e-3); err == nil {
			t.Errorf("reading a never-written buffer gave %v, want NaN", args[0])
		}
	})
	t.Run("wrong arguments", func(t *testing.T) {
		p, err := interp.Compile(mk(4, 4, vi, nil, ir.F32(1)))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(context.Background(), [][]float32{make([]float32, 3)}); err == nil {
			t.Errorf("Run with 3 elements for a 4-element buffer succeeded")
		}
		if err := p.Run(context.Background(), nil); err == nil {
			t.Errorf("Run with no buffers succeeded")
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		f, err := fixtures.DenseNT(64, 64, 64)
		if err != nil {
			t.Fatal(err)
		}
		p, err := interp.Compile(f)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.Run(ctx, interp.RandomArgs(f, 1)); !errors.Is(err, context.Canceled) {
			t.Errorf("Run on a cancelled context = %v, want context.Canceled", err)
		}
	})
	t.Run("non-float32 buffer", func(t *testing.T) {
		B := ir.NewBuffer("B", ir.Int32, []int64{4}, "")
		f := ir.NewPrimFunc("main", []*ir.Buffer{B}, nil, ir.Store(B, ir.Int(1), ir.Int(0)))
		if _, err := interp.Compile(f); err == nil {
			t.Errorf("Compile with an int32 buffer succeeded")
		}
	})
}

func TestRandomArgsDeterministic(t *testing.T) {
	f, err := fixtures.DenseNT(4, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	a, b := interp.RandomArgs(f, 7), interp.RandomArgs(f, 7)
	c := interp.RandomArgs(f, 8)
	if err := interp.AllClose(a[0], b[0], 0, 0); err != nil {
		t.Errorf("same seed, different inputs: %v", err)
	}
	if interp.AllClose(a[0], c[0], 0, 0) == nil {
		t.Errorf("different seeds gave the same inputs")
	}
}

func BenchmarkInterpDense128(b *testing.B) {
	f, err := fixtures.DenseNT(128, 128, 128)
	if err != nil {
		b.Fatal(err)
	}
	p, err := interp.Compile(f)
	if err != nil {
		b.Fatal(err)
	}
	args := interp.RandomArgs(f, 1)
	b.ResetTimer()
	for range b.N {
		if err := p.Run(context.Background(), args); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(128*128*128)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Miter/s")
}

func BenchmarkInterpC1DScheduled(b *testing.B) {
	f := fixtures.C1DScheduled()
	p, err := interp.Compile(f)
	if err != nil {
		b.Fatal(err)
	}
	args := interp.RandomArgs(f, 1)
	b.ResetTimer()
	for range b.N {
		if err := p.Run(context.Background(), args); err != nil {
			b.Fatal(err)
		}
	}
}

func TestConcurrentRuns(t *testing.T) {
	f, err := fixtures.DenseNT(16, 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	p, err := interp.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	want := interp.RandomArgs(f, 9)
	if err := p.Run(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			args := interp.RandomArgs(f, 9)
			if err := p.Run(context.Background(), args); err != nil {
				errs <- err
				return
			}
			errs <- interp.AllClose(args[2], want[2], 0, 0)
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestCasts checks every kind of Cast the interpreter compiles: float to
// int (truncating toward zero, then wrapping to the target width), int to
// float, and between float widths, against the same arithmetic in Go.
func TestCasts(t *testing.T) {
	const n = 16
	b := te.NewBuilder()
	A := b.Placeholder("A", ir.Float32, n)
	out := b.Compute("casts", []int64{n}, func(i []ir.Expr) ir.Expr {
		x := ir.Mul(A.At(i[0]), ir.FloatImmOf(ir.Float32, 300))
		trunc := ir.CastTo(ir.Float32, ir.CastTo(ir.Int32, x))                       // float32 -> int32 -> float32
		wrapped := ir.CastTo(ir.Float32, ir.CastTo(ir.Int8, ir.CastTo(ir.Int32, x))) // int32 -> int8 wraps
		wide := ir.CastTo(ir.Float32, ir.CastTo(ir.Float64, A.At(i[0])))             // float32 -> float64 -> float32
		index := ir.CastTo(ir.Float32, i[0])                                         // int -> float32
		return ir.Add(ir.Add(trunc, ir.Mul(wrapped, ir.FloatImmOf(ir.Float32, 1000))), ir.Add(wide, index))
	})
	f, err := b.Func("main", []*te.Tensor{A, out})
	if err != nil {
		t.Fatal(err)
	}
	args := interp.RandomArgs(f, 9)
	run(t, f, args)
	want := make([]float32, n)
	for i, a := range args[0] {
		x := a * 300
		want[i] = float32(int32(x)) + float32(int8(int32(x)))*1000 + float32(float64(a)) + float32(i)
	}
	check(t, "casts", args[1], want)
}

// TestSymbolicExtent runs a loop whose extent depends on the loop around
// it (i + 1): exactly the lower triangle of B is written.
func TestSymbolicExtent(t *testing.T) {
	const n = 5
	f := fixtures.Triangular(n, 1)
	a := make([]float32, n*n)
	for i := range a {
		a[i] = float32(i + 1)
	}
	b := make([]float32, n*n*2)
	run(t, f, [][]float32{a, b})
	want := make([]float32, n*n*2)
	for i := range n {
		for j := 0; j <= i; j++ {
			want[(i*n+j)*2], want[(i*n+j)*2+1] = a[i*n+j], a[i*n+j]
		}
	}
	check(t, "B", b, want)
	// An extent that runs past the buffer is caught at run time.
	p, err := interp.Compile(fixtures.Triangular(n, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background(), [][]float32{a, b}); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("extent i + 2 ran without the error for vj = 5: %v", err)
	}
}
