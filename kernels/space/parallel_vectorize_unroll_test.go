package space_test

import (
	"context"
	"testing"

	"dragonx/kernels/space"
	"dragonx/kernels/trace"
)

// TestParallelizeVectorizeUnrollSpatial is the point of TVM's
// test_parallel_vectorize_unroll_spatial on a smaller purely spatial
// function (its YOLO post-processing module needs int64 casts and
// sigmoid): the rule records nothing beyond the block collection, neither
// with the CUDA options nor with parallel and vectorize extents unset.
// A reduction gets the sampled unroll annotation on the root only.
func TestParallelizeVectorizeUnrollSpatial(t *testing.T) {
	ctx := context.Background()
	spatial := buildWorkload(t, "testdata/tvm/inline-constant-tensor/before.json")
	got, err := space.Generate(ctx, spatial, []space.Rule{space.ParallelizeVectorizeUnrollCUDA()}, trace.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d sketches, want 1", len(got))
	}
	for _, in := range got[0].Trace().Insts {
		if in.Kind != "GetBlock" {
			t.Errorf("spatial function: the rule records %s", in.Kind)
		}
	}
	matmul := buildWorkload(t, "testdata/tvm/mlt-cuda-matmul/before.json")
	got, err = space.Generate(ctx, matmul, []space.Rule{space.ParallelizeVectorizeUnrollCUDA()}, trace.Options{Check: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	insts := got[0].Trace().Insts
	if len(insts) != 4 {
		t.Fatalf("matmul: %d instructions, want GetBlock ×2, SampleCategorical, Annotate:\n%s", len(insts), got[0].Trace())
	}
	want := []string{
		`SampleCategorical [] [[0,16,64,512,1024],[0.2000000000000000111,0.2000000000000000111,0.2000000000000000111,0.2000000000000000111,0.2000000000000000111]] v2`,
		`Annotate ["b1","v2"] ["meta_schedule.unroll_explicit"] `,
	}
	for i, w := range want {
		if g := instStrings(insts[2:])[i]; g != w {
			t.Errorf("instruction %d:\n got %s\nwant %s", i+2, g, w)
		}
	}
	if insts[1].Attrs[0].Str != "root" {
		t.Errorf("the annotated block b1 is %s, not the root", insts[1].Attrs[0].Str)
	}
}
