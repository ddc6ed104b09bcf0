package lower_test

import (
	"context"
	"path/filepath"
	"testing"

	"dragonx/kernels/lower"
	"dragonx/kernels/postproc"
)

// TestLowerEveryCUDATrace lowers every CUDA trace and sketch of the
// repository's testdata that the rewriting postprocessors accept: each
// lowers without error, every allocation has a positive size, and where
// VerifyGPUCode accepts the function too each kernel's threads and shared
// bytes are within postproc.CUDALimits().
func TestLowerEveryCUDATrace(t *testing.T) {
	lim := postproc.CUDALimits()
	lowered := 0
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
			lowered++
			t.Logf("%d kernels, first: %d threads, %d B shared", len(p.Kernels), p.Kernels[0].Threads(), p.Kernels[0].SharedBytes())
		})
	}
	if lowered == 0 {
		t.Error("no case lowered")
	}
}
