package cudabench

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"dragonx/kernels/ir"
)

func TestMedianIQR(t *testing.T) {
	m, s := medianIQR([]float64{5, 1, 3, 2, 4})
	if m != 3 || s != 2 {
		t.Fatalf("median %g, IQR %g; want 3, 2", m, s)
	}
}

// TestCompare: within tolerance passes with its errors; beyond it, or a
// NaN, is ErrMismatch naming the element.
func TestCompare(t *testing.T) {
	a := ir.NewBuffer("A", ir.Float32, []int64{2}, "global")
	b := ir.NewBuffer("B", ir.Float32, []int64{2}, "global")
	f := ir.NewPrimFunc("f", []*ir.Buffer{a, b}, nil, nil)
	ref := binary.NativeEndian.AppendUint64(nil, math.Float64bits(1))
	ref = binary.NativeEndian.AppendUint64(ref, math.Float64bits(-2))
	gpu := func(x, y float32) []byte {
		g := binary.NativeEndian.AppendUint32(nil, math.Float32bits(x))
		return binary.NativeEndian.AppendUint32(g, math.Float32bits(y))
	}
	outs := []bool{false, true}
	if abs, _, err := compare(f, outs, gpu(1.0005, -2), ref, 1e-3, 2e-3); err != nil || math.Abs(abs-0.0005) > 1e-6 {
		t.Fatalf("within tolerance: %g, %v", abs, err)
	}
	for _, g := range [][]byte{gpu(1.1, -2), gpu(1, float32(math.NaN()))} {
		if _, _, err := compare(f, outs, g, ref, 1e-3, 2e-3); !errors.Is(err, ErrMismatch) {
			t.Fatalf("got %v, want ErrMismatch", err)
		}
	}
}

func TestParseRun(t *testing.T) {
	dev, times, err := parseRun([]byte("device NVIDIA H200\ntime_ms 0.5\ntime_ms 0.25\n"), 2)
	if err != nil || dev != "NVIDIA H200" || len(times) != 2 || times[0] != 0.5e-3 || times[1] != 0.25e-3 {
		t.Fatalf("got %q %v %v", dev, times, err)
	}
	for _, bad := range []string{"device X\ntime_ms 0.5\n", "time_ms x\ntime_ms 1\n", "time_ms -1\ntime_ms 1\n"} {
		if _, _, err := parseRun([]byte(bad), 2); err == nil {
			t.Errorf("parseRun(%q) passed", bad)
		}
	}
}
