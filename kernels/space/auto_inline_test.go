package space

import (
	"context"
	"os"
	"slices"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// TestAutoInlineCUDAIntoProducer runs TVM's CUDA AutoInline on the
// convolution + bias + batch-norm + ReLU chain of test_inline_consumer_chain.
// By TVM's rules: the output ReLU (b5) has no consumer and one complete
// producer, so it is reverse-inlined, and so are bn_add (b4) and bn_mul (b3)
// once each writes the output; bias_add (b2) is not, its producer being a
// reduction; the convolution is not inlined either way; the padding (b0),
// with its if_then_else allowed on CUDA, goes into the convolution. TVM's
// recorded cbr sketch (tvm-space-cuda/cbr-0) has the same instructions
// plus ReverseComputeInline(b2), which MultiLevelTiling's local write cache
// makes possible there.
func TestAutoInlineCUDAIntoProducer(t *testing.T) {
	spec, err := os.ReadFile("testdata/tvm/inline-consumer-chain/before.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := workload.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Generate(context.Background(), f, []Rule{AutoInlineCUDA()}, trace.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d sketches, want 1", len(got))
	}
	var steps []string
	for _, in := range got[0].Trace().Insts {
		if in.Kind != "GetBlock" {
			steps = append(steps, in.Kind+" "+in.Inputs[0].Str)
		}
	}
	want := []string{"ReverseComputeInline b5", "ReverseComputeInline b4", "ReverseComputeInline b3", "ComputeInline b0"}
	if !slices.Equal(steps, want) {
		t.Errorf("instructions %q, want %q", steps, want)
	}
}

func TestAnalyzeReadWrite(t *testing.T) {
	i, j, k := ir.NewVar("i", ir.Int32), ir.NewVar("j", ir.Int32), ir.NewVar("k", ir.Int32)
	buf := ir.NewBuffer("A", ir.Float32, []int64{8, 8, 8}, "")
	region := func(idx ...ir.Expr) ir.BufferRegion {
		r := ir.BufferRegion{Buffer: buf}
		for _, e := range idx {
			r.Region = append(r.Region, ir.PointRange(e))
		}
		return r
	}
	write := region(i, j, k)
	cases := []struct {
		name string
		read ir.BufferRegion
		want readWritePattern
	}{
		{"same", region(i, j, k), readWritePattern{true, true, true, true}},
		{"shifted", region(ir.NewBinary(ir.OpSub, i, ir.Int(1)), j, ir.NewBinary(ir.OpAdd, k, ir.Int(2))), readWritePattern{true, true, true, true}},
		{"constant index", region(i, ir.Int(0), k), readWritePattern{true, false, true, true}},
		{"transposed", region(j, i, k), readWritePattern{true, true, true, false}},
		{"repeated", region(i, i, k), readWritePattern{true, false, false, true}},
		{"scaled", region(ir.NewBinary(ir.OpMul, i, ir.Int(2)), j, k), readWritePattern{}},
	}
	for _, c := range cases {
		if got := analyzeReadWrite(c.read, write); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
