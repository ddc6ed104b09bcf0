package numeric

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestMemo(t *testing.T) {
	ctx := context.Background()
	var m memo[int]
	var runs atomic.Int32
	errBad := errors.New("no verdict")
	keep := func(_ int, err error) bool { return err == nil }

	// Concurrent callers share one run.
	release := make(chan struct{})
	var wg sync.WaitGroup
	shared := make([]bool, 5)
	vals := make([]int, 5)
	for i := range shared {
		wg.Go(func() {
			vals[i], shared[i], _ = m.do(ctx, "a", func() (int, error) { runs.Add(1); <-release; return 7, nil }, keep)
		})
	}
	for runs.Load() == 0 {
	}
	close(release)
	wg.Wait()
	if runs.Load() != 1 {
		t.Errorf("%d runs, want 1", runs.Load())
	}
	n := 0
	for i := range shared {
		if vals[i] != 7 {
			t.Errorf("caller %d got %d", i, vals[i])
		}
		if !shared[i] {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d callers ran it, want 1", n)
	}
	// A kept result is returned later without running.
	if v, sh, _ := m.do(ctx, "a", func() (int, error) { runs.Add(1); return 8, nil }, keep); v != 7 || !sh || runs.Load() != 1 {
		t.Errorf("later call: %d shared %v, %d runs", v, sh, runs.Load())
	}
	// A result not kept is not remembered.
	if _, _, err := m.do(ctx, "b", func() (int, error) { return 0, errBad }, keep); err != errBad {
		t.Fatal(err)
	}
	if v, sh, err := m.do(ctx, "b", func() (int, error) { return 9, nil }, keep); v != 9 || sh || err != nil {
		t.Errorf("after a result not kept: %d shared %v %v", v, sh, err)
	}
	// A waiter whose context ends stops waiting.
	started, stop := make(chan struct{}), make(chan struct{})
	go m.do(ctx, "c", func() (int, error) { close(started); <-stop; return 1, nil }, keep)
	<-started
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := m.do(cctx, "c", func() (int, error) { t.Error("ran while another call runs"); return 0, nil }, keep); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: %v", err)
	}
	close(stop)
}
