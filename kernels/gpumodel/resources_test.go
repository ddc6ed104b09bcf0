package gpumodel_test

import (
	"context"
	"errors"
	"testing"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/ptxas"
)

// TestPtxasResources: with ptxas's figures the label says so and the
// registers costed are ptxas's (skipped where nvcc is not installed).
func TestPtxasResources(t *testing.T) {
	ctx := context.Background()
	c, err := ptxas.New(ctx, ptxas.Options{CacheDir: t.TempDir()})
	if errors.Is(err, ptxas.ErrNoNVCC) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := gpumodel.New("h100-model", gpumodel.Options{Resources: gpumodel.Ptxas(c)})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"gmm-tiled-1024.json", "gmm-naive.json"} {
		p := loweredFile(t, gmm(1024), testdata(f))
		est, err := m.Latency(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if est.Source != "model:h100+ptxas" || !(est.Seconds > 0) {
			t.Errorf("%s: %+v", f, est)
		}
		ks, err := c.CompileProgram(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := m.Report(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if r.Kernels[0].Registers != int64(ks[0].Registers) {
			t.Errorf("%s: costed %d registers, ptxas reports %d", f, r.Kernels[0].Registers, ks[0].Registers)
		}
		own := report(t, model(t, "h100-model"), p)
		t.Logf("%s: registers: model %d, ptxas %d; latency %.3g s (model), %.3g s (+ptxas)", f, own.Kernels[0].Registers, ks[0].Registers, own.Seconds, est.Seconds)
	}
}
