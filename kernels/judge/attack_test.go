package judge_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"dragonx/kernels/judge"
	"dragonx/kernels/numeric"
	"dragonx/kernels/verdict"
)

// The scripts of the attack suite (kernels/verdict/testdata/attacks), as
// a model writes them: a 2^30 x 2^30 split of the 64-long reduction, 2^32
// blocks on blockIdx.x, the whole of X cached in each thread's local
// memory.
const (
	splitScript = "GetBlock | #1 \"main\"\nGetLoops b0\nSplit l3 1073741824 1073741824 | 1 0\n"
	gridScript  = "GetBlock | #1 \"main\"\nGetLoops b0\nSplit l1 4294967296 1 | 1 0\nReorder l4 l0\nBind l4 | \"blockIdx.x\"\nBind l2 | \"threadIdx.x\"\n"
	localScript = "GetBlock | #1 \"main\"\nGetLoops b0\nReorder l2 l1\nBind l0 | \"blockIdx.x\"\nBind l2 | \"threadIdx.x\"\nCacheRead b0 [] | 0 \"local\"\nComputeAt b1 l2 | 1 -1\n"
)

// TestAttacksReturn: judge.Judge, with the numeric phase and no deadline
// of its own, returns a failed verdict on the token ids of each attack
// (before issue 29's fix it never returned on the first two, and
// allocated gigabytes on the others).
func TestAttacksReturn(t *testing.T) {
	gate, err := numeric.New(numeric.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, spec, script string
		phase              verdict.Phase
		kind               string
	}{
		{"split", gmmSpec, splitScript, verdict.PhaseNumeric, "resources"},
		{"grid", gmmSpec, gridScript, verdict.PhaseVerify, ""},
		{"local 512", `{"family":"GMM","B":1,"N":512,"M":512,"K":512}`, localScript, verdict.PhaseVerify, ""},
		{"local 1024", `{"family":"GMM","B":1,"N":1024,"M":1024,"K":1024}`, localScript, verdict.PhaseVerify, ""},
		{"2^31-1 elements", `{"family":"GMM","B":1,"N":1,"M":1,"K":2147483647}`, "", verdict.PhaseNumeric, "resources"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := newJudge(t, parseSpec(t, c.spec), judge.Options{Until: verdict.PhaseNumeric, Gate: gate})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r, err := j.Judge(ctx, tokens(t, c.script))
			if err != nil {
				t.Fatal(err)
			}
			if r.OK || r.Phase != c.phase || r.NumericKind != c.kind || strings.Contains(r.Error, "deadline") {
				t.Fatalf("result %s; want phase %s, numeric_kind %q", r.JSON(), c.phase, c.kind)
			}
		})
	}
}

// TestDeadline: a judgement whose deadline passes (Options.Timeout or the
// context's) is a failed verdict of the phase it was in, returned at
// once; a cancelled context is an error.
func TestDeadline(t *testing.T) {
	gmm := parseSpec(t, gmmSpec)
	ids := tokens(t, drawn(t, gmm, true))
	numericOpts := numeric.Options{CacheDir: t.TempDir()}
	for _, c := range []struct {
		name    string
		timeout time.Duration // Options.Timeout
		ctx     time.Duration // the context's deadline (0: none)
	}{
		{"Options.Timeout", time.Millisecond, 0},
		{"context deadline", 0, time.Millisecond},
		{"both", 3 * time.Millisecond, 2 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A fresh gate: it must compile, which takes longer than the
			// deadline.
			j := newJudge(t, gmm, judge.Options{Until: verdict.PhaseNumeric, Numeric: numericOpts, Timeout: c.timeout})
			ctx := context.Background()
			if c.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.ctx)
				defer cancel()
			}
			start := time.Now()
			r, err := j.Judge(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK || !strings.Contains(r.Error, "no verdict within the deadline") || !slices.Contains(j.Phases(), r.Phase) {
				t.Fatalf("result %s", r.JSON())
			}
			if r.Phase == verdict.PhaseNumeric && r.NumericKind != string(numeric.KindTimeout) {
				t.Errorf("numeric_kind %q, want timeout: %s", r.NumericKind, r.JSON())
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the judgement took %s", d)
			}
		})
	}
	j := newJudge(t, gmm, judge.Options{Until: verdict.PhaseNumeric, Numeric: numericOpts})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r, err := j.Judge(ctx, ids); err == nil {
		t.Errorf("cancelled: result %s, want an error", r.JSON())
	}
}
