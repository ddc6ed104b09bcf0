package postproc_test

import (
	"testing"

	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
)

// TestRewriteReductionBlockRecorded replays each recorded trace up to the
// instructions TVM's RewriteReductionBlock appended (the GetBlock of a
// non-root block after EnterPostproc; the whole trace where it appended
// none, as for the cross-thread reductions of rms-norm and softmax), runs
// ours, and wants the recorded remainder exactly: which blocks, in which
// order, at which loop, and nothing for a cross-thread reduction.
func TestRewriteReductionBlockRecorded(t *testing.T) {
	for _, c := range recordedWithPostproc {
		t.Run(c.name, func(t *testing.T) {
			tr, _ := recordedTrace(t, c.name)
			start := postprocSegment(tr, func(in trace.Inst) bool { return getBlockOf(in, false) })
			if start < 0 {
				start = len(tr.Insts)
			}
			s, want := replayPrefix(t, c.name, start)
			checkRecordedSuffix(t, c.name, s, want, []postproc.Postproc{postproc.NewRewriteReductionBlock()})
		})
	}
}
