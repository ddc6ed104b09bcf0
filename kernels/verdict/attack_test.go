package verdict_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dragonx/kernels/numeric"
	"dragonx/kernels/verdict"
)

// TestAttacks is the standing attack suite of issue 29: schedules that
// passed the static verdict and then hung the numerical gate, or made it
// (or the judge's inputs) allocate without bound. Each gets its verdict
// quickly, without running or allocating the program: the static verdict
// refuses the launch limits CUDA sets, the gate refuses the rest with
// numeric_kind resources before compiling.
func TestAttacks(t *testing.T) {
	gate, err := numeric.New(numeric.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	const gmm64 = `{"family":"GMM","B":1,"N":64,"M":64,"K":64}`
	for _, c := range []struct {
		name, spec, trace string
		phase             verdict.Phase
		kind              string // numeric_kind
		error             string // in the verdict's error
	}{
		{"split 2^30 x 2^30 of a 64-long reduction", gmm64, "split-2p30x2p30",
			verdict.PhaseNumeric, "resources", "steps (trip counts x threads x grid size)"},
		{"2^32 blocks on blockIdx.x", gmm64, "grid-2p32-blocks",
			verdict.PhaseVerify, "", "blockIdx.x has extent 4294967296, more than the 2147483647 blocks"},
		{"whole input in local memory, 512^3", `{"family":"GMM","B":1,"N":512,"M":512,"K":512}`, "local-whole-input",
			verdict.PhaseVerify, "", "1048576 bytes of local memory per thread (X_local 1048576 B), more than the 524288 allowed"},
		{"whole input in local memory, 1024^3", `{"family":"GMM","B":1,"N":1024,"M":1024,"K":1024}`, "local-whole-input",
			verdict.PhaseVerify, "", "4194304 bytes of local memory per thread"},
		{"a buffer of 2^31-1 elements", `{"family":"GMM","B":1,"N":1,"M":1,"K":2147483647}`, "unscheduled",
			verdict.PhaseNumeric, "resources", "more than the gate's 256.0 MiB of inputs and outputs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := os.ReadFile(filepath.Join("testdata", "attacks", c.trace+".trace.json"))
			if err != nil {
				t.Fatal(err)
			}
			// Before the fix the gate ran these for hours (or died out of
			// memory): a deadline turns a hang into a failure here.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			start := time.Now()
			v := verdict.Check(ctx, []byte(c.spec), tr, verdict.Options{Until: verdict.PhaseNumeric, Gate: gate})
			if v.OK || v.Phase != c.phase || v.NumericKind != c.kind || !strings.Contains(v.Error, c.error) {
				t.Fatalf("verdict %s\nwant phase %s, numeric_kind %q, error containing %q", v.JSON(), c.phase, c.kind, c.error)
			}
			if d := time.Since(start); d > time.Minute {
				t.Errorf("the verdict took %s", d)
			}
		})
	}
}
