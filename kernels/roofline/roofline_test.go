package roofline_test

import (
	"math"
	"testing"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/roofline"
	"dragonx/kernels/workload"
)

// A device with round figures: 10 SMs x 50 lanes x 2 FLOPs x 1 GHz = 1e12
// FLOP/s, 1e11 B/s.
var round = gpumodel.Device{Target: "round", SMs: 10, FP32LanesPerSM: 50, ClockHz: 1e9, DRAMBytesPerSec: 1e11}

func TestOfAndTime(t *testing.T) {
	cases := []struct {
		name, spec   string
		flops, bytes float64
		binds        string
	}{
		// C[i,j] += A[i,k]*B[k,j]: 2 x 512^3; A, B, C: 3 x 512^2 x 4 bytes.
		{"gemm", `{"family":"MATMUL","N":512,"M":512,"K":512}`, 2 * 512 * 512 * 512, 3 * 512 * 512 * 4, "compute"},
		// PadInput: 10x10x4 if_then_else (1 each) = 400; conv: 8x8x8 =
		// 512 outputs x 3x3x4 reduce x 2 = 36864. inputs 256 + weight
		// 288 + output 512 elements x 4 bytes.
		{"conv", `{"family":"C2D","N":1,"H":8,"W":8,"CI":4,"CO":8,"k":3,"s":1,"p":1}`, 400 + 36864, (256 + 288 + 512) * 4, "memory"},
		// 32 elements: max 1, exp(a - m) 2, sum 1, divide 1. A and the
		// output: 2 x 32 x 4 bytes.
		{"softmax", `{"family":"SFM","M":4,"N":8}`, 32 * 5, 2 * 32 * 4, "memory"},
		// float16 halves the bytes, not the FLOPs.
		{"gemm fp16", `{"family":"MATMUL","N":64,"M":64,"K":64,"dtype":"float16"}`, 2 * 64 * 64 * 64, 3 * 64 * 64 * 2, "compute"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := workload.Build([]byte(c.spec))
			if err != nil {
				t.Fatal(err)
			}
			w, err := roofline.Of(f)
			if err != nil {
				t.Fatal(err)
			}
			if w.FLOPs != c.flops || w.Bytes != c.bytes {
				t.Fatalf("work = %+v, want FLOPs %g, bytes %g", w, c.flops, c.bytes)
			}
			b, err := roofline.Time(w, &round)
			if err != nil {
				t.Fatal(err)
			}
			if b.Compute != c.flops/1e12 || b.Memory != c.bytes/1e11 || b.Binds != c.binds || b.Seconds != max(b.Compute, b.Memory) {
				t.Fatalf("bound = %+v, want compute %g, memory %g, %s", b, c.flops/1e12, c.bytes/1e11, c.binds)
			}
		})
	}
}

// The H100 of the device table: 132 x 128 x 2 x 1.98 GHz = 66.9 TFLOP/s and
// 3.35 TB/s, so a 4096^3 GEMM (137 GFLOP, 201 MB) takes 2.054 ms at the
// compute peak.
func TestH100(t *testing.T) {
	d, err := gpumodel.LookupDevice("h100-model")
	if err != nil {
		t.Fatal(err)
	}
	n := 4096.0
	b, err := roofline.Time(roofline.Work{FLOPs: 2 * n * n * n, Bytes: 3 * n * n * 4}, &d)
	if err != nil {
		t.Fatal(err)
	}
	want := 2 * n * n * n / (132 * 128 * 2 * 1.98e9)
	if math.Abs(b.Seconds-want) > 1e-12 || b.Binds != "compute" {
		t.Fatalf("bound = %+v, want %g s, compute", b, want)
	}
	fr, err := roofline.Fraction(b.Seconds, 4e-3)
	if err != nil || math.Abs(fr-want/4e-3) > 1e-12 {
		t.Fatalf("fraction = %g, %v, want %g", fr, err, want/4e-3)
	}
}

func TestRefuses(t *testing.T) {
	if _, err := roofline.Time(roofline.Work{FLOPs: 1, Bytes: 1}, &gpumodel.Device{Target: "empty"}); err == nil {
		t.Error("a device without peaks gave a roofline time")
	}
	for _, lat := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := roofline.Fraction(1e-6, lat); err == nil {
			t.Errorf("latency %g gave a fraction", lat)
		}
	}
	if _, err := roofline.Fraction(math.NaN(), 1); err == nil {
		t.Error("a NaN roofline time gave a fraction")
	}
	if _, err := roofline.Of(nil); err == nil {
		t.Error("Of(nil) succeeded")
	}
}
