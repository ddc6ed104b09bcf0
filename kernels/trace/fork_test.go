package trace_test

import (
	"context"
	"testing"

	"dragonx/kernels/trace"
)

// TestSessionFork forks the replayed C2D sketch, extends the fork with the
// postprocessors' instructions and checks that the original's printed IR
// and trace did not change, that the fork equals a fresh replay of the
// extended trace, and that the original, extended in turn, leaves the fork
// as it was.
func TestSessionFork(t *testing.T) {
	const name = "cuda-sketch-c2d-1x224x224x3-64-k7s2p3"
	s := replay(t, name, trace.Options{})
	ir0, tr0 := s.Func().Script(), s.Trace().String()

	fk := s.Fork()
	if got := fk.Func().Script(); got != ir0 {
		t.Fatalf("fork prints differently from its original:\n%s", got)
	}
	appendPostproc(t, fk, "conv2d_nhwc")
	if got := s.Func().Script(); got != ir0 {
		t.Errorf("extending the fork changed the original's IR:\n%s", got)
	}
	if got := s.Trace().String(); got != tr0 {
		t.Errorf("extending the fork changed the original's trace:\n%s", got)
	}
	if fk.Trace().String() == tr0 || fk.Func().Script() == ir0 {
		t.Fatal("the fork did not change")
	}

	fresh, err := trace.Replay(context.Background(), buildWorkload(t, name), fk.Trace(), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Func().Script() != fk.Func().Script() {
		t.Errorf("the fork's IR differs from a fresh replay of its trace:\n%s\n---\n%s", fk.Func().Script(), fresh.Func().Script())
	}

	// RV names still work in the fork, and the original can now be
	// extended in the same way without touching the fork.
	if _, ok := fk.Lookup("b0"); !ok {
		t.Error("the fork lost the RV name b0")
	}
	ir1, tr1 := fk.Func().Script(), fk.Trace().String()
	appendPostproc(t, s, "conv2d_nhwc")
	if s.Func().Script() != ir1 || s.Trace().String() != tr1 {
		t.Error("the original, extended as the fork was, differs from it")
	}
	if fk.Func().Script() != ir1 || fk.Trace().String() != tr1 {
		t.Error("extending the original changed the fork")
	}
}

// BenchmarkForkC2D forks the replayed C2D sketch (45 instructions), what
// the design space does once per rule and sketch.
func BenchmarkForkC2D(b *testing.B) {
	s := replay(b, "cuda-sketch-c2d-1x224x224x3-64-k7s2p3", trace.Options{})
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Fork()
	}
}
