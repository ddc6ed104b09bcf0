package postproc_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// scheduled replays a sketch of the attack suite (kernels/verdict
// testdata/attacks) on a workload and runs the CUDA postprocessors but
// VerifyGPUCode.
func scheduled(t *testing.T, spec, name string) *ir.PrimFunc {
	t.Helper()
	data, err := os.ReadFile("../verdict/testdata/attacks/" + name + ".trace.json")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	f, err := workload.Build([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := trace.Replay(ctx, f, tr, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(trace.Inst{Kind: "EnterPostproc"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range postproc.CUDA() {
		if p.Name() == "VerifyGPUCode" {
			continue
		}
		if err := postproc.Run(ctx, s, []postproc.Postproc{p}); err != nil {
			t.Fatal(err)
		}
	}
	return s.Func()
}

// TestLaunchLimits: the launch limits dragonx adds to VerifyGPUCode, at
// and one past each bound, and off at 0 (TVM's behaviour).
func TestLaunchLimits(t *testing.T) {
	grid := scheduled(t, `{"family":"GMM","B":1,"N":64,"M":64,"K":64}`, "grid-2p32-blocks")
	local := scheduled(t, `{"family":"GMM","B":1,"N":512,"M":512,"K":512}`, "local-whole-input")
	edit := func(f func(*postproc.GPULimits)) postproc.GPULimits {
		l := postproc.CUDALimits()
		f(&l)
		return l
	}
	for _, c := range []struct {
		name   string
		f      *ir.PrimFunc
		limits postproc.GPULimits
		err    string // "" when it passes
	}{
		{"grid, CUDA", grid, postproc.CUDALimits(), "blockIdx.x has extent 4294967296, more than the 2147483647 blocks a grid allows along x"},
		{"grid, at the bound", grid, edit(func(l *postproc.GPULimits) { l.MaxGridDim[0] = 1 << 32 }), ""},
		{"grid, off", grid, edit(func(l *postproc.GPULimits) { l.MaxGridDim[0] = 0 }), ""},
		{"block x", grid, edit(func(l *postproc.GPULimits) { l.MaxGridDim[0], l.MaxBlockDim[0] = 0, 63 }), "threadIdx.x has extent 64, more than the 63 threads a block allows along x"},
		{"local, CUDA", local, postproc.CUDALimits(), "1048576 bytes of local memory per thread (X_local 1048576 B), more than the 524288 allowed"},
		{"local, at the bound", local, edit(func(l *postproc.GPULimits) { l.MaxLocalMemoryPerThread = 1 << 20 }), ""},
		{"local, one below", local, edit(func(l *postproc.GPULimits) { l.MaxLocalMemoryPerThread = 1<<20 - 1 }), "1048576 bytes of local memory per thread"},
		{"local, off", local, edit(func(l *postproc.GPULimits) { l.MaxLocalMemoryPerThread = 0 }), ""},
		{"negative", local, edit(func(l *postproc.GPULimits) { l.MaxGridDim[2] = -1 }), "MaxGridDim[2] is -1"},
	} {
		err := postproc.VerifyGPUFunc(context.Background(), c.f, c.limits)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}
