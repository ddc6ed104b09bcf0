package ptxas_test

import (
	"context"
	"flag"
	"testing"

	"dragonx/kernels/cudagen"
	"dragonx/kernels/lower"
	"dragonx/kernels/sample"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

var samples = flag.Int("samples", 2, "sampled traces per family compiled by TestSampledFamilies (more: go test -run TestSampledFamilies -samples 20 ./kernels/ptxas)")

// A kernel is expected not to spill when its local arrays fit
// spillFreeLocalBytes (128 floats, half the 255 registers a thread may
// hold, the rest left for indices, operands and addresses) and the
// auto-unroll rule unrolled at most spillFreeUnrolled steps into one body.
// Beyond either, spills are what ptxas does with such a schedule on a GPU
// too (seen: GRP and CAP draws unrolled 512 steps spill with 256 B of
// local arrays), not a generator error: they are logged.
const (
	spillFreeLocalBytes = 512
	spillFreeUnrolled   = 64
)

// TestSampledFamilies draws traces of every benchmark family (its first
// benchmark shape, seeds 1, 2, ... until -samples draws are accepted) with kernels/sample, lowers them, generates
// their CUDA and compiles it for sm_90: a compile error fails, and so does
// a spill where none is expected (see spillFreeLocalBytes).
func TestSampledFamilies(t *testing.T) {
	c := compiler(t, t.TempDir())
	ctx := context.Background()
	for _, fam := range workload.Families()[:13] {
		t.Run(fam.Name, func(t *testing.T) {
			t.Parallel() // nvcc runs on one core
			spec, err := workload.BenchmarkSpec(fam.Name, 0)
			if err != nil {
				t.Fatal(err)
			}
			f, err := spec.Build()
			if err != nil {
				t.Fatal(err)
			}
			// Most draws are rejected (VerifyGPUCode): draw batches of 32
			// with seeds 1, 2, ... until enough are accepted.
			var draws []*sample.Sample
			for seed, ok := int64(1), 0; seed <= 16 && ok < *samples; seed++ {
				ds, err := sample.DrawSpec(ctx, spec, seed, 32, sample.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range ds {
					if d.OK() {
						ok++
					}
				}
				draws = append(draws, ds...)
			}
			n := 0
			for _, d := range draws {
				if !d.OK() || n == *samples {
					continue
				}
				n++
				s, err := trace.Replay(ctx, f, d.Trace, trace.Options{})
				if err != nil {
					t.Fatalf("draw %d (seed %d): replay: %v", d.Index, d.Seed, err)
				}
				p, err := lower.Lower(ctx, s.Func())
				if err != nil {
					t.Logf("draw %d: not lowered: %v", d.Index, err)
					continue
				}
				gen, err := cudagen.Generate(p)
				if err != nil {
					t.Fatalf("draw %d: %v", d.Index, err)
				}
				r, err := c.Compile(ctx, gen.Code)
				if err != nil {
					t.Fatalf("draw %d (%s): %v", d.Index, spec, err)
				}
				for _, l := range gen.Launches {
					k, ok := r.Kernel(l.Kernel)
					if !ok {
						t.Fatalf("draw %d: no report for %s", d.Index, l.Kernel)
					}
					if k.Spills() && l.LocalBytes <= spillFreeLocalBytes && l.UnrolledSteps <= spillFreeUnrolled {
						t.Errorf("draw %d: %s spills with %d B of local arrays: %+v", d.Index, l.Kernel, l.LocalBytes, k)
					}
					t.Logf("draw %d %s: grid %v block %v local %d B, unrolled %d: %d registers, %d B smem, spills %d/%d, stack %d", d.Index, l.Kernel, l.Grid, l.Block, l.LocalBytes, l.UnrolledSteps, k.Registers, k.SharedBytes, k.SpillStores, k.SpillLoads, k.StackBytes)
				}
			}
			if n == 0 {
				t.Fatalf("no accepted draw of %s in %d", spec, len(draws))
			}
		})
	}
}
