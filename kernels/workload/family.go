package workload

import (
	"strings"

	"dragonx/kernels/ir"
)

// CustomFamily is the family name of a workload described block by block
// instead of by a builder (see Custom).
const CustomFamily = "custom"

// family is one workload generator: its parameters, their cross-field
// checks and its builder.
type family struct {
	name   string
	op     string // the TVM generator it reproduces
	doc    string
	fields []field
	check  func(s *Spec) error
	build  func(s *Spec) (*ir.PrimFunc, error)
}

func (f *family) field(name string) int {
	for i, x := range f.fields {
		if x.name == name {
			return i
		}
	}
	return -1
}

func (f *family) fieldList() string {
	names := make([]string, len(f.fields))
	for i, x := range f.fields {
		names[i] = x.name
	}
	return strings.Join(names, ", ")
}

// FamilyInfo describes a family for documentation and the CLI.
type FamilyInfo struct {
	Name      string
	Op        string // the TVM generator it reproduces
	Doc       string
	Fields    []FieldInfo
	Benchmark bool // one of the 13 MetaSchedule benchmark families
}

// FieldInfo describes one field of a family.
type FieldInfo struct {
	Name     string
	Type     string // "integer", "number", "bool" or "string"
	Doc      string
	Required bool
	Default  string   // JSON form, for optional fields
	Choices  []string // allowed strings, if restricted
}

// Families lists every family, the 13 benchmark families first (in the
// order of the reference's §4.1 table), then the extra ones.
func Families() []FamilyInfo {
	var out []FamilyInfo
	for _, f := range familyTable() {
		fi := FamilyInfo{Name: f.name, Op: f.op, Doc: f.doc, Benchmark: isBenchmarkFamily(f.name)}
		for _, x := range f.fields {
			info := FieldInfo{Name: x.name, Type: x.kind.String(), Doc: x.doc, Required: x.required, Choices: x.choices}
			if !x.required {
				info.Default = x.format(x.def)
			}
			fi.Fields = append(fi.Fields, info)
		}
		out = append(out, fi)
	}
	return out
}

// FamilyNames lists the family names Parse accepts, "custom" last.
func FamilyNames() []string {
	var names []string
	for _, f := range familyTable() {
		names = append(names, f.name)
	}
	return append(names, CustomFamily)
}

// BenchmarkFamilies lists the 13 families of MetaSchedule's operator
// benchmark (te_workload.CONFIGS), in the reference's order.
func BenchmarkFamilies() []string {
	return []string{"C1D", "C2D", "C3D", "GMM", "GRP", "DIL", "DEP", "T2D", "CAP", "NRM", "SFM", "CBR", "TBG"}
}

func isBenchmarkFamily(name string) bool {
	for _, b := range BenchmarkFamilies() {
		if b == name {
			return true
		}
	}
	return false
}

func lookupFamily(name string) *family {
	for _, f := range familyTable() {
		if f.name == name {
			return f
		}
	}
	return nil
}

// familyTable returns the family descriptions. It builds them on each call
// (a few microseconds) so that no package state can be changed by a caller.
func familyTable() []*family {
	conv := func(spatial ...string) []field {
		fs := []field{size("N", "batch size")}
		for _, d := range spatial {
			fs = append(fs, size(d, "input size along "+d))
		}
		return append(fs,
			size("CI", "input channels"),
			size("CO", "output channels"),
			size("k", "kernel size (the same along every spatial axis)"),
			size("s", "stride"),
			nonneg("p", "zero padding on each side of every spatial axis"),
		)
	}
	with := func(fs []field, more ...field) []field { return append(fs, more...) }
	// dtypeField is the optional element type every family takes.
	dtypeField := optChoice("dtype", "element type of every buffer", "float32", "float32", "float16")
	dil := size("dil", "dilation of the kernel")
	grp := size("g", "number of groups; CI and CO must be multiples of it")
	epilogue := []field{
		optBool("bias", "add a bias vector over the output columns (T_add)", false),
		optChoice("act", "activation after the bias: none, relu or gelu (erf form)", "none", "none", "relu", "gelu"),
	}
	return []*family{
		{name: "C1D", op: "conv1d_nlc", doc: "1-D convolution, NLC layout, weight (k, CI, CO)",
			fields: with(conv("L"), dtypeField), check: checkConv, build: buildConv},
		{name: "C2D", op: "conv2d_nhwc", doc: "2-D convolution, NHWC layout, weight (k, k, CI, CO)",
			fields: with(conv("H", "W"), dtypeField), check: checkConv, build: buildConv},
		{name: "C3D", op: "conv3d_ndhwc", doc: "3-D convolution, NDHWC layout, weight (k, k, k, CI, CO)",
			fields: with(conv("D", "H", "W"), dtypeField), check: checkConv, build: buildConv},
		{name: "GMM", op: "batch_matmul_nkkm", doc: "batched matmul Z[b,i,j] = sum_k X[b,i,k] * Y[b,k,j]",
			fields: []field{size("B", "batch size"), size("N", "rows of X and Z"), size("M", "columns of Y and Z"),
				size("K", "reduction length"), dtypeField},
			check: checkNone, build: buildGMM},
		{name: "GRP", op: "conv2d_nhwc (groups)", doc: "grouped 2-D convolution, NHWC, weight (k, k, CI/g, CO)",
			fields: with(conv("H", "W"), dil, grp, dtypeField), check: checkConv, build: buildConv},
		{name: "DIL", op: "conv2d_nhwc (dilation)", doc: "dilated 2-D convolution, NHWC, weight (k, k, CI, CO)",
			fields: with(conv("H", "W"), dil, dtypeField), check: checkConv, build: buildConv},
		{name: "DEP", op: "depthwise_conv2d_nhwc", doc: "depthwise 2-D convolution, NHWC, weight (1, k, k, C)",
			fields: []field{size("N", "batch size"), size("H", "input height"), size("W", "input width"),
				size("C", "channels"), size("k", "kernel size"), size("s", "stride"),
				nonneg("p", "zero padding on each side"), dtypeField},
			check: checkConv, build: buildDEP},
		{name: "T2D", op: "conv2d_transpose_nhwc", doc: "transposed 2-D convolution, NHWC, weight (k, k, CI, CO)",
			fields: with(conv("H", "W"), dtypeField), check: checkT2D, build: buildT2D},
		{name: "CAP", op: "conv2d_capsule_nhwijc", doc: "capsule 2-D convolution, input (N, H, W, cap, cap, CI)",
			fields: with(conv("H", "W"), optInt("cap", "capsule size (matrices are cap x cap)", 4), dtypeField),
			check:  checkConv, build: buildCAP},
		{name: "NRM", op: "norm_bmn", doc: "per-batch Frobenius norm D[b] = sqrt(sum_ij A[b,i,j]^2)",
			fields: []field{size("B", "batch size"), size("M", "rows"), size("N", "columns"), dtypeField},
			check:  checkNone, build: buildNRM},
		{name: "SFM", op: "softmax_mn", doc: "softmax over axis 1 of an (M, N) matrix",
			fields: []field{size("M", "rows"), size("N", "columns (the softmax axis)"), dtypeField},
			check:  checkNone, build: buildSFM},
		{name: "CBR", op: "conv2d_nhwc_bn_relu", doc: "2-D convolution + bias + batch-norm scale and offset + ReLU",
			fields: with(conv("H", "W"), dtypeField), check: checkConv, build: buildCBR},
		{name: "TBG", op: "transpose_batch_matmul", doc: "attention scores: transpose Q and V, then C[b,h,i,j] = sum_k Q[b,h,i,k] * V[b,h,k,j]",
			fields: []field{size("batch", "batch size"), size("seq", "sequence length"), size("heads", "attention heads"),
				size("dim", "head dimension"), dtypeField},
			check: checkNone, build: buildTBG},
		{name: "DENSE", op: "nn.dense (+ bias, activation)", doc: "dense layer with transposed weight, T_matmul_NT[i,j] = sum_k p0[i,k] * p1[j,k], with optional epilogues",
			fields: with([]field{size("M", "rows of the input"), size("N", "output features (rows of the weight)"),
				size("K", "input features")}, with(epilogue, dtypeField)...),
			check: checkNone, build: buildDense},
		{name: "MATMUL", op: "matmul (+ bias, activation)", doc: "matmul C[i,j] = sum_k A[i,k] * B[k,j] (te_workload.matmul), with optional epilogues",
			fields: with([]field{size("N", "rows of A and C"), size("M", "columns of B and C"), size("K", "reduction length")},
				with(epilogue, dtypeField)...),
			check: checkNone, build: buildMatmul},
		{name: "LNORM", op: "layer_norm", doc: "layer normalization over the last axis of an (M, N) matrix, with gamma and beta",
			fields: []field{size("M", "rows"), size("N", "columns (the normalized axis)"),
				optFloat("eps", "added to the variance", 1e-5), dtypeField},
			check: checkNone, build: buildLayerNorm},
		{name: "POOL", op: "pool2d (NHWC)", doc: "2-D max or average pooling, NHWC",
			fields: []field{size("N", "batch size"), size("H", "input height"), size("W", "input width"),
				size("C", "channels"), size("k", "window size"), size("s", "stride"),
				nonneg("p", "padding on each side (smaller than k)"),
				choice("pool", "max or avg", "max", "avg"),
				optBool("count_include_pad", "avg: divide by k*k (true) or by the number of unpadded elements", true),
				dtypeField},
			check: checkPool, build: buildPool},
	}
}
