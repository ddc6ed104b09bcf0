package postproc_test

import (
	"context"
	"strings"
	"testing"

	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
)

// gmmCudaSession builds TVM's GmmCuda0 of
// test_meta_schedule_postproc_verify_gpu_code.py (v0.20.0): GMM
// 1x128x128x128 tiled i 4*1*8*4*1, j 4*1*16*1*2, k 4*1*32, X_shared
// fetched with 128 threads and vectors of 2, Y_shared with 128 threads,
// no unroll, the reduction decomposed. It replays the recorded GMM sketch
// (cuda-sketch-gmm-1x128x128x128) with those decisions, the block's
// thread-extent annotations set to [low, high] (TVM's GmmCuda1 and
// GmmCuda2 differ from GmmCuda0 only there; GmmCuda0 has none, which
// [32, 1024] stands for), then the cooperative-fetch instructions and our
// RewriteParallelVectorizeUnroll and RewriteReductionBlock. tileI and
// tileJ, when not nil, replace the tiles of i and j (to get other vthread
// extents). Our DecomposeReduction gives Z_init the annotations of Z, as
// TVM's does; TVM's hand-written modules have them on Z_update only.
func gmmCudaSession(t *testing.T, low, high int64, tileI, tileJ []int64) *trace.Session {
	t.Helper()
	const name = "cuda-sketch-gmm-1x128x128x128"
	tr, _ := recordedTrace(t, name)
	dec := map[int]trace.Value{
		4:  trace.IntsValue([]int64{1, 1, 1, 1, 1}),
		6:  trace.IntsValue([]int64{4, 1, 8, 4, 1}),
		8:  trace.IntsValue([]int64{4, 1, 16, 1, 2}),
		10: trace.IntsValue([]int64{4, 1, 32}),
		27: trace.IntValue(1), // vector length 2
		33: trace.IntValue(0), // vector length 1
		35: trace.IntValue(0), // no unroll
	}
	if tileI != nil {
		dec[6] = trace.IntsValue(tileI)
	}
	if tileJ != nil {
		dec[8] = trace.IntsValue(tileJ)
	}
	for i, d := range tr.Decisions {
		tr.Decisions[i].Value = dec[d.Index]
	}
	tr.Insts[19].Inputs[1] = trace.IntValue(low)
	tr.Insts[20].Inputs[1] = trace.IntValue(high)
	s, err := trace.Replay(context.Background(), buildRecordedWorkload(t, name), tr, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	str, n := trace.StringValue, trace.IntValue
	emit := func(kind string, inputs, attrs []trace.Value) []string {
		t.Helper()
		outs, err := s.Emit(kind, inputs, attrs, nil)
		if err != nil {
			t.Fatal(err)
		}
		return outs
	}
	emit("EnterPostproc", nil, nil)
	for _, c := range []struct {
		block string
		vec   int64
	}{{"b46", 2}, {"b56", 1}} {
		emit("Unannotate", []trace.Value{str(c.block)}, []trace.Value{str("meta_schedule.cooperative_fetch")})
		ls := emit("GetLoops", []trace.Value{str(c.block)}, nil)
		factors := []trace.Value{str(ls[len(ls)-1]), str("None"), n(128)}
		if c.vec > 1 {
			factors = append(factors, n(c.vec))
		}
		parts := emit("Split", factors, []trace.Value{n(1), n(0)})
		if c.vec > 1 {
			emit("Vectorize", []trace.Value{str(parts[2])}, nil)
		}
		emit("Bind", []trace.Value{str(parts[1])}, []trace.Value{str("threadIdx.x")})
	}
	if err := postproc.Run(context.Background(), s, []postproc.Postproc{
		postproc.NewRewriteParallelVectorizeUnroll(), postproc.NewRewriteReductionBlock(),
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerifyGPUCodeGMM(t *testing.T) {
	cuda := postproc.CUDALimits()
	with := func(f func(*postproc.GPULimits)) postproc.GPULimits {
		l := cuda
		f(&l)
		return l
	}
	cases := []struct {
		name         string
		low, high    int64
		tileI, tileJ []int64
		limits       postproc.GPULimits
		err          string // "" when it must pass
	}{
		// TVM's cases: GmmCuda0 passes, GmmCuda1 and GmmCuda2 fail.
		{name: "GmmCuda0", low: 32, high: 1024, limits: cuda},
		{name: "GmmCuda1", low: 0, high: 32, limits: cuda,
			err: "runs on 128 threads (threadIdx x*y*z = 128*1*1), outside its thread-extent range [0, 32]"},
		{name: "GmmCuda2", low: 1024, high: 1024, limits: cuda,
			err: "outside its thread-extent range [1024, 1024]"},
		// GmmCuda0 at the edges of each limit: its shared memory is
		// X_shared and Y_shared compacted to 1x32x32 floats each (4096 B),
		// as TVM's CompactBufferAllocation makes them.
		{name: "shared memory at the limit", low: 32, high: 1024,
			limits: with(func(l *postproc.GPULimits) { l.MaxSharedMemoryPerBlock = 8192 })},
		{name: "shared memory over", low: 32, high: 1024,
			limits: with(func(l *postproc.GPULimits) { l.MaxSharedMemoryPerBlock = 8191 }),
			err:    "kernel 0 (blockIdx.x loop b_0_i_0_j_0_fused): 8192 bytes of shared memory per block (X_shared 4096 B, Y_shared 4096 B), more than the 8191 allowed"},
		{name: "threads at the limit", low: 32, high: 1024,
			limits: with(func(l *postproc.GPULimits) { l.MaxThreadsPerBlock = 128 })},
		{name: "threads over", low: 32, high: 1024,
			limits: with(func(l *postproc.GPULimits) { l.MaxThreadsPerBlock = 127 }),
			err:    "128 threads per block, more than the 127 allowed"},
		{name: "vectors at the limit", low: 32, high: 1024,
			limits: with(func(l *postproc.GPULimits) { l.MaxVectorBytes = 8 })},
		{name: "vectors over", low: 32, high: 1024,
			limits: with(func(l *postproc.GPULimits) { l.MaxVectorBytes = 4 }),
			err:    "block X_shared: the vectorized load from X moves 2 lanes of float32 (8 bytes), more than 4"},
		{name: "8 vthreads", low: 1, high: 1024, tileI: []int64{4, 4, 8, 1, 1}, tileJ: []int64{4, 2, 16, 1, 1}, limits: cuda},
		{name: "16 vthreads", low: 1, high: 1024, tileI: []int64{4, 4, 8, 1, 1}, tileJ: []int64{2, 4, 16, 1, 1},
			limits: cuda,
			err:    "16 vthreads, more than the 8 allowed"},
		{name: "16 vthreads, no vthread bound", low: 1, high: 1024, tileI: []int64{4, 4, 8, 1, 1}, tileJ: []int64{2, 4, 16, 1, 1},

			limits: with(func(l *postproc.GPULimits) { l.MaxVThread = 0 })},
		{name: "invalid limits", low: 32, high: 1024,
			limits: with(func(l *postproc.GPULimits) { l.MaxThreadsPerBlock = 0 }),
			err:    "invalid GPU limits: MaxThreadsPerBlock is 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := gmmCudaSession(t, c.low, c.high, c.tileI, c.tileJ)
			n := len(s.Trace().Insts)
			err := postproc.Run(context.Background(), s, []postproc.Postproc{postproc.NewVerifyGPUCode(c.limits)})
			if len(s.Trace().Insts) != n {
				t.Errorf("VerifyGPUCode emitted %d instructions, want none", len(s.Trace().Insts)-n)
			}
			if c.err == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want one containing %q", err, c.err)
			}
			if !strings.HasPrefix(err.Error(), "postproc VerifyGPUCode: ") {
				t.Errorf("error %q does not name the postprocessor", err)
			}
		})
	}
}

// TestVerifyGPUCodeRecordedCUDA: the recorded CUDA traces, which TVM's
// VerifyGPUCode accepted, pass ours with the CUDA limits; with a limit of
// 1 byte, the message shows the shared memory we count. The dense's
// stages are split by factors that do not divide their extents, so their
// blocks have predicates: p0_shared is 16x4 floats and p1_shared 32x4, as
// the tiles of TVM's module (testdata/tvm-trace-apply/dense-nt-gpu) are,
// not the 64x4 and 128x4 the unpredicated loops span.
func TestVerifyGPUCodeRecordedCUDA(t *testing.T) {
	for _, c := range []struct{ name, shared string }{
		{"cuda-dense-nt-128", "768 bytes of shared memory per block (p0_shared 256 B, p1_shared 512 B)"},
		{"cuda-winograd-nhwc-56x56x64-add-relu", "bytes of shared memory per block (data_pack_shared"},
	} {
		tr, _ := recordedTrace(t, c.name)
		s, _ := replayPrefix(t, c.name, len(tr.Insts))
		if err := postproc.NewVerifyGPUCode(postproc.CUDALimits()).Apply(context.Background(), s); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		l := postproc.CUDALimits()
		l.MaxSharedMemoryPerBlock = 1
		err := postproc.VerifyGPUFunc(context.Background(), s.Func(), l)
		if err == nil || !strings.Contains(err.Error(), c.shared) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.shared)
		}
	}
}
