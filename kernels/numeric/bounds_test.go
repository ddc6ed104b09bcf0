package numeric_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"dragonx/kernels/internal/gatecases"
	"dragonx/kernels/numeric"
)

// unscheduled returns the case of a GMM of size n with no schedule (the
// postprocessors' default binding: one thread per output element, each
// running the whole reduction).
func unscheduled(t testing.TB, n int) *gatecases.Case {
	t.Helper()
	spec := fmt.Appendf(nil, `{"family":"GMM","B":1,"N":%d,"M":%d,"K":%d}`, n, n, n)
	c, err := gatecases.Trace(context.Background(), "unscheduled", spec, []byte(`[[],[]]`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantKind(t *testing.T, err error, kind numeric.Kind, msg string) {
	t.Helper()
	var ge *numeric.Error
	if !errors.As(err, &ge) || ge.Kind != kind || !strings.Contains(ge.Msg, msg) {
		t.Fatalf("error %v; want a %s failure containing %q", err, kind, msg)
	}
}

// TestBoundsBeforeCompiling: a program whose steps or memory exceed the
// gate's bounds, or a workload whose parameters do, is refused with kind
// resources before anything is compiled or allocated (the gate has no
// compiler here: it would fail otherwise).
func TestBoundsBeforeCompiling(t *testing.T) {
	c := unscheduled(t, 64)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		opts numeric.Options
		msg  string
	}{
		{"steps", numeric.Options{MaxSteps: 64 * 64 * 64}, "steps (trip counts x threads x grid size), more than the gate's 2.62e+05"},
		{"memory", numeric.Options{MaxMemory: 40000}, "would allocate up to"},
		{"parameters", numeric.Options{MaxIOBytes: 3*64*64*4 - 1}, "more than the gate's 49151 bytes of inputs and outputs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.CC = "/nonexistent/cc"
			_, err := gate(t, tt.opts).Check(ctx, c.Workload, c.Program)
			wantKind(t, err, numeric.KindResources, tt.msg)
			if tt.name == "parameters" {
				_, err := gate(t, tt.opts).Reference(ctx, c.Workload)
				wantKind(t, err, numeric.KindResources, tt.msg)
			}
		})
	}
	// At the bounds, it compiles (and fails for want of a compiler).
	_, err := gate(t, numeric.Options{CC: "/nonexistent/cc", MaxIOBytes: 3 * 64 * 64 * 4}).Check(ctx, c.Workload, c.Program)
	var ge *numeric.Error
	if err == nil || errors.As(err, &ge) {
		t.Fatalf("at the bound: %v, want the missing compiler", err)
	}
}

// TestTimeouts: a run past its CPU-time limit (the program's own
// setrlimit: SIGXCPU) or past its wall-clock limit fails with kind
// timeout, promptly; a timeout is not remembered.
func TestTimeouts(t *testing.T) {
	ctx := context.Background()
	t.Run("wall clock", func(t *testing.T) {
		c := unscheduled(t, 256)
		g := gate(t, numeric.Options{RunTimeout: time.Millisecond})
		for range 2 {
			res, err := g.Check(ctx, c.Workload, c.Program)
			wantKind(t, err, numeric.KindTimeout, "ran past the wall-clock limit of 1ms")
			if res != nil {
				t.Fatalf("result %+v", res)
			}
		}
	})
	t.Run("CPU time", func(t *testing.T) {
		// 8.6e9 multiply-adds in scalar C: far more than a second.
		c := unscheduled(t, 2048)
		start := time.Now()
		_, err := gate(t, numeric.Options{CPUTime: time.Second, RunTimeout: 2 * time.Minute}).Check(ctx, c.Workload, c.Program)
		wantKind(t, err, numeric.KindTimeout, "ran past the CPU-time limit of 1s")
		if d := time.Since(start); d > time.Minute {
			t.Errorf("took %s", d)
		}
	})
}
