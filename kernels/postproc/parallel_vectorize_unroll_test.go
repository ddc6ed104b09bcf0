package postproc_test

import (
	"context"
	"os"
	"testing"

	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
)

// TestRewriteParallelVectorizeUnrollRecorded replays each recorded trace
// up to the instructions TVM's RewriteParallelVectorizeUnroll appended
// (the GetBlock of the root after EnterPostproc), runs ours and then
// RewriteReductionBlock, and wants the recorded remainder exactly.
func TestRewriteParallelVectorizeUnrollRecorded(t *testing.T) {
	for _, c := range recordedWithPostproc {
		t.Run(c.name, func(t *testing.T) {
			tr, _ := recordedTrace(t, c.name)
			start := postprocSegment(tr, func(in trace.Inst) bool { return getBlockOf(in, true) })
			if start < 0 {
				t.Fatalf("%s: no RewriteParallelVectorizeUnroll part after EnterPostproc", c.name)
			}
			s, want := replayPrefix(t, c.name, start)
			rpvu := postproc.NewRewriteParallelVectorizeUnroll()
			if c.unrollAll {
				rpvu = postproc.NewRewriteParallelVectorizeUnrollAll()
			}
			checkRecordedSuffix(t, c.name, s, want, []postproc.Postproc{rpvu, postproc.NewRewriteReductionBlock()})
		})
	}
}

// TestPostprocDenseMatchesTVMModule runs our RewriteParallelVectorizeUnroll
// (the 2022 variant the trace was recorded with) and RewriteReductionBlock
// on the dense trace cut where TVM's began, and compares the printed
// function with the module TVM publishes for that trace
// (test_meta_schedule_trace_apply.py::test_dense_add_gpu, ported in
// kernels/trace/testdata/tvm-trace-apply/dense-nt-gpu).
func TestPostprocDenseMatchesTVMModule(t *testing.T) {
	const name = "cuda-dense-nt-128"
	tr, _ := recordedTrace(t, name)
	start := postprocSegment(tr, func(in trace.Inst) bool { return getBlockOf(in, true) })
	s, _ := replayPrefix(t, name, start)
	if err := postproc.Run(context.Background(), s, []postproc.Postproc{
		postproc.NewRewriteParallelVectorizeUnrollAll(), postproc.NewRewriteReductionBlock(),
	}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../trace/testdata/tvm-trace-apply/dense-nt-gpu/expected.tir")
	if err != nil {
		t.Fatal(err)
	}
	if d := tvmgolden.Diff(s.Func().Script(), string(want)); d != "" {
		t.Fatalf("%s: %s", name, d)
	}
}
