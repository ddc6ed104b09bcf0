package numeric_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"dragonx/kernels/numeric"
)

// breakCache replaces the cache directory with a file: nothing can be
// compiled, stored or read there any more, so a check that has to run
// anything fails.
func breakCache(t *testing.T, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRepeatedCheck: a gate checks each kernel source once; a second check
// of the same program (a pass or a failure) returns the first one's
// outcome without running anything.
func TestRepeatedCheck(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir() + "/cache"
	g := gate(t, numeric.Options{CacheDir: dir})
	good := loadCase(t, denseCase)
	res, err := g.Check(ctx, good.Workload, good.Program)
	if err != nil {
		t.Fatal(err)
	}
	if res.Repeated {
		t.Fatalf("first check marked repeated: %+v", res)
	}
	bad := loadCase(t, denseCase)
	if _, err := dropBarrier(1)(bad.Program); err != nil {
		t.Fatal(err)
	}
	_, badErr := g.Check(ctx, bad.Workload, bad.Program)
	var ge *numeric.Error
	if !errors.As(badErr, &ge) || ge.Kind != numeric.KindRace {
		t.Fatalf("mutated program: %v, want a race", badErr)
	}

	breakCache(t, dir)
	// Another gate on the broken directory cannot check anything: what
	// follows really comes from g's memory.
	if _, err := gate(t, numeric.Options{CacheDir: dir}).Check(ctx, good.Workload, good.Program); err == nil {
		t.Fatal("a fresh gate checked a program without a cache directory")
	}
	again := loadCase(t, denseCase) // the same program, built again
	res2, err := g.Check(ctx, again.Workload, again.Program)
	if err != nil {
		t.Fatalf("repeated check: %v", err)
	}
	if !res2.Repeated || res2.MaxAbsErr != res.MaxAbsErr || res2.MaxRelErr != res.MaxRelErr || res2.Compared != res.Compared {
		t.Errorf("repeated check %+v, first %+v", res2, res)
	}
	if res.Repeated {
		t.Error("the repeated check changed the first result")
	}
	_, err = g.Check(ctx, bad.Workload, bad.Program)
	if err == nil || err.Error() != badErr.Error() {
		t.Errorf("repeated failing check: %v, first %v", err, badErr)
	}
}

// TestConcurrentSameCheck: checks of one program started together run it
// once; every caller gets the verdict.
func TestConcurrentSameCheck(t *testing.T) {
	c := loadCase(t, c2dCase)
	g := gate(t, numeric.Options{})
	results := make([]*numeric.Result, 4)
	errs := make([]error, len(results))
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i], errs[i] = g.Check(context.Background(), c.Workload, c.Program) })
	}
	wg.Wait()
	first := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("check %d: %v", i, errs[i])
		}
		if !r.Repeated {
			first++
		}
		if r.MaxAbsErr != results[0].MaxAbsErr {
			t.Errorf("check %d: %+v, check 0: %+v", i, r, results[0])
		}
	}
	if first != 1 {
		t.Errorf("%d checks ran the program, want 1", first)
	}
}

// TestCancelledFirstCheckLeavesGateWorking: a gate whose first check comes
// with a context already ended (the compiler's probe cannot run) reports the
// context's error, not the compiler's, and the next check finds the compiler:
// one early deadline on a busy machine does not break the gate for good.
func TestCancelledFirstCheckLeavesGateWorking(t *testing.T) {
	c := loadCase(t, c2dCase)
	g := gate(t, numeric.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Check(ctx, c.Workload, c.Program); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's cancellation", err)
	}
	if _, err := g.Check(context.Background(), c.Workload, c.Program); err != nil {
		t.Fatalf("the check after a cancelled first one: %v", err)
	}
}

// TestCancelledCheckNotRemembered: a check cut short by its context is not
// a verdict; the next check of the program runs it.
func TestCancelledCheckNotRemembered(t *testing.T) {
	c := loadCase(t, c2dCase)
	g := gate(t, numeric.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := g.Check(ctx, c.Workload, c.Program); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
	res, err := g.Check(context.Background(), c.Workload, c.Program)
	if err != nil {
		t.Fatal(err)
	}
	if res.Repeated {
		t.Errorf("the check after a cancelled one was not run: %+v", res)
	}
}
