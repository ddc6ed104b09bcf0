package gpumodel_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/sample"
	"dragonx/kernels/workload"
)

// syntheticSamples draws schedules of several families and times them
// with a model whose constants are perturbed, times a seeded lognormal
// noise: SYNTHETIC data, made by the model itself (no GPU timings exist
// yet), to check that Fit recovers constants it can recover.
func syntheticSamples(t testing.TB, truth gpumodel.Params, noise float64) []gpumodel.Sample {
	t.Helper()
	ctx := context.Background()
	tm, err := gpumodel.New("h200-model", gpumodel.Options{Params: &truth})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var out []gpumodel.Sample
	for _, s := range []string{
		`{"family":"GMM","B":1,"N":512,"M":512,"K":512}`,
		`{"family":"C2D","N":1,"H":28,"W":28,"CI":64,"CO":64,"k":3,"s":1,"p":1}`,
		`{"family":"NRM","B":1,"M":1024,"N":1024}`,
		`{"family":"SFM","M":1024,"N":1024}`,
	} {
		spec, err := workload.ParseString(s)
		if err != nil {
			t.Fatal(err)
		}
		draws, err := sample.DrawSpec(ctx, spec, 11, 16, sample.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range draws {
			if !d.OK() {
				continue
			}
			data, _ := d.Trace.MarshalJSON()
			a, err := gpumodel.Analyze(ctx, lowered(t, s, data))
			if err != nil {
				t.Fatal(err)
			}
			r, err := tm.Cost(a)
			if err != nil {
				continue
			}
			out = append(out, gpumodel.Sample{Name: s, Analysis: a, Seconds: r.Seconds * math.Exp(noise*rng.NormFloat64())})
		}
	}
	return out
}

func TestFitSynthetic(t *testing.T) {
	truth := gpumodel.DefaultParams()
	truth.LaunchSeconds = 7e-6
	truth.DRAMEfficiency = 0.6
	truth.IssueHide = 7
	truth.MemLatencyCycles = 1000
	truth.Overlap = 0.3
	samples := syntheticSamples(t, truth, 0.03)
	if len(samples) < 30 {
		t.Fatalf("only %d synthetic samples", len(samples))
	}
	m := model(t, "h200-model")
	res, err := m.Fit(samples, gpumodel.FitOptions{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d train, %d held out, %d evaluations", len(res.Train), len(res.Test), res.Evaluations)
	t.Logf("held out before: %+v", res.Before)
	t.Logf("held out after:  %+v", res.After)
	t.Logf("fitted %+v", res.Params)
	if !(res.After.MedianRelErr < res.Before.MedianRelErr/2) || res.After.MedianRelErr > 0.1 {
		t.Errorf("held-out median relative error %.3g before, %.3g after: want at least halved and under 0.1", res.Before.MedianRelErr, res.After.MedianRelErr)
	}
	if res.After.Spearman < res.Before.Spearman || res.After.Kendall < res.Before.Kendall-0.01 {
		t.Errorf("held-out ranking got worse: Spearman %.3f -> %.3f, Kendall %.3f -> %.3f", res.Before.Spearman, res.After.Spearman, res.Before.Kendall, res.After.Kendall)
	}
	// Deterministic: the same seed gives the same fit.
	again, err := m.Fit(samples, gpumodel.FitOptions{Seed: 5})
	if err != nil || again.Params != res.Params {
		t.Errorf("refit differs: %v %+v", err, again.Params)
	}
	if _, err := m.Fit(samples[:5], gpumodel.FitOptions{}); err == nil {
		t.Error("5 samples accepted for 8 constants")
	}
	if _, err := m.Fit(samples, gpumodel.FitOptions{Fit: []string{"warp_size"}}); err == nil {
		t.Error("unknown constant accepted")
	}
}
