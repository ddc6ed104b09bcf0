package te_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/ir"
	"dragonx/kernels/te"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (run go test -update if intended); got:\n%s", name, path, got)
	}
}

// softmax is topi's softmax over the last axis: two reductions (max, sum)
// and two elementwise stages.
func softmax(t *testing.T) *ir.PrimFunc {
	b := te.NewBuilder()
	A := b.Placeholder("A", ir.Float32, 256, 256)
	k := b.ReduceAxis("k", 256)
	maxe := b.ComputeReduce("T_softmax_maxelem", []int64{256}, func(i []ir.Expr) te.Reduction {
		return te.Max(A.At(i[0], k.Var()), k)
	})
	exp := b.Compute("T_softmax_exp", []int64{256, 256}, func(i []ir.Expr) ir.Expr {
		return ir.Exp(ir.Sub(A.At(i[0], i[1]), maxe.At(i[0])))
	})
	k2 := b.ReduceAxis("k", 256)
	sum := b.ComputeReduce("T_softmax_expsum", []int64{256}, func(i []ir.Expr) te.Reduction {
		return te.Sum(exp.At(i[0], k2.Var()), k2)
	})
	norm := b.Compute("T_softmax_norm", []int64{256, 256}, func(i []ir.Expr) ir.Expr {
		return ir.Div(exp.At(i[0], i[1]), sum.At(i[0]))
	}, te.Attr("axis", ir.AnnInt(1)))
	f, err := b.Func("main", []*te.Tensor{A, norm})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSoftmaxScript(t *testing.T) {
	golden(t, "softmax", softmax(t).Script())
}

func blockNames(f *ir.PrimFunc) string {
	var names []string
	for _, b := range ir.Blocks(f)[1:] {
		names = append(names, b.Name)
	}
	return strings.Join(names, " ")
}

func TestOrderAllocationsAndNames(t *testing.T) {
	b := te.NewBuilder()
	A := b.Placeholder("A", ir.Float32, 8)
	X := b.Compute("X", []int64{8}, func(i []ir.Expr) ir.Expr { return ir.Add(A.At(i[0]), ir.F32(1)) })
	Y := b.Compute("X", []int64{8}, func(i []ir.Expr) ir.Expr { return ir.Mul(A.At(i[0]), ir.F32(2)) })
	b.Compute("unused", []int64{8}, func(i []ir.Expr) ir.Expr { return A.At(i[0]) })
	// Z reads Y before X: post-DFS order follows the reads.
	Z := b.Compute("Z", []int64{8}, func(i []ir.Expr) ir.Expr { return ir.Sub(Y.At(i[0]), X.At(i[0])) })
	f, err := b.Func("main", []*te.Tensor{A, Z})
	if err != nil {
		t.Fatal(err)
	}
	if got := blockNames(f); got != "X X_1 Z" {
		t.Errorf("blocks = %s, want X X_1 Z (Y first, renamed; unused dropped)", got)
	}
	var allocs []string
	for _, a := range f.Root().AllocBuffers {
		allocs = append(allocs, a.Name())
	}
	if got := strings.Join(allocs, " "); got != "X X" {
		t.Errorf("allocations = %s", got)
	}
	if ir.Blocks(f)[1].Body.(*ir.BufferStore).Buffer != Y.Buffer() {
		t.Errorf("the first block does not compute Y")
	}
}

func TestBufferName(t *testing.T) {
	b := te.NewBuilder()
	A := b.Placeholder("lv34", ir.Float32, 4)
	C := b.Compute("T_add", []int64{4}, func(i []ir.Expr) ir.Expr { return ir.Add(A.At(i[0]), ir.F32(1)) },
		te.BufferName("var_T_add_intermediate"), te.Names("ax0"))
	f, err := b.Func("main", []*te.Tensor{A, C})
	if err != nil {
		t.Fatal(err)
	}
	if got := ir.StmtString(ir.Blocks(f)[1].Body); got != "var_T_add_intermediate[v_ax0] = lv34[v_ax0] + T.float32(1)" {
		t.Errorf("body = %s", got)
	}
	if ir.Blocks(f)[1].Name != "T_add" || f.Params[1].Name() != "var_T_add_intermediate" {
		t.Errorf("block %s, buffer %s", ir.Blocks(f)[1].Name, f.Params[1].Name())
	}
}

func TestReductionInitAndLoops(t *testing.T) {
	b := te.NewBuilder()
	A := b.Placeholder("A", ir.Float32, 4, 5, 6)
	r1, r2 := b.ReduceAxis("r1", 6), b.ReduceAxis("r0", 5)
	M := b.ComputeReduce("M", []int64{4}, func(i []ir.Expr) te.Reduction {
		return te.Max(A.At(i[0], r2.Var(), r1.Var()), r1, r2)
	}, te.Names("b"))
	f, err := b.Func("main", []*te.Tensor{A, M})
	if err != nil {
		t.Fatal(err)
	}
	blk := ir.Blocks(f)[1]
	var loops []string
	for _, l := range ir.NewIndex(f).Loops(blk) {
		loops = append(loops, l.Var.Name())
	}
	if got := strings.Join(loops, " "); got != "b r1 r0" {
		t.Errorf("loops = %s, want spatial then reduce axes in Reduction order: b r1 r0", got)
	}
	if got := ir.StmtString(blk.Init); got != "M[v_b] = T.float32(-3.4028234663852886e+38)" {
		t.Errorf("init = %s", got)
	}
	if got := ir.StmtString(blk.Body); got != "M[v_b] = T.max(M[v_b], A[v_b, v_r0, v_r1])" {
		t.Errorf("body = %s", got)
	}
	if err := analysis.VerifyWellFormed(f); err != nil {
		t.Error(err)
	}
}

func TestBodySimplified(t *testing.T) {
	b := te.NewBuilder()
	A := b.Placeholder("A", ir.Float32, 16)
	r := b.ReduceAxis("r", 3)
	C := b.ComputeReduce("C", []int64{14}, func(i []ir.Expr) te.Reduction {
		// stride 1, dilation 1: TVM's analyzer folds the multiplications.
		return te.Sum(A.At(ir.Add(ir.Mul(i[0], ir.Int(1)), ir.Mul(r.Var(), ir.Int(1)))), r)
	}, te.Names("l"))
	f, err := b.Func("main", []*te.Tensor{A, C})
	if err != nil {
		t.Fatal(err)
	}
	if got := ir.StmtString(ir.Blocks(f)[1].Body); got != "C[v_l] = C[v_l] + A[v_l + v_r]" {
		t.Errorf("body = %s", got)
	}
}

func TestFuncErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func() (*ir.PrimFunc, error)
		want  string
	}{
		{"placeholder not an argument", func() (*ir.PrimFunc, error) {
			b := te.NewBuilder()
			A := b.Placeholder("A", ir.Float32, 4)
			B := b.Compute("B", []int64{4}, func(i []ir.Expr) ir.Expr { return A.At(i[0]) })
			return b.Func("main", []*te.Tensor{B})
		}, "placeholder A is used but is not an argument of main"},
		{"zero extent", func() (*ir.PrimFunc, error) {
			b := te.NewBuilder()
			A := b.Placeholder("A", ir.Float32, 4, 0)
			return b.Func("main", []*te.Tensor{A})
		}, "placeholder A: extent 0 in dimension 1"},
		{"negative reduce extent", func() (*ir.PrimFunc, error) {
			b := te.NewBuilder()
			A := b.Placeholder("A", ir.Float32, 4)
			r := b.ReduceAxis("r", -2)
			B := b.ComputeReduce("B", []int64{1}, func(i []ir.Expr) te.Reduction { return te.Sum(A.At(r.Var()), r) })
			return b.Func("main", []*te.Tensor{A, B})
		}, "reduce axis r: extent -2"},
		{"axis names", func() (*ir.PrimFunc, error) {
			b := te.NewBuilder()
			A := b.Placeholder("A", ir.Float32, 4)
			B := b.Compute("B", []int64{4}, func(i []ir.Expr) ir.Expr { return A.At(i[0]) }, te.Names("i", "j"))
			return b.Func("main", []*te.Tensor{A, B})
		}, "compute B: 2 axis names for 1 dimensions"},
		{"argument twice", func() (*ir.PrimFunc, error) {
			b := te.NewBuilder()
			A := b.Placeholder("A", ir.Float32, 4)
			return b.Func("main", []*te.Tensor{A, A})
		}, "tensor A is an argument twice"},
		{"foreign buffer", func() (*ir.PrimFunc, error) {
			b := te.NewBuilder()
			X := ir.NewBuffer("X", ir.Float32, []int64{4}, "")
			B := b.Compute("B", []int64{4}, func(i []ir.Expr) ir.Expr { return ir.Load(X, i[0]) })
			return b.Func("main", []*te.Tensor{B})
		}, "compute B reads buffer X, which this builder did not make"},
		{"empty reduction", func() (*ir.PrimFunc, error) {
			b := te.NewBuilder()
			A := b.Placeholder("A", ir.Float32, 4)
			B := b.ComputeReduce("B", []int64{4}, func(i []ir.Expr) te.Reduction { return te.Sum(A.At(i[0])) })
			return b.Func("main", []*te.Tensor{A, B})
		}, "compute B: reduction over no axis"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.build()
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "kernels: ") {
				t.Errorf("Func error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
