package trace_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/trace"
)

// tvmGoldenDirs are the test-data folders whose cases carry a module TVM
// publishes (expected.tir): the CUDA design-space sketches of
// test_meta_schedule_space_cuda.py and the scheduled modules of
// test_meta_schedule_trace_apply.py. See testdata/tvm-space-cuda/README.md.
var tvmGoldenDirs = []string{"testdata/tvm-space-cuda", "testdata/tvm-trace-apply"}

var tvmGoldenDump = flag.String("tvmgolden-dump", "", "write each TVM-golden case's printed replay to DIR/<case>.tir, to diff with expected.tir")

// TestTVMGoldens replays each case's trace strictly on its workload and
// compares the printed function with TVM's expected module, ignoring only
// what package tvmgolden documents (header, blank lines, trailing
// whitespace). Cases listed in each folder's known-failures.txt may
// differ; any other difference fails, and so does a listed case that now
// matches. The log holds matched/total and a line per failure.
func TestTVMGoldens(t *testing.T) {
	for _, dir := range tvmGoldenDirs {
		known, err := tvmgolden.ReadKnownFailures(filepath.Join(dir, "known-failures.txt"))
		if err != nil {
			t.Fatal(err)
		}
		cases, err := filepath.Glob(filepath.Join(dir, "*", "expected.tir"))
		if err != nil || len(cases) == 0 {
			t.Fatalf("%s: no cases (%v)", dir, err)
		}
		tally := &tvmgolden.Tally{Known: known}
		for _, c := range cases {
			name := filepath.Base(filepath.Dir(c))
			t.Run(filepath.Base(dir)+"/"+name, func(t *testing.T) {
				if err := tally.Record(name, tvmGoldenCase(filepath.Dir(c), name)); err != nil {
					t.Error(err)
				}
			})
		}
		for _, s := range known.Stale(caseNames(cases)) {
			t.Errorf("%s/known-failures.txt lists %s, which has no case", dir, s)
		}
		t.Logf("%s: %s", dir, tally.Summary())
	}
}

// tvmGoldenCase returns nil when the case's replay prints TVM's module.
func tvmGoldenCase(dir, name string) error {
	want, err := os.ReadFile(filepath.Join(dir, "expected.tir"))
	if err != nil {
		return fmt.Errorf("case data: %w", err)
	}
	f, tr, err := tvmgolden.LoadCase(dir, "workload.json")
	if err != nil {
		return err
	}
	s, err := trace.Replay(context.Background(), f, tr, trace.Options{})
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	got := s.Func().Script()
	if *tvmGoldenDump != "" {
		if err := os.WriteFile(filepath.Join(*tvmGoldenDump, name+".tir"), []byte(got), 0o644); err != nil {
			return fmt.Errorf("dump: %w", err)
		}
	}
	if d := tvmgolden.Diff(got, string(want)); d != "" {
		return errors.New("printed IR differs from TVM's: " + d)
	}
	return nil
}

// caseNames returns the folder names of the given case files.
func caseNames(files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = filepath.Base(filepath.Dir(f))
	}
	return out
}
