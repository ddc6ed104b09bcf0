package workload

import (
	"dragonx/kernels/ir"
	"dragonx/kernels/te"
)

// buildNRM is te_workload.norm_bmn: A (B, M, N), C[b] = sum over i, j of
// A[b, i, j] * A[b, i, j], and D[b] = sqrt(C[b]).
func buildNRM(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	bs, m, n := s.Int("B"), s.Int("M"), s.Int("N")
	b := te.NewBuilder()
	a := b.Placeholder("A", t, bs, m, n)
	i, j := b.ReduceAxis("i", m), b.ReduceAxis("j", n)
	c := b.ComputeReduce("C", []int64{bs}, func(x []ir.Expr) te.Reduction {
		v := a.At(x[0], i.Var(), j.Var())
		return te.Sum(ir.Mul(v, v), i, j)
	}, te.Names("b"))
	d := b.Compute("D", []int64{bs}, func(x []ir.Expr) ir.Expr { return ir.Sqrt(c.At(x[0])) }, te.Names("b"))
	return b.Func("main", []*te.Tensor{a, d})
}

// buildSFM is te_workload.softmax_mn, topi.nn.softmax over axis 1:
// T_softmax_maxelem (max over k), T_softmax_exp, T_softmax_expsum (sum
// over k) and T_softmax_norm, which carries the attribute axis = 1.
func buildSFM(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	m, n := s.Int("M"), s.Int("N")
	b := te.NewBuilder()
	a := b.Placeholder("A", t, m, n)
	k1 := b.ReduceAxis("k", n)
	maxe := b.ComputeReduce("T_softmax_maxelem", []int64{m}, func(i []ir.Expr) te.Reduction {
		return te.Max(a.At(i[0], k1.Var()), k1)
	})
	exp := b.Compute("T_softmax_exp", []int64{m, n}, func(i []ir.Expr) ir.Expr {
		return ir.Exp(ir.Sub(a.At(i[0], i[1]), maxe.At(i[0])))
	})
	k2 := b.ReduceAxis("k", n)
	sum := b.ComputeReduce("T_softmax_expsum", []int64{m}, func(i []ir.Expr) te.Reduction {
		return te.Sum(exp.At(i[0], k2.Var()), k2)
	})
	norm := b.Compute("T_softmax_norm", []int64{m, n}, func(i []ir.Expr) ir.Expr {
		return ir.Div(exp.At(i[0], i[1]), sum.At(i[0]))
	}, te.Attr("axis", ir.AnnInt(1)))
	return b.Func("main", []*te.Tensor{a, norm})
}

// buildLayerNorm normalizes each row of A (M, N) and applies gamma and
// beta (N): two reductions over k, T_layer_norm_sum (sum of A) and
// T_layer_norm_sqsum (sum of A²), then
//
//	T_layer_norm[i0, i1] = (A[i0, i1] - mean) * rsqrt(sqsum*(1/N) - mean*mean + eps)
//	                       * gamma[i1] + beta[i1],   mean = sum*(1/N)
//
// This is topi's layer_norm with its tuple reduction (one block computing
// both sums) split into two single-output reductions, which kernels/te
// expresses.
func buildLayerNorm(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	m, n := s.Int("M"), s.Int("N")
	b := te.NewBuilder()
	a := b.Placeholder("A", t, m, n)
	gamma := b.Placeholder("gamma", t, n)
	beta := b.Placeholder("beta", t, n)
	k1 := b.ReduceAxis("k", n)
	sum := b.ComputeReduce("T_layer_norm_sum", []int64{m}, func(i []ir.Expr) te.Reduction {
		return te.Sum(a.At(i[0], k1.Var()), k1)
	})
	k2 := b.ReduceAxis("k", n)
	sqsum := b.ComputeReduce("T_layer_norm_sqsum", []int64{m}, func(i []ir.Expr) te.Reduction {
		v := a.At(i[0], k2.Var())
		return te.Sum(ir.Mul(v, v), k2)
	})
	inv := ir.Const(t, 1/float64(n))
	eps := ir.Const(t, s.Float("eps"))
	out := b.Compute("T_layer_norm", []int64{m, n}, func(i []ir.Expr) ir.Expr {
		mean := ir.Mul(sum.At(i[0]), inv)
		variance := ir.Sub(ir.Mul(sqsum.At(i[0]), inv), ir.Mul(mean, mean))
		norm := ir.Mul(ir.Sub(a.At(i[0], i[1]), mean), ir.Rsqrt(ir.Add(variance, eps)))
		return ir.Add(ir.Mul(norm, gamma.At(i[1])), beta.At(i[1]))
	})
	return b.Func("main", []*te.Tensor{a, gamma, beta, out})
}

// buildPool is topi's pool2d in NHWC layout (the C++ pool_impl_nd): when p
// > 0 a pad_temp stage pads H and W with the lowest value (max) or 0
// (avg); the window is reduced over rv0, rv1 into pool_max, or into
// pool_sum followed by pool_avg, which divides by k*k (count_include_pad)
// or by the number of input elements the window covers. Axes are named
// ax0..ax3, as C++ te::compute names them.
func buildPool(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	n, h, w, c, k, st, p := s.Int("N"), s.Int("H"), s.Int("W"), s.Int("C"), s.Int("k"), s.Int("s"), s.Int("p")
	isMax := s.Str("pool") == "max"
	b := te.NewBuilder()
	x := b.Placeholder("X", t, n, h, w, c)
	ax := te.Names("ax0", "ax1", "ax2", "ax3")
	in := x
	if p > 0 {
		padValue := ir.Const(t, 0)
		if isMax {
			padValue = ir.MinValue(t)
		}
		padv := symmetric(4, p, 1, 2)
		in = pad(b, x, "pad_temp", padv, padv, padValue, ax)
	}
	rv0, rv1 := b.ReduceAxis("rv0", k), b.ReduceAxis("rv1", k)
	shape := []int64{n, convOut(h, k, st, p, 1), convOut(w, k, st, p, 1), c}
	window := func(i []ir.Expr) ir.Expr {
		return in.At(i[0], ir.Add(ir.Mul(i[1], ir.Int(st)), rv0.Var()), ir.Add(ir.Mul(i[2], ir.Int(st)), rv1.Var()), i[3])
	}
	if isMax {
		out := b.ComputeReduce("pool_max", shape, func(i []ir.Expr) te.Reduction {
			return te.Max(window(i), rv0, rv1)
		}, ax)
		return b.Func("main", []*te.Tensor{x, out})
	}
	sum := b.ComputeReduce("pool_sum", shape, func(i []ir.Expr) te.Reduction {
		return te.Sum(window(i), rv0, rv1)
	}, ax)
	includePad := s.Bool("count_include_pad")
	out := b.Compute("pool_avg", shape, func(i []ir.Expr) ir.Expr {
		if includePad {
			return ir.Div(sum.At(i...), ir.Const(t, float64(k*k)))
		}
		// Elements of the window inside the input along one axis:
		// min(o*s - p + k, size) - max(o*s - p, 0).
		covered := func(o ir.Expr, size int64) ir.Expr {
			start := ir.Sub(ir.Mul(o, ir.Int(st)), ir.Int(p))
			return ir.Sub(ir.Min(ir.Add(start, ir.Int(k)), ir.Int(size)), ir.Max(start, ir.Int(0)))
		}
		count := ir.Mul(covered(i[1], h), covered(i[2], w))
		return ir.Div(sum.At(i...), ir.CastTo(t, count))
	}, ax)
	return b.Func("main", []*te.Tensor{x, out})
}
