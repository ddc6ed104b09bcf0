//go:build torch

package torchrt

import (
	"runtime"
	"slices"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// The settings are per OS thread: each test locks its goroutine to one.

func TestThreadSettings(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if !MallocTuned() {
		t.Error("MallocTuned() = false: the load-time malloc settings did not apply")
	}
	if !FlushDenormals() || !DenormalsFlushed() {
		t.Error("denormals are not flushed after FlushDenormals")
	}
	for _, n := range []int{1, 2} {
		SetThreads(n)
		if got := Threads(); got != n {
			t.Errorf("SetThreads(%d); Threads() = %d", n, got)
		}
	}
	SetGradEnabled(true)
	if prev := SetGradEnabled(false); !prev || GradEnabled() {
		t.Errorf("SetGradEnabled(false) returned %v, GradEnabled() = %v; want true, false", prev, GradEnabled())
	}
	if prev := SetGradEnabled(true); prev || !GradEnabled() {
		t.Errorf("SetGradEnabled(true) returned %v, GradEnabled() = %v; want false, true", prev, GradEnabled())
	}
	if v := Version(); v == "" {
		t.Error("empty libtorch version")
	}
}

func randn(t *testing.T) []float32 {
	t.Helper()
	x, err := ts.Randn([]int64{8}, gotch.Float, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Drop()
	v := make([]float32, 8)
	if err := x.CopyData(v, 8); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRNGState(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ManualSeed(42)
	a := randn(t)
	ManualSeed(42)
	if b := randn(t); !slices.Equal(a, b) {
		t.Errorf("ManualSeed(42) twice gave %v and %v", a, b)
	}
	st, err := RNGState()
	if err != nil {
		t.Fatal(err)
	}
	want := randn(t)
	randn(t)
	if err := SetRNGState(st); err != nil {
		t.Fatal(err)
	}
	if got := randn(t); !slices.Equal(got, want) {
		t.Errorf("after SetRNGState: %v; want %v", got, want)
	}
	if err := SetRNGState([]byte{1, 2, 3}); err == nil {
		t.Error("SetRNGState accepted a 3-byte state")
	}
	if err := SetRNGState(nil); err == nil {
		t.Error("SetRNGState accepted an empty state")
	}
}
