package workload_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/interp"
	"dragonx/kernels/ir"
	"dragonx/kernels/workload"
)

// This file proves the builders right: every family runs through the
// reference interpreter on small shapes and seeded random inputs, and the
// result must match a direct Go implementation of the operator written
// from its mathematical definition (not from TVM's formulation: the
// transposed convolution is a scatter, pooling skips padding explicitly,
// layer norm uses two passes, the Winograd module is checked against a
// direct convolution).

// tensor is a dense row-major float64 view of a flat buffer.
type tensor struct {
	data  []float32
	shape []int
}

func (t tensor) at(idx ...int) float64 {
	off := 0
	for i, x := range idx {
		if x < 0 || x >= t.shape[i] {
			panic(fmt.Sprintf("index %v out of %v", idx, t.shape))
		}
		off = off*t.shape[i] + x
	}
	return float64(t.data[off])
}

// inBounds reports whether idx lies in t (padding reads outside are 0).
func (t tensor) inBounds(idx ...int) bool {
	for i, x := range idx {
		if x < 0 || x >= t.shape[i] {
			return false
		}
	}
	return true
}

func (t tensor) get(idx ...int) float64 {
	if !t.inBounds(idx...) {
		return 0
	}
	return t.at(idx...)
}

// grid calls fn for every index of shape, in row-major order.
func grid(shape []int, fn func(idx []int)) {
	idx := make([]int, len(shape))
	for {
		fn(idx)
		d := len(shape) - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

func tensors(f *ir.PrimFunc, args [][]float32) []tensor {
	out := make([]tensor, len(args))
	for i, b := range f.Params {
		sh := make([]int, b.Rank())
		for k, d := range b.Shape() {
			sh[k] = int(d)
		}
		out[i] = tensor{args[i], sh}
	}
	return out
}

// reference computes the expected output (the last parameter) from the
// inputs, in float64.
type reference func(s *workload.Spec, in []tensor, out []int) []float64

func act(s *workload.Spec, x float64) float64 {
	switch s.Str("act") {
	case "relu":
		return math.Max(x, 0)
	case "gelu":
		return 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
	}
	return x
}

// refConv is an N-d grouped, dilated, strided, zero-padded convolution:
// out[n, o..., co] = sum over r..., c of in[n, o*s - p + r*dil ..., g*CI/g + c] * w[r..., c, co].
func refConv(s *workload.Spec, in []tensor, out []int) []float64 {
	x, w := in[0], in[1]
	dims := len(out) - 2
	st, p := int(s.Int("s")), int(s.Int("p"))
	dil, groups := 1, 1
	if s.Family() == "GRP" || s.Family() == "DIL" {
		dil = int(s.Int("dil"))
	}
	if s.Family() == "GRP" {
		groups = int(s.Int("g"))
	}
	cpg := w.shape[dims]
	co := out[len(out)-1]
	opg := co / groups
	var res []float64
	grid(out, func(o []int) {
		sum := 0.0
		grid(w.shape[:dims+1], func(r []int) {
			xi := []int{o[0]}
			for d := 0; d < dims; d++ {
				xi = append(xi, o[d+1]*st-p+r[d]*dil)
			}
			xi = append(xi, o[dims+1]/opg*cpg+r[dims])
			sum += x.get(xi...) * w.at(append(append([]int{}, r...), o[dims+1])...)
		})
		res = append(res, sum)
	})
	return res
}

func refCBR(s *workload.Spec, in []tensor, out []int) []float64 {
	conv := refConv(s, in, out)
	bias, offset, scale := in[2], in[3], in[4]
	i := 0
	grid(out, func(o []int) {
		c := o[3]
		conv[i] = math.Max((conv[i]+bias.at(c))*scale.at(c)+offset.at(c), 0)
		i++
	})
	return conv
}

func refDEP(s *workload.Spec, in []tensor, out []int) []float64 {
	x, w := in[0], in[1]
	k, st, p := int(s.Int("k")), int(s.Int("s")), int(s.Int("p"))
	var res []float64
	grid(out, func(o []int) {
		sum := 0.0
		for rh := 0; rh < k; rh++ {
			for rw := 0; rw < k; rw++ {
				sum += x.get(o[0], o[1]*st-p+rh, o[2]*st-p+rw, o[3]) * w.at(0, rh, rw, o[3])
			}
		}
		res = append(res, sum)
	})
	return res
}

// refT2D is the transposed convolution as a scatter: every input element
// adds in * w[kh, kw] to out[ih*s + kh - p, iw*s + kw - p].
func refT2D(s *workload.Spec, in []tensor, out []int) []float64 {
	x, w := in[0], in[1]
	k, st, p := int(s.Int("k")), int(s.Int("s")), int(s.Int("p"))
	ot := tensor{make([]float32, 0), out}
	res := make([]float64, prod(out))
	grid(x.shape, func(i []int) {
		for kh := 0; kh < k; kh++ {
			for kw := 0; kw < k; kw++ {
				oh, ow := i[1]*st+kh-p, i[2]*st+kw-p
				if !ot.inBounds(i[0], oh, ow, 0) {
					continue
				}
				for co := 0; co < out[3]; co++ {
					res[((i[0]*out[1]+oh)*out[2]+ow)*out[3]+co] += x.at(i...) * w.at(kh, kw, i[3], co)
				}
			}
		}
	})
	return res
}

func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// refCAP multiplies capsule matrices: out[n,h,w,i,j,co] = sum over rh, rw,
// k, rc of in[n, h*s-p+rh, w*s-p+rw, i, k, rc] * w[rh, rw, k, j, rc, co].
func refCAP(s *workload.Spec, in []tensor, out []int) []float64 {
	x, w := in[0], in[1]
	k, st, p, c := int(s.Int("k")), int(s.Int("s")), int(s.Int("p")), int(s.Int("cap"))
	ci := int(s.Int("CI"))
	var res []float64
	grid(out, func(o []int) {
		sum := 0.0
		for rh := 0; rh < k; rh++ {
			for rw := 0; rw < k; rw++ {
				for kk := 0; kk < c; kk++ {
					for rc := 0; rc < ci; rc++ {
						sum += x.get(o[0], o[1]*st-p+rh, o[2]*st-p+rw, o[3], kk, rc) * w.at(rh, rw, kk, o[4], rc, o[5])
					}
				}
			}
		}
		res = append(res, sum)
	})
	return res
}

func refGMM(s *workload.Spec, in []tensor, out []int) []float64 {
	x, y := in[0], in[1]
	var res []float64
	grid(out, func(o []int) {
		sum := 0.0
		for k := 0; k < x.shape[2]; k++ {
			sum += x.at(o[0], o[1], k) * y.at(o[0], k, o[2])
		}
		res = append(res, sum)
	})
	return res
}

func refTBG(s *workload.Spec, in []tensor, out []int) []float64 {
	q, v := in[0], in[1]
	var res []float64
	grid(out, func(o []int) { // o = b, h, i, j
		sum := 0.0
		for k := 0; k < q.shape[3]; k++ {
			sum += q.at(o[0], o[2], o[1], k) * v.at(o[0], o[3], o[1], k)
		}
		res = append(res, sum)
	})
	return res
}

func refNRM(s *workload.Spec, in []tensor, out []int) []float64 {
	a := in[0]
	var res []float64
	for b := 0; b < out[0]; b++ {
		sum := 0.0
		grid(a.shape[1:], func(i []int) { sum += a.at(b, i[0], i[1]) * a.at(b, i[0], i[1]) })
		res = append(res, math.Sqrt(sum))
	}
	return res
}

func refSFM(s *workload.Spec, in []tensor, out []int) []float64 {
	a := in[0]
	var res []float64
	for i := 0; i < out[0]; i++ {
		mx := math.Inf(-1)
		for j := 0; j < out[1]; j++ {
			mx = math.Max(mx, a.at(i, j))
		}
		sum := 0.0
		for j := 0; j < out[1]; j++ {
			sum += math.Exp(a.at(i, j) - mx)
		}
		for j := 0; j < out[1]; j++ {
			res = append(res, math.Exp(a.at(i, j)-mx)/sum)
		}
	}
	return res
}

func refDense(s *workload.Spec, in []tensor, out []int) []float64 {
	a, w := in[0], in[1]
	var res []float64
	grid(out, func(o []int) {
		sum := 0.0
		for k := 0; k < a.shape[1]; k++ {
			if s.Family() == "DENSE" {
				sum += a.at(o[0], k) * w.at(o[1], k)
			} else {
				sum += a.at(o[0], k) * w.at(k, o[1])
			}
		}
		if s.Bool("bias") {
			sum += in[2].at(o[1])
		}
		res = append(res, act(s, sum))
	})
	return res
}

// refLayerNorm normalizes each row with its mean and (two-pass) variance.
func refLayerNorm(s *workload.Spec, in []tensor, out []int) []float64 {
	a, gamma, beta := in[0], in[1], in[2]
	n := out[1]
	var res []float64
	for i := 0; i < out[0]; i++ {
		mean := 0.0
		for j := 0; j < n; j++ {
			mean += a.at(i, j)
		}
		mean /= float64(n)
		variance := 0.0
		for j := 0; j < n; j++ {
			d := a.at(i, j) - mean
			variance += d * d
		}
		variance /= float64(n)
		for j := 0; j < n; j++ {
			res = append(res, (a.at(i, j)-mean)/math.Sqrt(variance+s.Float("eps"))*gamma.at(j)+beta.at(j))
		}
	}
	return res
}

// refPool takes the max or the mean of the window's elements that lie in
// the input; average pooling with count_include_pad divides by k*k.
func refPool(s *workload.Spec, in []tensor, out []int) []float64 {
	x := in[0]
	k, st, p := int(s.Int("k")), int(s.Int("s")), int(s.Int("p"))
	var res []float64
	grid(out, func(o []int) {
		mx, sum, count := math.Inf(-1), 0.0, 0
		for rh := 0; rh < k; rh++ {
			for rw := 0; rw < k; rw++ {
				h, w := o[1]*st-p+rh, o[2]*st-p+rw
				if !x.inBounds(o[0], h, w, o[3]) {
					continue
				}
				v := x.at(o[0], h, w, o[3])
				mx, sum, count = math.Max(mx, v), sum+v, count+1
			}
		}
		switch {
		case s.Str("pool") == "max":
			res = append(res, mx)
		case s.Bool("count_include_pad"):
			res = append(res, sum/float64(k*k))
		default:
			res = append(res, sum/float64(count))
		}
	})
	return res
}

// numericCases are small shapes covering each family's corners: strides,
// zero and large padding, groups, dilation, capsules of other sizes, every
// epilogue.
var numericCases = []struct {
	spec string
	ref  reference
}{
	{`{"family":"C1D","N":2,"L":9,"CI":3,"CO":4,"k":3,"s":2,"p":1}`, refConv},
	{`{"family":"C1D","N":1,"L":7,"CI":2,"CO":3,"k":5,"s":1,"p":2}`, refConv},
	{`{"family":"C2D","N":1,"H":7,"W":6,"CI":3,"CO":4,"k":3,"s":2,"p":1}`, refConv},
	{`{"family":"C2D","N":2,"H":5,"W":5,"CI":2,"CO":3,"k":1,"s":1,"p":0}`, refConv},
	{`{"family":"C3D","N":1,"D":4,"H":5,"W":5,"CI":2,"CO":3,"k":3,"s":2,"p":1}`, refConv},
	{`{"family":"GMM","B":2,"N":5,"M":6,"K":7}`, refGMM},
	{`{"family":"GRP","N":1,"H":6,"W":6,"CI":4,"CO":6,"k":3,"s":2,"p":1,"dil":1,"g":2}`, refConv},
	{`{"family":"GRP","N":1,"H":7,"W":7,"CI":6,"CO":3,"k":3,"s":1,"p":2,"dil":2,"g":3}`, refConv},
	{`{"family":"DIL","N":1,"H":9,"W":8,"CI":2,"CO":3,"k":3,"s":2,"p":3,"dil":2}`, refConv},
	{`{"family":"DEP","N":2,"H":6,"W":5,"C":3,"k":3,"s":2,"p":1}`, refDEP},
	{`{"family":"DEP","N":1,"H":5,"W":5,"C":4,"k":3,"s":1,"p":0}`, refDEP},
	{`{"family":"T2D","N":1,"H":3,"W":3,"CI":3,"CO":2,"k":4,"s":2,"p":1}`, refT2D},
	{`{"family":"T2D","N":2,"H":3,"W":4,"CI":2,"CO":3,"k":3,"s":1,"p":0}`, refT2D},
	{`{"family":"T2D","N":1,"H":3,"W":3,"CI":2,"CO":2,"k":5,"s":3,"p":2}`, refT2D},
	{`{"family":"T2D","N":1,"H":2,"W":3,"CI":2,"CO":2,"k":2,"s":2,"p":1}`, refT2D},
	{`{"family":"CAP","N":1,"H":5,"W":5,"CI":2,"CO":3,"k":3,"s":2,"p":1}`, refCAP},
	{`{"family":"CAP","N":1,"H":4,"W":4,"CI":2,"CO":2,"k":3,"s":1,"p":1,"cap":2}`, refCAP},
	{`{"family":"NRM","B":2,"M":5,"N":7}`, refNRM},
	{`{"family":"SFM","M":4,"N":9}`, refSFM},
	{`{"family":"CBR","N":1,"H":6,"W":6,"CI":3,"CO":4,"k":3,"s":2,"p":1}`, refCBR},
	{`{"family":"TBG","batch":2,"seq":5,"heads":3,"dim":4}`, refTBG},
	{`{"family":"DENSE","M":5,"N":6,"K":7}`, refDense},
	{`{"family":"DENSE","M":5,"N":6,"K":7,"bias":true,"act":"relu"}`, refDense},
	{`{"family":"DENSE","M":4,"N":3,"K":8,"act":"gelu"}`, refDense},
	{`{"family":"MATMUL","N":5,"M":6,"K":7,"act":"relu"}`, refDense},
	{`{"family":"MATMUL","N":3,"M":4,"K":5,"bias":true,"act":"gelu"}`, refDense},
	{`{"family":"LNORM","M":3,"N":16}`, refLayerNorm},
	{`{"family":"LNORM","M":2,"N":10,"eps":0.5}`, refLayerNorm},
	{`{"family":"POOL","N":1,"H":7,"W":6,"C":2,"k":3,"s":2,"p":1,"pool":"max"}`, refPool},
	{`{"family":"POOL","N":2,"H":5,"W":5,"C":2,"k":2,"s":2,"p":0,"pool":"max"}`, refPool},
	{`{"family":"POOL","N":1,"H":7,"W":6,"C":2,"k":3,"s":2,"p":1,"pool":"avg"}`, refPool},
	{`{"family":"POOL","N":1,"H":7,"W":6,"C":2,"k":3,"s":2,"p":1,"pool":"avg","count_include_pad":false}`, refPool},
}

// checkNumeric runs f on seeded random inputs and compares its last
// parameter with want(inputs).
func checkNumeric(t *testing.T, f *ir.PrimFunc, args [][]float32, want func(in []tensor, out []int) []float64) {
	t.Helper()
	p, err := interp.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background(), args); err != nil {
		t.Fatal(err)
	}
	in := tensors(f, args)
	last := in[len(in)-1]
	ref := want(in[:len(in)-1], last.shape)
	if len(ref) != len(last.data) {
		t.Fatalf("reference has %d elements, the output %d", len(ref), len(last.data))
	}
	exp := make([]float32, len(ref))
	for i, v := range ref {
		exp[i] = float32(v)
	}
	if err := interp.AllClose(last.data, exp, 1e-4, 1e-5); err != nil {
		t.Error(err)
	}
}

func TestNumericReference(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range numericCases {
		s, err := workload.ParseString(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		covered[s.Family()] = true
		t.Run(s.Label(), func(t *testing.T) {
			f, err := s.Build()
			if err != nil {
				t.Fatal(err)
			}
			args := interp.RandomArgs(f, 1)
			checkNumeric(t, f, args, func(in []tensor, out []int) []float64 { return c.ref(s, in, out) })
		})
	}
	for _, fam := range workload.Families() {
		if !covered[fam.Name] {
			t.Errorf("family %s has no numeric reference case", fam.Name)
		}
	}
}

// TestNumericReferenceCatchesErrors makes sure the comparison can fail: a
// convolution checked against the reference of another shape (stride 1
// instead of 2) and a softmax whose output is perturbed must not pass.
func TestNumericReferenceCatchesErrors(t *testing.T) {
	s, _ := workload.ParseString(`{"family":"C2D","N":1,"H":7,"W":6,"CI":3,"CO":4,"k":3,"s":2,"p":1}`)
	wrong, _ := workload.ParseString(`{"family":"C2D","N":1,"H":7,"W":6,"CI":3,"CO":4,"k":3,"s":1,"p":1}`)
	f, _ := s.Build()
	args := interp.RandomArgs(f, 1)
	p, _ := interp.Compile(f)
	if err := p.Run(context.Background(), args); err != nil {
		t.Fatal(err)
	}
	in := tensors(f, args)
	ref := refConv(wrong, in[:2], in[2].shape)
	exp := make([]float32, len(ref))
	for i, v := range ref {
		exp[i] = float32(v)
	}
	if interp.AllClose(in[2].data, exp, 1e-4, 1e-5) == nil {
		t.Error("a stride-2 convolution matched the stride-1 reference")
	}
}

// winogradSpec writes the builtin Winograd module's description for a
// direct convolution of the given shape (k = 3, s = 1).
func winogradSpec(n, h, w, ci, co, p int) string {
	oh, ow := h+2*p-2, w+2*p-2
	return fmt.Sprintf(`{"family":"custom","name":"conv2d_winograd_nhwc_add_relu",
	 "params":[{"buffer":"p0","shape":[%d,%d,%d,%d]},{"buffer":"p1","shape":[6,6,%d,%d]},
	           {"buffer":"p2","shape":[1,1,1,%d]},{"buffer":"T_relu","shape":[%d,%d,%d,%d]}],
	 "blocks_in_order":["data_pad","input_tile","B","data_pack","bgemm","A","inverse","conv2d_winograd","T_add","T_relu"],
	 "equivalent_direct_conv":{"family":"C2D","N":%d,"H":%d,"W":%d,"CI":%d,"CO":%d,"k":3,"s":1,"p":%d}}`,
		n, h, w, ci, co, ci, co, n, oh, ow, co, n, h, w, ci, co, p)
}

// winogradG solves for the kernel transform G (6 x 3) that makes the
// module's A and B an F(4, 3) Winograd algorithm: for every output i, input
// position l and tap k, sum_j A[j][i] * B[l][j] * G[j][k] = [l == i + k].
// It returns G and the largest residual; a residual above rounding means A
// and B are not a Winograd pair.
func winogradG() (g [6][3]float64, residual float64) {
	a, b := workload.WinogradMatrices()
	for k := 0; k < 3; k++ {
		// Least squares on the 24 equations in the 6 unknowns G[.][k].
		var ata [6][7]float64
		for i := 0; i < 4; i++ {
			for l := 0; l < 6; l++ {
				var row [6]float64
				for j := 0; j < 6; j++ {
					row[j] = a[j][i] * b[l][j]
				}
				rhs := 0.0
				if l == i+k {
					rhs = 1
				}
				for r := 0; r < 6; r++ {
					for c := 0; c < 6; c++ {
						ata[r][c] += row[r] * row[c]
					}
					ata[r][6] += row[r] * rhs
				}
			}
		}
		for c := 0; c < 6; c++ { // Gauss-Jordan with partial pivoting
			piv := c
			for r := c + 1; r < 6; r++ {
				if math.Abs(ata[r][c]) > math.Abs(ata[piv][c]) {
					piv = r
				}
			}
			ata[c], ata[piv] = ata[piv], ata[c]
			for r := 0; r < 6; r++ {
				if r != c {
					f := ata[r][c] / ata[c][c]
					for cc := c; cc < 7; cc++ {
						ata[r][cc] -= f * ata[c][cc]
					}
				}
			}
		}
		for j := 0; j < 6; j++ {
			g[j][k] = ata[j][6] / ata[j][j]
		}
		for i := 0; i < 4; i++ {
			for l := 0; l < 6; l++ {
				sum := 0.0
				for j := 0; j < 6; j++ {
					sum += a[j][i] * b[l][j] * g[j][k]
				}
				want := 0.0
				if l == i+k {
					want = 1
				}
				residual = math.Max(residual, math.Abs(sum-want))
			}
		}
	}
	return g, residual
}

// TestNumericWinograd checks the builtin Winograd module against a direct
// 3x3 convolution plus bias and ReLU, with the weight transformed to the
// Winograd domain (p1[eps, nu, co, ci] = sum G[eps, kh] w[kh, kw, ci, co]
// G[nu, kw]) by the G that A and B imply.
func TestNumericWinograd(t *testing.T) {
	g, res := winogradG()
	if res > 1e-9 {
		t.Fatalf("the module's A and B are not a Winograd F(4,3) pair: residual %g", res)
	}
	for _, c := range []struct{ n, h, w, ci, co, p int }{
		{1, 6, 6, 2, 3, 1}, // one tile plus a partial one: extra padding
		{2, 5, 5, 3, 2, 1}, // batch 2: the bias is indexed with 0
		{1, 4, 4, 2, 2, 0}, // no padding
	} {
		spec := winogradSpec(c.n, c.h, c.w, c.ci, c.co, c.p)
		t.Run(fmt.Sprintf("%dx%dx%dx%d-%d-p%d", c.n, c.h, c.w, c.ci, c.co, c.p), func(t *testing.T) {
			s, err := workload.ParseString(spec)
			if err != nil {
				t.Fatal(err)
			}
			f, err := s.Build()
			if err != nil {
				t.Fatal(err)
			}
			direct, _ := workload.ParseString(fmt.Sprintf(`{"family":"C2D","N":%d,"H":%d,"W":%d,"CI":%d,"CO":%d,"k":3,"s":1,"p":%d}`,
				c.n, c.h, c.w, c.ci, c.co, c.p))
			df, err := direct.Build()
			if err != nil {
				t.Fatal(err)
			}
			args := interp.RandomArgs(f, 2)
			weight := tensor{interp.RandomArgs(df, 3)[1], []int{3, 3, c.ci, c.co}}
			p1 := args[1]
			for eps := 0; eps < 6; eps++ {
				for nu := 0; nu < 6; nu++ {
					for co := 0; co < c.co; co++ {
						for ci := 0; ci < c.ci; ci++ {
							sum := 0.0
							for kh := 0; kh < 3; kh++ {
								for kw := 0; kw < 3; kw++ {
									sum += g[eps][kh] * weight.at(kh, kw, ci, co) * g[nu][kw]
								}
							}
							p1[((eps*6+nu)*c.co+co)*c.ci+ci] = float32(sum)
						}
					}
				}
			}
			checkNumeric(t, f, args, func(in []tensor, out []int) []float64 {
				conv := refConv(direct, []tensor{in[0], weight}, out)
				i := 0
				grid(out, func(o []int) {
					conv[i] = math.Max(conv[i]+in[2].at(0, 0, 0, o[3]), 0)
					i++
				})
				return conv
			})
		})
	}
}

// TestNumericCustom runs custom modules of tvm-traces, built from their
// expressions, against direct implementations. (The larger Metal matmuls,
// 10 to 40 million multiply-adds, would take seconds in the interpreter;
// their expressions are of the same forms as these.)
func TestNumericCustom(t *testing.T) {
	cases := []struct {
		dir string
		ref func(in []tensor, out []int) []float64
	}{
		{"cuda-dense-nt-128", func(in []tensor, out []int) []float64 {
			s, _ := workload.ParseString(`{"family":"DENSE","M":128,"N":128,"K":128}`)
			return refDense(s, in, out)
		}},
		{"opencl-softmax-1x1x32000", func(in []tensor, out []int) []float64 {
			s, _ := workload.ParseString(`{"family":"SFM","M":1,"N":32000}`)
			return refSFM(s, []tensor{{in[0].data, []int{1, 32000}}}, []int{1, 32000})
		}},
		{"metal-rms-norm-4096", func(in []tensor, out []int) []float64 {
			a, w := in[0], in[1]
			ms := 0.0
			for k := 0; k < 4096; k++ {
				ms += a.at(0, 0, k) * a.at(0, 0, k)
			}
			ms /= 4096
			var res []float64
			for k := 0; k < 4096; k++ {
				res = append(res, w.at(k)*a.at(0, 0, k)/math.Sqrt(ms+1e-6))
			}
			return res
		}},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/tvm-traces", c.dir, "workload.json"))
			if err != nil {
				t.Fatal(err)
			}
			f, err := workload.Build(data)
			if err != nil {
				t.Fatal(err)
			}
			args := interp.RandomArgs(f, 1)
			if strings.HasPrefix(c.dir, "metal-rms") {
				for i := range args[0] { // keep the mean square away from eps
					args[0][i] = 0.5 + args[0][i]/4
				}
			}
			checkNumeric(t, f, args, c.ref)
		})
	}
}
