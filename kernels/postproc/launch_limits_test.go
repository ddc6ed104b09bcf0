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
	return replayed(t, spec, "../verdict/testdata/attacks/"+name+".trace.json")
}

// replayed replays the trace in file on a workload and runs the CUDA
// postprocessors but VerifyGPUCode.
func replayed(t *testing.T, spec, file string) *ir.PrimFunc {
	t.Helper()
	data, err := os.ReadFile(file)
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

// TestLocalMemoryPerVThread: a real schedule, timed on an A10 (line 2 of
// kernels/fidelity/testdata/a10-ansor-bert/measured_scalar.csv; Ansor's
// BERT log), whose accumulator tile is 4 x 512 fp16 per vthread, under 4
// vthreads that each own a quarter of the rows 256 apart. Its threads
// hold 4 copies of the tile (16 KiB), as TVM's InjectVirtualThread
// allocates it; relaxing the tile over the vthread loop instead spans
// 772 rows (790528 B), past CUDA's 512 KiB, and refused it.
func TestLocalMemoryPerVThread(t *testing.T) {
	f := replayed(t, `{"family":"DENSE","M":1024,"N":1024,"K":1024,"dtype":"float16"}`, "testdata/a10/dense_1024x1024x1024_f16-L0100.json")
	for _, c := range []struct {
		local int64
		err   string
	}{
		{512 << 10, ""},
		{4 * 4 * 512 * 2, ""},
		{4*4*512*2 - 1, "16384 bytes of local memory per thread (T_matmul_NT_local 16384 B), more than the 16383 allowed"},
	} {
		l := postproc.CUDALimits()
		l.MaxLocalMemoryPerThread = c.local
		err := postproc.VerifyGPUFunc(context.Background(), f, l)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%d B of local memory: %v, want %q", c.local, err, c.err)
		}
	}
}
