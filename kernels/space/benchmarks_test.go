package space_test

import (
	"context"
	"testing"

	"dragonx/kernels/space"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// TestGenerateBenchmarks generates the design space of CUDARules for
// every benchmark shape under a few seeds: each sketch's trace replays
// strictly to it, and every sampled tile keeps its innermost factor within
// 64.
func TestGenerateBenchmarks(t *testing.T) {
	ctx := context.Background()
	for _, b := range workload.Benchmarks() {
		f, err := b.Spec.Build()
		if err != nil {
			t.Fatalf("%s: %v", b.Name(), err)
		}
		for seed := int64(1); seed <= 4; seed++ {
			got, err := space.Generate(ctx, f, space.CUDARules(), trace.Options{Seed: seed})
			if err != nil {
				t.Errorf("%s seed %d: %v", b.Name(), seed, err)
				continue
			}
			for _, s := range got {
				tr := s.Trace()
				r, err := trace.Replay(ctx, f, tr, trace.Options{Check: true})
				if err != nil {
					t.Errorf("%s seed %d: replay: %v", b.Name(), seed, err)
					continue
				}
				if r.Func().Script() != s.Func().Script() {
					t.Errorf("%s seed %d: the trace replays to another function", b.Name(), seed)
				}
				for i, in := range tr.Insts {
					if in.Kind != "SamplePerfectTile" {
						continue
					}
					d, ok := tr.Decision(i)
					if !ok || len(d.Array) == 0 || d.Array[len(d.Array)-1].Int > 64 {
						t.Errorf("%s seed %d: SamplePerfectTile %d decided %v", b.Name(), seed, i, d)
					}
				}
			}
		}
	}
}
