package numeric_test

import (
	"context"
	"testing"

	"dragonx/kernels/internal/gatecases"
	"dragonx/kernels/numeric"
)

// gmm1024 is the GMM (1, 1024, 1024, 1024) benchmark shape; its schedule
// is the first CUDA sketch with the decisions of seed gmmSeed (or the next
// seed that passes the postprocessors); gmmSlowSeed gives a slower one (8
// vthreads, 150 KB of local memory per thread).
const (
	gmm1024     = `{"family":"GMM","B":1,"N":1024,"M":1024,"K":1024}`
	gmmSeed     = 1
	gmmSlowSeed = 34
)

// BenchmarkCheck measures the gate on the two shapes, cold (empty
// cache: both compilations, the three runs) and warm (kernel binary and
// reference outputs cached: the two kernel runs). Run:
//
//	go test -run '^$' -bench Check -benchtime 3x ./kernels/numeric
func BenchmarkCheck(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		load func() (*gatecases.Case, error)
	}{
		{"C2D-1x56x56x64-64-k3s1p1", func() (*gatecases.Case, error) { return gatecases.Dir(ctx, c2dCase) }},
		{"GMM-1x1024x1024x1024", func() (*gatecases.Case, error) { return gatecases.Sampled(ctx, gmm1024, gmmSeed) }},
		{"GMM-1x1024x1024x1024-seed34", func() (*gatecases.Case, error) { return gatecases.Sampled(ctx, gmm1024, gmmSlowSeed) }},
	} {
		c, err := bc.load()
		if err != nil {
			b.Fatal(err)
		}
		k := c.Program.Kernels[0]
		b.Logf("%s: grid %v block %v, %d B shared", bc.name, k.Grid, k.Block, k.SharedBytes())
		b.Run(bc.name+"/cold", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				g := gate(b, numeric.Options{})
				b.StartTimer()
				res, err := g.Check(ctx, c.Workload, c.Program)
				if err != nil {
					b.Fatal(err)
				}
				if res.KernelCached || res.ReferenceCached {
					b.Fatal("cold check hit the cache")
				}
			}
		})
		b.Run(bc.name+"/warm", func(b *testing.B) {
			g := gate(b, numeric.Options{})
			if _, err := g.Check(ctx, c.Workload, c.Program); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				res, err := g.Check(ctx, c.Workload, c.Program)
				if err != nil {
					b.Fatal(err)
				}
				if !res.KernelCached || !res.ReferenceCached {
					b.Fatal("warm check missed the cache")
				}
			}
		})
	}
}
