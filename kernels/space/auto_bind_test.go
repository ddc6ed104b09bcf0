package space_test

import (
	"context"
	"strings"
	"testing"

	"dragonx/kernels/space"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// TestAutoBindLargeAndReductionOnly covers the branches of TVM's
// BindBlockThreadIdx that the ported case (autobind-elementwise) does not:
// a fused extent beyond 256 × 1024 is split in three, reordered and bound
// with constant factors, nothing sampled; a block whose only loop is a
// reduction (TVM's test_cuda_reduction_loop_only, which adds a unit loop)
// is refused with the reason.
func TestAutoBindLargeAndReductionOnly(t *testing.T) {
	ctx := context.Background()
	large := `{"family":"custom","name":"large","params":[{"buffer":"A","shape":[1024,1024]},{"buffer":"B","shape":[1024,1024]}],
	 "blocks":[{"name":"C","loops":[["i",1024],["j",1024]],"iters":[{"var":"vi","kind":"S","extent":1024},{"var":"vj","kind":"S","extent":1024}],
	 "body":"B[vi, vj] = A[vi, vj] + T.float32(1)"}]}`
	f, err := workload.Build([]byte(large))
	if err != nil {
		t.Fatal(err)
	}
	got, err := space.Generate(ctx, f, []space.Rule{space.AutoBindCUDA()}, trace.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`GetBlock [] ["C","main"] b0`,
		`GetBlock [] ["root","main"] b1`,
		`GetLoops ["b0"] [] l2,l3`,
		`Fuse ["l2","l3"] [1] l4`,
		`Split ["l4","None",256,1024] [1,0] l5,l6,l7`,
		`Reorder ["l6","l7","l5"] [] `,
		`Bind ["l6"] ["blockIdx.x"] `,
		`Bind ["l7"] ["threadIdx.x"] `,
	}
	if g := instStrings(got[0].Trace().Insts); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("large extent:\n got %q\nwant %q", g, want)
	}

	reduction := `{"family":"custom","name":"reduction_loop_only","params":[{"buffer":"A","shape":[2]},{"buffer":"B","shape":[2]},{"buffer":"C","shape":[1]}],
	 "blocks":[{"name":"C","loops":[["i0",2]],"iters":[{"var":"k0","kind":"R","extent":2}],
	 "init":"C[0] = T.float32(1)","body":"C[0] = T.min(C[0], A[k0] / B[k0])"}]}`
	f, err = workload.Build([]byte(reduction))
	if err != nil {
		t.Fatal(err)
	}
	_, err = space.Generate(ctx, f, []space.Rule{space.AutoBindCUDA()}, trace.Options{Check: true})
	if err == nil || !strings.Contains(err.Error(), "AddUnitLoop") {
		t.Errorf("reduction loop only: error %v, want one naming AddUnitLoop", err)
	}
}
