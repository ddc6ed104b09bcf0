package workload

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"dragonx/kernels/ir"
	"dragonx/kernels/te"
)

// winogradModule is the name of the one builtin custom module: TVM's
// Conv2dWinogradAddRelu (shared/data/tvm-traces/cuda-winograd-nhwc-56x56x64-add-relu),
// TOPI's CUDA NHWC Winograd F(4x4, 3x3) convolution with a weight already
// transformed to (6, 6, CO, CI), followed by Relay's bias add and ReLU.
const winogradModule = "conv2d_winograd_nhwc_add_relu"

// winogradTile is m in F(m x m, 3 x 3); alpha = m + 2.
const winogradTile = 4

// WinogradMatrices returns TOPI's transform matrices for F(4, 3)
// (winograd_transform_matrices(4, 3), interpolation points 0, -1, 1, 1/2,
// -2), A (6 x 4) and B (6 x 6), as the builtin module's const_matrix
// blocks A and B hold them.
func WinogradMatrices() (a [6][4]float64, b [6][6]float64) {
	a = [6][4]float64{
		{1, 0, 0, 0},
		{1, -1, 1, -1},
		{1, 1, 1, 1},
		{1, 0.5, 0.25, 0.125},
		{1, -2, 4, -8},
		{0, 0, 0, 1},
	}
	b = [6][6]float64{
		{1, 0, 0, 0, 0, 0},
		{-1.5, 1, -1, -2, 0.5, 1},
		{-2, -2.5, 0.5, -1, -1, -1.5},
		{1.5, 0.5, 2.5, 2, -0.5, -2},
		{1, 1, 1, 1, 1, 1.5},
		{0, 0, 0, 0, 0, 1},
	}
	return a, b
}

// initWinograd checks a builtin module description: its name, the direct
// convolution it computes (a C2D with k = 3 and s = 1), its parameters and
// its block list, which must be what buildWinograd makes.
func (c *Custom) initWinograd(cd *canonicalDoc) error {
	if cd.Name != winogradModule {
		return customErr("name", "no builtin module %q (a description without block bodies must name one of: %s)", cd.Name, winogradModule)
	}
	if len(cd.EquivalentDirectConv) == 0 {
		return customErr("equivalent_direct_conv", "missing: the builtin Winograd module needs its direct C2D spec")
	}
	conv, err := Parse(cd.EquivalentDirectConv)
	if err != nil {
		return customErr("equivalent_direct_conv", "%v", err)
	}
	if conv.Family() != "C2D" || conv.Int("k") != 3 || conv.Int("s") != 1 || conv.Int("H") != conv.Int("W") {
		return customErr("equivalent_direct_conv", "the Winograd module computes a C2D with k = 3, s = 1 and H = W, not %s", conv.Canonical())
	}
	cd.EquivalentDirectConv = json.RawMessage(conv.Canonical())
	c.winograd = conv
	f, err := c.buildWinograd()
	if err != nil {
		return customErr("equivalent_direct_conv", "%v", err)
	}
	var names []string
	for _, b := range ir.Blocks(f)[1:] {
		names = append(names, b.Name)
	}
	if !slices.Equal(names, cd.BlocksInOrder) {
		return customErr("blocks_in_order", "the module has blocks %s, not %s", strings.Join(names, ", "), strings.Join(cd.BlocksInOrder, ", "))
	}
	if len(cd.Params) != len(f.Params) {
		return customErr("params", "the module has %d parameters, not %d", len(f.Params), len(cd.Params))
	}
	for i, p := range f.Params {
		d := cd.Params[i]
		if d.Buffer != p.Name() || !slices.Equal(d.Shape, p.Shape()) || d.DType != p.DType().String() {
			return customErr(fmt.Sprintf("params[%d]", i), "want %s %v %s, got %s %v %s", p.Name(), p.Shape(), p.DType(), d.Buffer, d.Shape, d.DType)
		}
	}
	return nil
}

// buildWinograd builds the module, following TOPI's
// _conv2d_winograd_nhwc_impl with pre_computed weights and the Relay
// epilogue, as TVM's test module prints it:
//
//   - data_pad: the input padded by p (and by the extra rows and columns
//     that complete the last tile), schedule_rule "None";
//   - input_tile[eps, nu, p, ci] = data_pad[p // (nH*nW), p % (nH*nW) // nW * 4 + eps,
//     p % nW * 4 + nu, ci], schedule_rule "None";
//   - B and A: the transform matrices as nested Selects (TOPI's
//     const_matrix), annotated const_matrix and compute_inline;
//   - data_pack = sum over r_a, r_b of input_tile[r_a, r_b, p, ci] * B[r_a, eps] * B[r_b, nu];
//   - bgemm = sum over ci of data_pack[eps, nu, p, ci] * p1[eps, nu, co, ci];
//   - inverse = sum over r_a, r_b of bgemm[r_a, r_b, p, co] * A[r_a, vh] * A[r_b, vw];
//   - conv2d_winograd[n, h, w, co] = inverse[h % 4, w % 4, n*nH*nW + h // 4 * nW + w // 4, co];
//   - T_add (+ p2[n, 0, 0, co]) and T_relu.
func (c *Custom) buildWinograd() (*ir.PrimFunc, error) {
	s := c.winograd
	const m, alpha = winogradTile, winogradTile + 2
	t := s.DType()
	n, h, w, ci, co, p := s.Int("N"), s.Int("H"), s.Int("W"), s.Int("CI"), s.Int("CO"), s.Int("p")
	oh, ow := h+2*p-2, w+2*p-2
	nH, nW := (oh+m-1)/m, (ow+m-1)/m
	P := n * nH * nW
	// TOPI computes the extra padding from the output height and the tile
	// count along W, and pads both axes by it (so H must equal W).
	padExtra := (nW-1)*m + alpha - (oh + 2*p)

	b := te.NewBuilder()
	data := b.Placeholder("p0", t, n, h, w, ci)
	weight := b.Placeholder("p1", t, alpha, alpha, co, ci)
	bias := b.Placeholder("p2", t, 1, 1, 1, co)
	none := te.Attr("schedule_rule", ir.AnnString("None"))
	dataPad := pad(b, data, "data_pad", []int64{0, p, p, 0}, []int64{0, p + padExtra, p + padExtra, 0}, ir.Const(t, 0), none)
	inputTile := b.Compute("input_tile", []int64{alpha, alpha, P, ci}, func(i []ir.Expr) ir.Expr {
		pp := i[2]
		return dataPad.At(ir.FloorDiv(pp, ir.Int(nH*nW)),
			ir.Add(ir.Mul(ir.FloorDiv(ir.FloorMod(pp, ir.Int(nH*nW)), ir.Int(nW)), ir.Int(m)), i[0]),
			ir.Add(ir.Mul(ir.FloorMod(pp, ir.Int(nW)), ir.Int(m)), i[1]), i[3])
	}, te.Names("eps", "nu", "p", "ci"), none)
	constMatrix := func(name string, rows [][]float64) *te.Tensor {
		nr, nc := int64(len(rows)), int64(len(rows[0]))
		return b.Compute(name, []int64{nr, nc}, func(i []ir.Expr) ir.Expr {
			now := ir.Const(t, 0)
			for ii := range rows {
				for jj := range rows[ii] {
					cond := ir.And(ir.EQ(ir.FloorMod(i[0], ir.Int(nr)), ir.Int(int64(ii))), ir.EQ(ir.FloorMod(i[1], ir.Int(nc)), ir.Int(int64(jj))))
					now = ir.SelectOf(cond, ir.Const(t, rows[ii][jj]), now)
				}
			}
			return now
		}, te.Names("i", "j"), te.Attr("const_matrix", ir.AnnBool(true)),
			te.Attr("schedule_rule", ir.AnnString("meta_schedule.compute_inline")))
	}
	am, bm := WinogradMatrices()
	var bRows, aRows [][]float64
	for i := range bm {
		bRows = append(bRows, bm[i][:])
		aRows = append(aRows, am[i][:])
	}
	bMat := constMatrix("B", bRows)
	ra, rb := b.ReduceAxis("r_a", alpha), b.ReduceAxis("r_b", alpha)
	strs := func(names ...string) ir.AnnArray {
		var a ir.AnnArray
		for _, s := range names {
			a = append(a, ir.AnnString(s))
		}
		return a
	}
	dataPack := b.ComputeReduce("data_pack", []int64{alpha, alpha, P, ci}, func(i []ir.Expr) te.Reduction {
		return te.Sum(ir.Mul(ir.Mul(inputTile.At(ra.Var(), rb.Var(), i[2], i[3]), bMat.At(ra.Var(), i[0])), bMat.At(rb.Var(), i[1])), ra, rb)
	}, te.Names("eps", "nu", "p", "ci"),
		te.Attr("auto_scheduler_simplify_const_tensor_indices", strs("eps", "nu", "r_a", "r_b")),
		te.Attr("schedule_rule", ir.AnnString("meta_schedule.winograd_data_pack.cuda")))
	rci := b.ReduceAxis("ci", ci)
	bgemm := b.ComputeReduce("bgemm", []int64{alpha, alpha, P, co}, func(i []ir.Expr) te.Reduction {
		return te.Sum(ir.Mul(dataPack.At(i[0], i[1], i[2], rci.Var()), weight.At(i[0], i[1], i[3], rci.Var())), rci)
	}, te.Names("eps", "nu", "p", "co"), te.Attr("layout_free_placeholders", ir.AnnArray{}))
	aMat := constMatrix("A", aRows)
	ra2, rb2 := b.ReduceAxis("r_a", alpha), b.ReduceAxis("r_b", alpha)
	inverse := b.ComputeReduce("inverse", []int64{m, m, P, co}, func(i []ir.Expr) te.Reduction {
		return te.Sum(ir.Mul(ir.Mul(bgemm.At(ra2.Var(), rb2.Var(), i[2], i[3]), aMat.At(ra2.Var(), i[0])), aMat.At(rb2.Var(), i[1])), ra2, rb2)
	}, te.Names("vh", "vw", "p", "co"),
		te.Attr("auto_scheduler_simplify_const_tensor_indices", strs("vh", "vw", "r_a", "r_b")),
		te.Attr("schedule_rule", ir.AnnString("meta_schedule.winograd_inverse.cuda")))
	shape := []int64{n, oh, ow, co}
	conv := b.Compute("conv2d_winograd", shape, func(i []ir.Expr) ir.Expr {
		tile := ir.Add(ir.Add(ir.Mul(i[0], ir.Int(nH*nW)), ir.Mul(ir.FloorDiv(i[1], ir.Int(m)), ir.Int(nW))), ir.FloorDiv(i[2], ir.Int(m)))
		return inverse.At(ir.FloorMod(i[1], ir.Int(m)), ir.FloorMod(i[2], ir.Int(m)), tile, i[3])
	}, te.Names("n", "h", "w", "co"))
	ax := te.Names("ax0", "ax1", "ax2", "ax3")
	add := b.Compute("T_add", shape, func(i []ir.Expr) ir.Expr {
		// topi's broadcast indexes a dimension of extent 1 with 0 unless
		// the output's extent is 1 too.
		var nIdx ir.Expr = ir.Int(0)
		if n == 1 {
			nIdx = i[0]
		}
		return ir.Add(conv.At(i...), bias.At(nIdx, ir.Int(0), ir.Int(0), i[3]))
	}, ax)
	relu := b.Compute("T_relu", shape, func(i []ir.Expr) ir.Expr {
		return ir.Max(add.At(i...), ir.Const(t, 0))
	}, ax)
	return b.Func("main", []*te.Tensor{data, weight, bias, relu},
		ir.Annotation{Key: "layout_free_buffers", Value: ir.AnnArray{ir.AnnInt(1)}})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
