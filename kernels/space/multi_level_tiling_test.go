package space_test

import (
	"context"
	"testing"

	"dragonx/kernels/space"
	"dragonx/kernels/trace"
)

// TestMultiLevelTilingForks: a write cache at two levels forks two
// sketches (TVM's AddWriteReuse copies the state per level), in the order
// of the levels, each with its own ReverseComputeAt loop and its own
// generator, and each replaying to itself.
func TestMultiLevelTilingForks(t *testing.T) {
	f := buildWorkload(t, "testdata/tvm/mlt-cuda-matmul/before.json")
	m := space.MultiLevelTilingCUDA()
	m.ReuseWrite.Levels = []int{2, 3}
	ctx := context.Background()
	got, err := space.Generate(ctx, f, []space.Rule{m}, trace.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d sketches, want 2", len(got))
	}
	var at [2]string
	for i, s := range got {
		for _, in := range s.Trace().Insts {
			if in.Kind == "ReverseComputeAt" {
				at[i] = in.Inputs[1].Str
			}
		}
		r, err := trace.Replay(ctx, f, s.Trace(), trace.Options{Check: true})
		if err != nil {
			t.Fatalf("sketch %d: replay: %v", i, err)
		}
		if r.Func().Script() != s.Func().Script() {
			t.Errorf("sketch %d: the trace replays to another function", i)
		}
	}
	// PostOrderApply's stack returns the last pushed state first: the
	// level-3 sketch, then the level-2 one. The level-2 tile is the
	// vthread.x loop, the level-3 tile the threadIdx.x loop.
	vthread, thread := fusedBoundTo(t, got[1], "vthread.x"), fusedBoundTo(t, got[0], "threadIdx.x")
	if at[1] != vthread || at[0] != thread {
		t.Errorf("write caches at %q, %q; want %q (threadIdx.x) then %q (vthread.x)", at[0], at[1], thread, vthread)
	}
	if got[0].Schedule().Rand().State() == got[1].Schedule().Rand().State() {
		t.Error("the two sketches share their generator's state")
	}
}

// fusedBoundTo returns the loop that s's trace binds to tag.
func fusedBoundTo(t *testing.T, s *trace.Session, tag string) string {
	t.Helper()
	for _, in := range s.Trace().Insts {
		if in.Kind == "Bind" && in.Attrs[0].Str == tag {
			return in.Inputs[0].Str
		}
	}
	t.Fatalf("no loop bound to %s", tag)
	return ""
}
