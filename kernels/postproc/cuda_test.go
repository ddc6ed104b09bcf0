package postproc_test

import (
	"testing"

	"dragonx/kernels/postproc"
)

// TestCUDAReproducesRecordedTraces runs the whole CUDA list on the CUDA
// traces TVM recorded with their postproc part: replaying the part up to
// EnterPostproc and then the six postprocessors gives back the full
// recorded trace, byte for byte (what the tuning database stores). The
// traces come from a TVM before apache/tvm 87146565b4, whose
// RewriteParallelVectorizeUnroll also annotated purely spatial blocks.
func TestCUDAReproducesRecordedTraces(t *testing.T) {
	for _, name := range []string{"cuda-dense-nt-128", "cuda-winograd-nhwc-56x56x64-add-relu"} {
		t.Run(name, func(t *testing.T) {
			tr, _ := recordedTrace(t, name)
			p := tr.Postproc()
			if p < 0 {
				t.Fatalf("%s has no EnterPostproc", name)
			}
			s, want := replayPrefix(t, name, p+1)
			ps := postproc.CUDA()
			if got := ps[3].Name(); got != "RewriteParallelVectorizeUnroll" {
				t.Fatalf("CUDA()[3] is %s", got)
			}
			ps[3] = postproc.NewRewriteParallelVectorizeUnrollAll()
			checkRecordedSuffix(t, name, s, want, ps)
		})
	}
}
