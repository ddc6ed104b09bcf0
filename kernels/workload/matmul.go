package workload

import (
	"math"

	"dragonx/kernels/ir"
	"dragonx/kernels/te"
)

// buildGMM is te_workload.batch_matmul_nkkm: X (B, N, K), Y (B, K, M) and
// the block Z[b, i, j] = sum_k X[b, i, k] * Y[b, k, j].
func buildGMM(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	bs, n, m, k := s.Int("B"), s.Int("N"), s.Int("M"), s.Int("K")
	b := te.NewBuilder()
	x := b.Placeholder("X", t, bs, n, k)
	y := b.Placeholder("Y", t, bs, k, m)
	rk := b.ReduceAxis("k", k)
	z := b.ComputeReduce("Z", []int64{bs, n, m}, func(i []ir.Expr) te.Reduction {
		return te.Sum(ir.Mul(x.At(i[0], i[1], rk.Var()), y.At(i[0], rk.Var(), i[2])), rk)
	}, te.Names("b", "i", "j"))
	return b.Func("main", []*te.Tensor{x, y, z})
}

// buildTBG is te_workload.transpose_batch_matmul: query and value (batch,
// seq, heads, dim) are transposed by the blocks query_T (b, h, l, d) and
// value_T (b, h, d, l), then C[b, h, i, j] = sum_k query_T[b, h, i, k] *
// value_T[b, h, k, j].
func buildTBG(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	batch, seq, heads, dim := s.Int("batch"), s.Int("seq"), s.Int("heads"), s.Int("dim")
	b := te.NewBuilder()
	query := b.Placeholder("query", t, batch, seq, heads, dim)
	value := b.Placeholder("value", t, batch, seq, heads, dim)
	qT := b.Compute("query_T", []int64{batch, heads, seq, dim}, func(i []ir.Expr) ir.Expr {
		return query.At(i[0], i[2], i[1], i[3])
	}, te.Names("b", "h", "l", "d"))
	vT := b.Compute("value_T", []int64{batch, heads, dim, seq}, func(i []ir.Expr) ir.Expr {
		return value.At(i[0], i[3], i[1], i[2])
	}, te.Names("b", "h", "d", "l"))
	k := b.ReduceAxis("k", dim)
	c := b.ComputeReduce("C", []int64{batch, heads, seq, seq}, func(i []ir.Expr) te.Reduction {
		return te.Sum(ir.Mul(qT.At(i[0], i[1], i[2], k.Var()), vT.At(i[0], i[1], k.Var(), i[3])), k)
	}, te.Names("b", "h", "i", "j"))
	return b.Func("main", []*te.Tensor{query, value, c})
}

// epilogue appends the optional bias add and activation to a 2-D result:
// T_add[ax0, ax1] = x[ax0, ax1] + bias[ax1] (topi.add's broadcast), then
// the activation. reluName is the block of the ReLU (T_relu for a Relay
// graph, "compute" for topi.nn.relu called directly); GELU is one block
// T_gelu computing x * (0.5 + erf(x * 0.5^0.5) * 0.5), the erf form Relax
// legalizes nn.gelu to, fused into one stage.
func epilogue(b *te.Builder, s *Spec, x *te.Tensor, bias *te.Tensor, reluName string, reluOpts ...te.Option) *te.Tensor {
	t := s.DType()
	shape := x.Shape()
	ax := te.Names("ax0", "ax1")
	if bias != nil {
		prev := x
		x = b.Compute("T_add", shape, func(i []ir.Expr) ir.Expr {
			return ir.Add(prev.At(i...), bias.At(i[1]))
		}, ax)
	}
	prev := x
	switch s.Str("act") {
	case "relu":
		x = b.Compute(reluName, shape, func(i []ir.Expr) ir.Expr {
			return ir.Max(prev.At(i...), ir.Const(t, 0))
		}, reluOpts...)
	case "gelu":
		x = b.Compute("T_gelu", shape, func(i []ir.Expr) ir.Expr {
			v := prev.At(i...)
			half := ir.Const(t, 0.5)
			erf := ir.Erf(ir.Mul(v, ir.Const(t, math.Sqrt(0.5))))
			return ir.Mul(v, ir.Add(half, ir.Mul(erf, half)))
		}, ax)
	}
	return x
}

// buildDense is a Relay dense layer (topi.nn.dense, as in the anchor module
// of shared/data/tvm-traces/cuda-dense-nt-128): p0 (M, K), p1 (N, K), the
// block T_matmul_NT[i, j] = sum_k p0[i, k] * p1[j, k] with the block
// attribute layout_free_placeholders = [] and the function attribute
// layout_free_buffers = [1], then the optional epilogue with a bias p2 (N,),
// T_add and T_relu or T_gelu, as Relay's fused functions name them.
func buildDense(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	m, n, k := s.Int("M"), s.Int("N"), s.Int("K")
	b := te.NewBuilder()
	p0 := b.Placeholder("p0", t, m, k)
	p1 := b.Placeholder("p1", t, n, k)
	args := []*te.Tensor{p0, p1}
	var bias *te.Tensor
	if s.Bool("bias") {
		bias = b.Placeholder("p2", t, n)
		args = append(args, bias)
	}
	rk := b.ReduceAxis("k", k)
	out := b.ComputeReduce("T_matmul_NT", []int64{m, n}, func(i []ir.Expr) te.Reduction {
		return te.Sum(ir.Mul(p0.At(i[0], rk.Var()), p1.At(i[1], rk.Var())), rk)
	}, te.Names("i", "j"), te.Attr("layout_free_placeholders", ir.AnnArray{}))
	out = epilogue(b, s, out, bias, "T_relu", te.Names("ax0", "ax1"))
	return b.Func("main", append(args, out),
		ir.Annotation{Key: "layout_free_buffers", Value: ir.AnnArray{ir.AnnInt(1)}})
}

// buildMatmul is te_workload.matmul: A (N, K), B (K, M) and C[i, j] =
// sum_k A[i, k] * B[k, j]; with act relu it is te_workload.matmul_relu
// (topi.nn.relu: block "compute" over i0, i1). A bias (M,) named bias adds
// the block T_add before the activation.
func buildMatmul(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	n, m, k := s.Int("N"), s.Int("M"), s.Int("K")
	b := te.NewBuilder()
	a := b.Placeholder("A", t, n, k)
	w := b.Placeholder("B", t, k, m)
	args := []*te.Tensor{a, w}
	var bias *te.Tensor
	if s.Bool("bias") {
		bias = b.Placeholder("bias", t, m)
		args = append(args, bias)
	}
	rk := b.ReduceAxis("k", k)
	out := b.ComputeReduce("C", []int64{n, m}, func(i []ir.Expr) te.Reduction {
		return te.Sum(ir.Mul(a.At(i[0], rk.Var()), w.At(rk.Var(), i[1])), rk)
	}, te.Names("i", "j"))
	out = epilogue(b, s, out, bias, "compute")
	return b.Func("main", append(args, out))
}
