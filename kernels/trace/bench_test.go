package trace_test

import (
	"context"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
)

// benchmarkParseReplay parses and replays a trace given as JSON on f, the
// work one verdict of the RL loop or of harvest starts with.
func benchmarkParseReplay(b *testing.B, data []byte, f *ir.PrimFunc) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tr, err := trace.Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := trace.Replay(ctx, f, tr, trace.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplayDense parses and replays the reference dense trace
// (cuda-dense-nt-128: 64 instructions, the postprocessors' included) on
// its workload.
func BenchmarkReplayDense(b *testing.B) {
	_, data := readTrace(b, "cuda-dense-nt-128")
	benchmarkParseReplay(b, data, buildWorkload(b, "cuda-dense-nt-128"))
}

// BenchmarkReplayC2D parses and replays a C2D trace of the same structure
// as the dense one: the C2D sketch of tvm-traces (45 instructions) extended
// with the postprocessors' instructions (cooperative fetch, unroll
// pragmas, decomposition of the reduction), 74 instructions in all.
func BenchmarkReplayC2D(b *testing.B) {
	const name = "cuda-sketch-c2d-1x224x224x3-64-k7s2p3"
	s := replay(b, name, trace.Options{})
	appendPostproc(b, s, "conv2d_nhwc")
	data := s.Trace().AppendJSON(nil)
	benchmarkParseReplay(b, data, buildWorkload(b, name))
}

// BenchmarkParseDense parses the reference dense trace alone.
func BenchmarkParseDense(b *testing.B) {
	_, data := readTrace(b, "cuda-dense-nt-128")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := trace.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplayDenseParsed replays the reference dense trace, parsed
// once.
func BenchmarkReplayDenseParsed(b *testing.B) {
	tr, _ := readTrace(b, "cuda-dense-nt-128")
	f := buildWorkload(b, "cuda-dense-nt-128")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := trace.Replay(ctx, f, tr, trace.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
