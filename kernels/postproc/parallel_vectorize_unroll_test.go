package postproc_test

import (
	"testing"

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
