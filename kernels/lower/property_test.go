package lower_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/internal/tvmgolden"

	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
	"dragonx/kernels/postproc"
)

// TestLowerEveryCUDATrace lowers every CUDA trace and sketch of the
// repository's testdata that the rewriting postprocessors accept: each
// lowers without error, every allocation has a positive size, and where
// VerifyGPUCode accepts the function too each kernel's threads and shared
// bytes are within postproc.CUDALimits() and are the ones VerifyGPUCode
// counted (see agreeWithVerifier).
func TestLowerEveryCUDATrace(t *testing.T) {
	lim := postproc.CUDALimits()
	lowered := 0
	var crossThread []string
	for _, dir := range cudaCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			f, err, verr := scheduled(t, dir)
			if err != nil {
				t.Logf("rejected by the postprocessors, not lowered: %v", err)
				return
			}
			if verr != nil {
				t.Logf("over the GPU limits (lowered, limits not checked): %v", verr)
			}
			p, err := lower.Lower(context.Background(), f)
			if errors.Is(err, lower.ErrCrossThreadReduction) {
				crossThread = append(crossThread, filepath.Base(dir))
				t.Logf("not lowered: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Kernels) == 0 {
				t.Fatal("no kernel")
			}
			for _, k := range p.Kernels {
				if verr == nil && k.Threads() > lim.MaxThreadsPerBlock || k.Threads() < 1 {
					t.Errorf("%s: %d threads per block", k.Name, k.Threads())
				}
				if verr == nil && k.SharedBytes() > lim.MaxSharedMemoryPerBlock {
					t.Errorf("%s: %d bytes of shared memory", k.Name, k.SharedBytes())
				}
				for _, a := range k.Allocs {
					if a.Bytes <= 0 {
						t.Errorf("%s: %s has %d bytes", k.Name, a.Buffer.Name(), a.Bytes)
					}
				}
			}
			if verr == nil {
				agreeWithVerifier(t, f, p)
			}
			lowered++
			t.Logf("%d kernels, first: %d threads, %d B shared", len(p.Kernels), p.Kernels[0].Threads(), p.Kernels[0].SharedBytes())
		})
	}
	if lowered == 0 {
		t.Error("no case lowered")
	}
	t.Logf("lowered %d cases; refused as cross-thread reductions: %v", lowered, crossThread)
}

// agreeWithVerifier checks that the largest shared bytes and threads per
// block, and local bytes per thread, of p's kernels are exactly what
// VerifyGPUCode counts on f: f passes with those numbers as limits and
// fails with one less.
func agreeWithVerifier(t *testing.T, f *ir.PrimFunc, p *lower.Program) {
	t.Helper()
	var shared, local, threads int64
	for _, k := range p.Kernels {
		n, m := k.SharedBytes(), k.LocalBytes()
		for _, a := range k.Allocs {
			if a.Scratch && a.Scope == lower.ScopeShared {
				n -= a.Bytes // lowering's, not the schedule's
			}
			if a.Scratch && a.Scope == lower.ScopeLocal {
				m -= a.Bytes
			}
		}
		shared, local, threads = max(shared, n), max(local, m), max(threads, k.Threads())
	}
	ctx := context.Background()
	lim := postproc.CUDALimits()
	lim.MaxSharedMemoryPerBlock, lim.MaxThreadsPerBlock = max(shared, 1), threads
	lim.MaxLocalMemoryPerThread = max(local, 1)
	if err := postproc.VerifyGPUFunc(ctx, f, lim); err != nil {
		t.Errorf("VerifyGPUCode rejects %d B shared, %d B local, %d threads, what lowering counts: %v", shared, local, threads, err)
	}
	if local > 0 {
		l := lim
		l.MaxLocalMemoryPerThread = local - 1
		if postproc.VerifyGPUFunc(ctx, f, l) == nil {
			t.Errorf("VerifyGPUCode accepts %d B of local memory per thread, lowering counts %d", local-1, local)
		}
	}
	if shared > 0 {
		l := lim
		l.MaxSharedMemoryPerBlock = shared - 1
		if postproc.VerifyGPUFunc(ctx, f, l) == nil {
			t.Errorf("VerifyGPUCode accepts %d B of shared memory, lowering counts %d", shared-1, shared)
		}
	}
	if threads > 1 {
		l := lim
		l.MaxThreadsPerBlock = threads - 1
		if postproc.VerifyGPUFunc(ctx, f, l) == nil {
			t.Errorf("VerifyGPUCode accepts %d threads, lowering counts %d", threads-1, threads)
		}
	}
}

// TestLowerRefusesUnscheduled: the unscheduled function of every case
// (loops at the root, no thread binding) is refused with an error naming
// the root-level statement, never a panic or a program.
func TestLowerRefusesUnscheduled(t *testing.T) {
	for _, dir := range cudaCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			f, _, err := tvmgolden.LoadCase(dir, "workload.json")
			if err != nil {
				t.Fatal(err)
			}
			p, err := lower.Lower(context.Background(), f)
			if err == nil || !strings.Contains(err.Error(), "root-level statement 0") {
				t.Fatalf("got %v, %v; want an error on root-level statement 0", p, err)
			}
		})
	}
}
