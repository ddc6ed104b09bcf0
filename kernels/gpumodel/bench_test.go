package gpumodel_test

import (
	"context"
	"os"
	"testing"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/lower"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

// The targets (per core: go test -run '^$' -bench Estimate -cpu 1
// ./kernels/gpumodel): ≥ 100,000 estimates per second on lowered kernels
// (BenchmarkEstimate: lowering excluded) and ≥ 5,000 per second for trace
// → replay → postprocessors → lowering → estimate (BenchmarkEstimateTrace:
// one search trial). docs/gpu-model.md records the figures.

var benchCases = []struct{ name, spec, trace string }{
	{"dense-nt-128", "../trace/testdata/tvm-traces/cuda-dense-nt-128/workload.json", "../trace/testdata/tvm-traces/cuda-dense-nt-128/trace.json"},
	{"c2d", "../verdict/testdata/c2d-1x56x56x64-64-k3s1p1/workload.json", "../verdict/testdata/c2d-1x56x56x64-64-k3s1p1/trace.json"},
	{"gmm-tiled-1024", "", "testdata/gmm-tiled-1024.json"},
}

func benchInputs(b *testing.B, i int) (spec, tr []byte) {
	c := benchCases[i]
	var err error
	spec = []byte(gmm(1024))
	if c.spec != "" {
		if spec, err = os.ReadFile(c.spec); err != nil {
			b.Fatal(err)
		}
	}
	if tr, err = os.ReadFile(c.trace); err != nil {
		b.Fatal(err)
	}
	return spec, tr
}

func BenchmarkEstimate(b *testing.B) {
	m, err := gpumodel.New("h100-model", gpumodel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i, c := range benchCases {
		spec, tr := benchInputs(b, i)
		p := lowered(b, string(spec), tr)
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Latency(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "estimates/s")
		})
	}
}

func BenchmarkEstimateTrace(b *testing.B) {
	m, err := gpumodel.New("h100-model", gpumodel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i, c := range benchCases {
		spec, tr := benchInputs(b, i)
		f, err := workload.Build(spec)
		if err != nil {
			b.Fatal(err)
		}
		t, err := trace.Parse(tr)
		if err != nil {
			b.Fatal(err)
		}
		opts := verdict.Options{}
		if v := verdict.CheckTrace(context.Background(), f, t, opts); !v.OK {
			opts.Until = verdict.PhaseReplay // a full trace of an older TVM: replayed literally
		}
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				v := verdict.CheckTrace(ctx, f, t, opts)
				if !v.OK {
					b.Fatal(v.Error)
				}
				p, err := lower.Lower(ctx, v.Func())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := m.Latency(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "trials/s")
		})
	}
}
