package verdict_test

import (
	"context"
	"testing"

	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
)

// benchmarkStatic measures the static verdict (replay, the CUDA
// postprocessors, VerifyGPUCode) of a sketch given as JSON: "bytes" is
// Check from the spec and the trace's bytes (the workload is built each
// time), "built" is CheckTrace on a workload built once, the trace parsed
// each time (what search and RL do for one workload).
func benchmarkStatic(b *testing.B, spec, data []byte) {
	ctx := context.Background()
	if v := verdict.Check(ctx, spec, data, verdict.Options{}); !v.OK {
		b.Fatal(string(v.JSON()))
	}
	b.Run("bytes", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if v := verdict.Check(ctx, spec, data, verdict.Options{}); !v.OK {
				b.Fatal(string(v.JSON()))
			}
		}
	})
	b.Run("built", func(b *testing.B) {
		f := workloadOf(b, spec)
		b.ReportAllocs()
		for b.Loop() {
			tr, err := trace.Parse(data)
			if err != nil {
				b.Fatal(err)
			}
			if v := verdict.CheckTrace(ctx, f, tr, verdict.Options{}); !v.OK {
				b.Fatal(string(v.JSON()))
			}
		}
	})
}

// BenchmarkCheckStaticDense: the reference dense trace (cuda-dense-nt-128)
// without its postprocessors' part (35 instructions; 58 after them).
func BenchmarkCheckStaticDense(b *testing.B) {
	spec, sketch, _ := denseSketch(b)
	benchmarkStatic(b, spec, sketch.AppendJSON(nil))
}

// BenchmarkCheckStaticC2D: the C2D (1,56,56,64,64,3,1,1),
// testdata/c2d-1x56x56x64-64-k3s1p1 (45 instructions; 68 after the
// postprocessors).
func BenchmarkCheckStaticC2D(b *testing.B) {
	spec, data := readCase(b, c2dCase)
	benchmarkStatic(b, spec, data)
}
