package workload

import (
	"dragonx/kernels/ir"
	"dragonx/kernels/te"
)

// pad is topi.nn.pad: a compute op (named name, "PadInput" by default in
// TVM) whose element is the input shifted by before, or value outside the
// input. Axes that are padded on neither side are copied; each padded axis
// adds the conditions idx >= before and idx < before + extent, joined with
// and in axis order (tvm.tir.all), then the whole is an if_then_else. With
// no padding at all the stage is a plain copy, as in TVM.
func pad(b *te.Builder, in *te.Tensor, name string, before, after []int64, value ir.Expr, opts ...te.Option) *te.Tensor {
	shape := in.Shape()
	out := make([]int64, len(shape))
	for i, d := range shape {
		out[i] = d + before[i] + after[i]
	}
	return b.Compute(name, out, func(idx []ir.Expr) ir.Expr {
		var conds []ir.Expr
		src := make([]ir.Expr, len(idx))
		for i, x := range idx {
			src[i] = x
			if before[i] == 0 && after[i] == 0 {
				continue
			}
			src[i] = ir.Sub(x, ir.Int(before[i]))
			conds = append(conds, ir.GE(x, ir.Int(before[i])), ir.LT(x, ir.Int(shape[i]+before[i])))
		}
		if len(conds) == 0 {
			return in.At(src...)
		}
		return ir.IfElse(ir.And(conds[0], conds[1:]...), in.At(src...), value)
	}, opts...)
}

// symmetric returns a padding vector: p on the listed axes, 0 elsewhere.
func symmetric(rank int, p int64, axes ...int) []int64 {
	v := make([]int64, rank)
	for _, a := range axes {
		v[a] = p
	}
	return v
}

// seq returns the ints lo, lo+1, ..., hi-1.
func seq(lo, hi int) []int {
	var out []int
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// convGeometry names the axes of te_workload's conv1d_nlc, conv2d_nhwc and
// conv3d_ndhwc.
type convGeometry struct {
	op      string   // block and output name
	spatial []string // input size fields
	axes    []string // output spatial axis names
	reduce  []string // spatial reduce axis names
}

func convGeometryOf(dims int) convGeometry {
	switch dims {
	case 1:
		return convGeometry{"conv1d_nlc", []string{"L"}, []string{"l"}, []string{"rl"}}
	case 2:
		return convGeometry{"conv2d_nhwc", []string{"H", "W"}, []string{"h", "w"}, []string{"rh", "rw"}}
	}
	return convGeometry{"conv3d_ndhwc", []string{"D", "H", "W"}, []string{"d", "h", "w"}, []string{"rd", "rh", "rw"}}
}

// buildConv is te_workload.conv1d_nlc, conv2d_nhwc and conv3d_ndhwc (with
// groups and dilation for GRP and DIL): inputs (N, spatial..., CI), weight
// (k..., CI/g, CO), a PadInput stage padding the spatial axes by p, and
//
//	out[n, x..., co] = sum over r..., rc of
//	    PadInput[n, x*s + r*dil ..., co // (CO/g) * (CI/g) + rc] * weight[r..., rc, co]
//
// with the reduce axes in TE's axis list order: the spatial ones, then rc.
func buildConv(s *Spec) (*ir.PrimFunc, error) {
	dims := len(spatialFields(s))
	g := convGeometryOf(dims)
	t := s.DType()
	n, ci, co, k, st, p := s.Int("N"), s.Int("CI"), s.Int("CO"), s.Int("k"), s.Int("s"), s.Int("p")
	dil, groups := s.optional("dil", 1), s.optional("g", 1)
	cpg, opg := ci/groups, co/groups

	b := te.NewBuilder()
	inShape, wShape, outShape := []int64{n}, []int64{}, []int64{n}
	for _, d := range g.spatial {
		inShape = append(inShape, s.Int(d))
		wShape = append(wShape, k)
		outShape = append(outShape, convOut(s.Int(d), k, st, p, dil))
	}
	inShape, wShape, outShape = append(inShape, ci), append(wShape, cpg, co), append(outShape, co)
	inputs := b.Placeholder("inputs", t, inShape...)
	weight := b.Placeholder("weight", t, wShape...)
	rank := dims + 2
	padded := pad(b, inputs, "PadInput", symmetric(rank, p, seq(1, dims+1)...), symmetric(rank, p, seq(1, dims+1)...), ir.Const(t, 0))
	var red []*te.Axis
	for _, r := range g.reduce {
		red = append(red, b.ReduceAxis(r, k))
	}
	rc := b.ReduceAxis("rc", cpg)
	names := append(append([]string{"n"}, g.axes...), "co")
	out := b.ComputeReduce(g.op, outShape, func(i []ir.Expr) te.Reduction {
		idx := []ir.Expr{i[0]}
		widx := []ir.Expr{}
		for d, r := range red {
			idx = append(idx, ir.Add(ir.Mul(i[d+1], ir.Int(st)), ir.Mul(r.Var(), ir.Int(dil))))
			widx = append(widx, r.Var())
		}
		coIdx := i[dims+1]
		idx = append(idx, ir.Add(ir.Mul(ir.FloorDiv(coIdx, ir.Int(opg)), ir.Int(cpg)), rc.Var()))
		widx = append(widx, rc.Var(), coIdx)
		return te.Sum(ir.Mul(padded.At(idx...), weight.At(widx...)), append(red, rc)...)
	}, te.Names(names...))
	return b.Func("main", []*te.Tensor{inputs, weight, out})
}

// buildDEP is te_workload.depthwise_conv2d_nhwc with factor 1: unnamed
// placeholders, which TVM names placeholder both (its printer shows the
// second as placeholder_1, and the weight's cache stage is
// placeholder_shared), weight (1, k, k, C), and
// depth_conv2d_nhwc[n, h, w, c] = sum over rh, rw of
// PadInput[n, h*s + rh, w*s + rw, c // 1] * placeholder_1[c % 1, rh, rw, c // 1]
// (the // 1 and % 1 simplify away).
func buildDEP(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	n, h, w, c, k, st, p := s.Int("N"), s.Int("H"), s.Int("W"), s.Int("C"), s.Int("k"), s.Int("s"), s.Int("p")
	const factor = 1
	b := te.NewBuilder()
	inputs := b.Placeholder("placeholder", t, n, h, w, c)
	weight := b.Placeholder("placeholder", t, factor, k, k, c)
	padv := symmetric(4, p, 1, 2)
	padded := pad(b, inputs, "PadInput", padv, padv, ir.Const(t, 0))
	rh, rw := b.ReduceAxis("rh", k), b.ReduceAxis("rw", k)
	oh, ow := convOut(h, k, st, p, 1), convOut(w, k, st, p, 1)
	out := b.ComputeReduce("depth_conv2d_nhwc", []int64{n, oh, ow, c * factor}, func(i []ir.Expr) te.Reduction {
		hh := ir.Add(ir.Mul(i[1], ir.Int(st)), ir.Mul(rh.Var(), ir.Int(1)))
		ww := ir.Add(ir.Mul(i[2], ir.Int(st)), ir.Mul(rw.Var(), ir.Int(1)))
		cc := ir.FloorDiv(i[3], ir.Int(factor))
		return te.Sum(ir.Mul(padded.At(i[0], hh, ww, cc),
			weight.At(ir.FloorMod(i[3], ir.Int(factor)), rh.Var(), rw.Var(), cc)), rh, rw)
	}, te.Names("n", "h", "w", "c"))
	return b.Func("main", []*te.Tensor{inputs, weight, out})
}

// buildT2D is te_workload.conv2d_transpose_nhwc: the input is padded by
// ceil((k-1-p)/s) on each side (PadInput), dilated by the stride inside the
// convolution through an if_then_else, and convolved with the flipped
// kernel:
//
//	conv2d_transpose_nhwc[n, h, w, co] = sum over rh, rw, rc of
//	    if_then_else((h+rh+bh) % s == 0 and (w+rw+bw) % s == 0,
//	                 PadInput[n, (h+rh+bh) // s, (w+rw+bw) // s, rc], 0)
//	    * weight[k-1-rh, k-1-rw, rc, co]
//
// where bh = bw = (s - (k-1-p) % s) % s. The output is (H-1)*s - 2p + k.
func buildT2D(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	n, h, w, ci, co, k, st, p := s.Int("N"), s.Int("H"), s.Int("W"), s.Int("CI"), s.Int("CO"), s.Int("k"), s.Int("s"), s.Int("p")
	b := te.NewBuilder()
	inputs := b.Placeholder("inputs", t, n, h, w, ci)
	weight := b.Placeholder("weight", t, k, k, ci, co)
	bpad := k - 1 - p // the same on every side: get_pad_tuple splits 2p evenly
	padBefore := (bpad + st - 1) / st
	padv := symmetric(4, padBefore, 1, 2)
	padded := pad(b, inputs, "PadInput", padv, padv, ir.Const(t, 0))
	border := (st - bpad%st) % st
	oh, ow := (h-1)*st-2*p+k, (w-1)*st-2*p+k
	rc, rh, rw := b.ReduceAxis("rc", ci), b.ReduceAxis("rh", k), b.ReduceAxis("rw", k)
	dilate := func(idx ...ir.Expr) ir.Expr {
		strides := []int64{1, st, st, 1}
		var notZero []ir.Expr
		src := make([]ir.Expr, len(idx))
		for i, x := range idx {
			src[i] = x
			if strides[i] != 1 {
				src[i] = ir.FloorDiv(x, ir.Int(strides[i]))
				notZero = append(notZero, ir.EQ(ir.FloorMod(x, ir.Int(strides[i])), ir.Int(0)))
			}
		}
		if len(notZero) == 0 {
			return padded.At(src...)
		}
		return ir.IfElse(ir.And(notZero[0], notZero[1:]...), padded.At(src...), ir.Const(t, 0))
	}
	out := b.ComputeReduce("conv2d_transpose_nhwc", []int64{n, oh, ow, co}, func(i []ir.Expr) te.Reduction {
		x := dilate(i[0], ir.Add(ir.Add(i[1], rh.Var()), ir.Int(border)), ir.Add(ir.Add(i[2], rw.Var()), ir.Int(border)), rc.Var())
		wt := weight.At(ir.Sub(ir.Int(k-1), rh.Var()), ir.Sub(ir.Int(k-1), rw.Var()), rc.Var(), i[3])
		return te.Sum(ir.Mul(x, wt), rh, rw, rc)
	}, te.Names("n", "h", "w", "co"))
	return b.Func("main", []*te.Tensor{inputs, weight, out})
}

// buildCAP is te_workload.conv2d_capsule_nhwijc: inputs (N, H, W, cap, cap,
// CI), weight (k, k, cap, cap, CI, CO), and
//
//	conv2d_capsule_nhwijc[n, h, w, cap_i, cap_j, co] = sum over rh, rw, cap_k, rc of
//	    PadInput[n, h*s + rh, w*s + rw, cap_i, cap_k, rc] * weight[rh, rw, cap_k, cap_j, rc, co]
func buildCAP(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	n, h, w, ci, co, k, st, p, c := s.Int("N"), s.Int("H"), s.Int("W"), s.Int("CI"), s.Int("CO"), s.Int("k"), s.Int("s"), s.Int("p"), s.Int("cap")
	b := te.NewBuilder()
	inputs := b.Placeholder("inputs", t, n, h, w, c, c, ci)
	weight := b.Placeholder("weight", t, k, k, c, c, ci, co)
	oh, ow := (h+2*p-k)/st+1, (w+2*p-k)/st+1
	rh, rw := b.ReduceAxis("rh", k), b.ReduceAxis("rw", k)
	capK, rc := b.ReduceAxis("cap_k", c), b.ReduceAxis("rc", ci)
	padv := symmetric(6, p, 1, 2)
	padded := pad(b, inputs, "PadInput", padv, padv, ir.Const(t, 0))
	out := b.ComputeReduce("conv2d_capsule_nhwijc", []int64{n, oh, ow, c, c, co}, func(i []ir.Expr) te.Reduction {
		hh := ir.Add(ir.Mul(i[1], ir.Int(st)), rh.Var())
		ww := ir.Add(ir.Mul(i[2], ir.Int(st)), rw.Var())
		return te.Sum(ir.Mul(padded.At(i[0], hh, ww, i[3], capK.Var(), rc.Var()),
			weight.At(rh.Var(), rw.Var(), capK.Var(), i[4], rc.Var(), i[5])), rh, rw, capK, rc)
	}, te.Names("n", "h", "w", "cap_i", "cap_j", "co"))
	return b.Func("main", []*te.Tensor{inputs, weight, out})
}

// buildCBR is te_workload.conv2d_nhwc_bn_relu: a PaddedInput stage, the
// convolution Conv2dOutput[nn, yy, xx, ff] (reduce axes ry, rx, rc), then
// bias_add (+ bias[l]), bn_mul (* bn_scale[l]), bn_add (+ bn_offset[l]) and
// topi.nn.relu, whose op keeps TE's default name "compute". The parameters
// are data, kernel, bias, bn_offset, bn_scale and the output, in
// te_workload's order.
func buildCBR(s *Spec) (*ir.PrimFunc, error) {
	t := s.DType()
	n, h, w, ci, co, k, st, p := s.Int("N"), s.Int("H"), s.Int("W"), s.Int("CI"), s.Int("CO"), s.Int("k"), s.Int("s"), s.Int("p")
	b := te.NewBuilder()
	data := b.Placeholder("data", t, n, h, w, ci)
	kernel := b.Placeholder("kernel", t, k, k, ci, co)
	bias := b.Placeholder("bias", t, co)
	bnScale := b.Placeholder("bn_scale", t, co)
	bnOffset := b.Placeholder("bn_offset", t, co)
	oh, ow := convOut(h, k, st, p, 1), convOut(w, k, st, p, 1)
	padv := symmetric(4, p, 1, 2)
	padded := pad(b, data, "PaddedInput", padv, padv, ir.Const(t, 0))
	rc, ry, rx := b.ReduceAxis("rc", ci), b.ReduceAxis("ry", k), b.ReduceAxis("rx", k)
	shape := []int64{n, oh, ow, co}
	conv := b.ComputeReduce("Conv2dOutput", shape, func(i []ir.Expr) te.Reduction {
		yy := ir.Add(ir.Mul(i[1], ir.Int(st)), ir.Mul(ry.Var(), ir.Int(1)))
		xx := ir.Add(ir.Mul(i[2], ir.Int(st)), ir.Mul(rx.Var(), ir.Int(1)))
		return te.Sum(ir.Mul(padded.At(i[0], yy, xx, rc.Var()), kernel.At(ry.Var(), rx.Var(), rc.Var(), i[3])), ry, rx, rc)
	}, te.Names("nn", "yy", "xx", "ff"))
	ijkl := te.Names("i", "j", "k", "l")
	biasAdd := b.Compute("bias_add", shape, func(i []ir.Expr) ir.Expr {
		return ir.Add(conv.At(i...), bias.At(i[3]))
	}, ijkl)
	bnMul := b.Compute("bn_mul", shape, func(i []ir.Expr) ir.Expr {
		return ir.Mul(biasAdd.At(i...), bnScale.At(i[3]))
	}, ijkl)
	bnAdd := b.Compute("bn_add", shape, func(i []ir.Expr) ir.Expr {
		return ir.Add(bnMul.At(i...), bnOffset.At(i[3]))
	}, ijkl)
	out := b.Compute("compute", shape, func(i []ir.Expr) ir.Expr {
		return ir.Max(bnAdd.At(i...), ir.Const(t, 0))
	})
	return b.Func("main", []*te.Tensor{data, kernel, bias, bnOffset, bnScale, out})
}
