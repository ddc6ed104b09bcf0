package postproc_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
)

// TestSketchesPostprocs runs our first three postprocessors on the four
// CUDA design-space sketches of testdata/tvm-traces (recorded without a
// postproc part; TVM publishes no postprocessed module for them): each
// must be accepted, leave a well-formed function in which every block
// runs under blockIdx and threadIdx loops, and split each shared stage's
// fused copy loop by the anchor's threadIdx.x extent (with the annotated
// vector length where it divides the loop, 1 otherwise).
func TestSketchesPostprocs(t *testing.T) {
	cases := []struct {
		name string
		// split is the emitted Split of each shared stage, in order.
		split []string
	}{
		// The values follow from the sketches' facts (kernels/trace
		// tvmtraces_test.go): threadIdx.x extent, the cooperative_fetch
		// value of each stage and its fused extent.
		// GMM: threadIdx.x 2; X_shared 2 (16384), Y_shared 1.
		{"cuda-sketch-gmm-1x128x128x128", []string{`"None",2,2`, `"None",2`}},
		// C1D: threadIdx.x 4; PadInput_shared 4 (260), weight_shared 3 (1536).
		{"cuda-sketch-c1d-1x256x64-128-k3s2p1", []string{`"None",4,4`, `"None",4,3`}},
		// C2D: threadIdx.x 14; PadInput_shared 2 does not divide 80379, weight_shared 4 (1176).
		{"cuda-sketch-c2d-1x224x224x3-64-k7s2p3", []string{`"None",14`, `"None",14,4`}},
		// DEP: threadIdx.x 14; PadInput_shared 3 (415872), placeholder_shared 3 (288).
		{"cuda-sketch-dep-1x112x112x32-k3s1p1", []string{`"None",14,3`, `"None",14,3`}},
	}
	ps := []postproc.Postproc{
		postproc.NewDisallowDynamicLoop(),
		postproc.NewRewriteCooperativeFetch(),
		postproc.NewRewriteUnboundBlock(),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, tr, err := tvmgolden.LoadCase(filepath.Join(tracesDir, c.name), "workload.json")
			if err != nil {
				t.Fatal(err)
			}
			tr.Insts = append(tr.Insts, trace.Inst{Kind: "EnterPostproc"})
			s, err := trace.Replay(context.Background(), f, tr, trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			n := len(s.Trace().Insts)
			if err := postproc.Run(context.Background(), s, ps); err != nil {
				t.Fatal(err)
			}
			if err := analysis.VerifyWellFormed(s.Func()); err != nil {
				t.Fatal(err)
			}
			var splits []string
			for _, in := range s.Trace().Insts[n:] {
				if in.Kind == "Split" {
					js := string(in.AppendJSON(nil))
					i := strings.Index(js, `"None"`)
					j := strings.Index(js[i:], "]")
					splits = append(splits, js[i:i+j])
				}
			}
			if strings.Join(splits, " | ") != strings.Join(c.split, " | ") {
				t.Errorf("splits %q, want %q", splits, c.split)
			}
			checkAllBound(t, s.Func())
		})
	}
}

// checkAllBound fails for a block of f not nested under both a blockIdx
// and a threadIdx loop.
func checkAllBound(t *testing.T, f *ir.PrimFunc) {
	t.Helper()
	var walk func(st ir.Stmt, blk, thr bool)
	walk = func(st ir.Stmt, blk, thr bool) {
		switch x := st.(type) {
		case *ir.For:
			walk(x.Body, blk || strings.HasPrefix(x.Thread, "blockIdx."), thr || strings.HasPrefix(x.Thread, "threadIdx."))
		case *ir.BlockRealize:
			if !blk || !thr {
				t.Errorf("block %s is not bound to blockIdx and threadIdx", x.Block.Name)
			}
		case *ir.SeqStmt:
			for _, c := range x.Stmts {
				walk(c, blk, thr)
			}
		case *ir.IfThenElse:
			walk(x.Then, blk, thr)
			walk(x.Else, blk, thr)
		}
	}
	walk(f.Root().Body, false, false)
}
