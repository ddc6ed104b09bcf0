package cudabench

import (
	"testing"
)

func TestMedianIQR(t *testing.T) {
	m, s := medianIQR([]float64{5, 1, 3, 2, 4})
	if m != 3 || s != 2 {
		t.Fatalf("median %g, IQR %g; want 3, 2", m, s)
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
