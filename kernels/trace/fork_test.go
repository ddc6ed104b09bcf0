package trace_test

import (
	"context"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/schedule"
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

// TestReplayRFactor replays an RFactor instruction in TVM's layout
// (inputs [loop], attrs [factor_axis], outputs [block]) on the dense
// workload: the rfactor block and buffer appear, the block's RV names the
// write-back block, and the trace round-trips through JSON and prints as
// TVM's Python.
func TestReplayRFactor(t *testing.T) {
	const src = `[[["GetBlock",[],["T_matmul_NT","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2","l3"]],` +
		`["Split",["l3",4,32],[1,0],["l4","l5"]],["RFactor",["l5"],[0],["b6"]],["GetLoops",["b0"],[],["l7","l8","l9"]]],[]]`
	tr, err := trace.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	f := buildWorkload(t, "cuda-dense-nt-128")
	s, err := trace.Replay(context.Background(), f, tr, trace.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	out := s.Func().Script()
	for _, want := range []string{`T.block("T_matmul_NT_rf")`, `T_matmul_NT_rf = T.alloc_buffer((32, 128, 128))`, `T.block("T_matmul_NT")`} {
		if !strings.Contains(out, want) {
			t.Errorf("replayed IR lacks %s:\n%s", want, out)
		}
	}
	if got := s.Trace().String(); got != src {
		t.Errorf("trace round trip:\n%s\nwant\n%s", got, src)
	}
	if py := s.Trace().Python(); !strings.Contains(py, "b6 = sch.rfactor(l5, 0)") {
		t.Errorf("Python:\n%s", py)
	}
	// The write-back block under b0 keeps i, j and the rfactor loop.
	rv, _ := s.Lookup("l9")
	l, err := s.Schedule().GetLoopOf(rv.(schedule.LoopRV))
	if err != nil || !loopHasExtent(l, 32) {
		t.Errorf("innermost loop of the write-back block: %v, %v", l, err)
	}
	bad := strings.Replace(src, `["RFactor",["l5"],[0],["b6"]]`, `["RFactor",["l5"],[4],["b6"]]`, 1)
	tr, _ = trace.Parse([]byte(bad))
	if _, err := trace.Replay(context.Background(), f, tr, trace.Options{}); err == nil || !strings.Contains(err.Error(), "inst 3 RFactor") || !strings.Contains(err.Error(), "factor_axis 4 is out of range") {
		t.Errorf("bad factor_axis: %v", err)
	}
}

func loopHasExtent(l *ir.For, n int64) bool {
	got, ok := l.ConstExtent()
	return ok && got == n
}
