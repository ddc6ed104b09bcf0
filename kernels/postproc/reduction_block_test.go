package postproc_test

import (
	"testing"

	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
)

// TestRewriteReductionBlockRecorded replays each recorded CUDA trace up to
// the instructions TVM's RewriteReductionBlock appended (the GetBlock of a
// non-root block after EnterPostproc), runs ours, and wants the recorded
// remainder exactly: which blocks, in which order, and at which loop.
func TestRewriteReductionBlockRecorded(t *testing.T) {
	for _, name := range recordedCUDA {
		t.Run(name, func(t *testing.T) {
			tr, _ := recordedTrace(t, name)
			start := postprocSegment(tr, func(in trace.Inst) bool { return getBlockOf(in, false) })
			if start < 0 {
				t.Fatalf("%s: no RewriteReductionBlock part after EnterPostproc", name)
			}
			s, want := replayPrefix(t, name, start)
			checkRecordedSuffix(t, name, s, want, []postproc.Postproc{postproc.NewRewriteReductionBlock()})
		})
	}
}
