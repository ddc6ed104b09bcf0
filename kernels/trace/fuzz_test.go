package trace_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/schedule"
	"dragonx/kernels/trace"
)

// addTraceSeeds adds every tvm-traces trace, whole and truncated, to the
// corpus (testdata/fuzz holds more).
func addTraceSeeds(f *testing.F) {
	dirs, _ := filepath.Glob(filepath.Join(tracesDir, "*", "trace.json"))
	for _, d := range dirs {
		data, err := os.ReadFile(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
}

// FuzzParse: Parse never panics; what it accepts prints to JSON that parses
// back to the same trace.
func FuzzParse(f *testing.F) {
	addTraceSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.Parse(data)
		if err != nil {
			return
		}
		out := tr.String()
		again, err := trace.Parse([]byte(out))
		if err != nil {
			t.Fatalf("printed trace does not parse: %v\n%s", err, out)
		}
		if got := again.String(); got != out {
			t.Fatalf("print/parse is not stable:\n%s\n%s", out, got)
		}
	})
}

// FuzzReplay: replaying any input on the dense workload never panics; a
// replay either fails with a *trace.Error (or a parse error) or leaves a
// well-formed function.
func FuzzReplay(f *testing.F) {
	addTraceSeeds(f)
	fn, err := fixtures.DenseNT(16, 8, 12)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.Parse(data)
		if err != nil {
			return
		}
		if len(tr.Insts) > 200 {
			return
		}
		for _, repair := range []bool{false, true} {
			s, err := trace.Replay(context.Background(), fn, tr, trace.Options{Repair: repair})
			if err != nil {
				var re *trace.Error
				if !errors.As(err, &re) {
					t.Fatalf("replay failed with %T: %v", err, err)
				}
				var se *schedule.Error
				if errors.As(err, &se) && len(se.Msg) > 0 && se.Msg[:4] == "left" {
					t.Fatal(err)
				}
				continue
			}
			if err := analysis.VerifyWellFormed(s.Func()); err != nil {
				t.Fatalf("replay left an ill-formed function: %v\n%s", err, tr)
			}
		}
	})
}
