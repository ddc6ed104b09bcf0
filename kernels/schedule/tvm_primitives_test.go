package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/trace"
)

// TestTVMPrimitives runs the primitive tests of apache/tvm
// tests/python/tir-schedule ported as data (testdata/tvm/README.md): each
// case builds its "before" module from before.json, replays the schedule
// calls of trace.json on it and either compares the printed function with
// expected.tir (package tvmgolden's normalization: header, blank lines,
// trailing whitespace) or, when the case has expected-error.txt (TVM
// raises ScheduleError), requires the replay to be refused. Cases listed
// in known-failures.txt may disagree; an unlisted disagreement fails, and
// so does a listed case that now agrees.
func TestTVMPrimitives(t *testing.T) {
	const dir = "testdata/tvm"
	known, err := tvmgolden.ReadKnownFailures(filepath.Join(dir, "known-failures.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := filepath.Glob(filepath.Join(dir, "*", "trace.json"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("%s: no cases (%v)", dir, err)
	}
	tally := &tvmgolden.Tally{Known: known}
	for _, c := range cases {
		name := filepath.Base(filepath.Dir(c))
		t.Run(name, func(t *testing.T) {
			if err := tally.Record(name, tvmPrimitiveCase(t, filepath.Dir(c))); err != nil {
				t.Error(err)
			}
		})
	}
	for _, s := range known.Stale(caseNames(cases)) {
		t.Errorf("%s/known-failures.txt lists %s, which has no case", dir, s)
	}
	t.Logf("%s: %s", dir, tally.Summary())
}

// tvmPrimitiveCase returns nil when the case behaves as in TVM.
func tvmPrimitiveCase(t *testing.T, dir string) error {
	f, tr, err := tvmgolden.LoadCase(dir, "before.json")
	if err != nil {
		return err
	}
	// A refusal only counts when we have the primitive: an instruction we
	// do not implement fails the case instead of passing as "refused".
	for _, in := range tr.Insts {
		if _, ok := trace.LookupKind(in.Kind); !ok {
			return fmt.Errorf("instruction %s is not implemented", in.Kind)
		}
	}
	s, rerr := trace.Replay(context.Background(), f, tr, trace.Options{})
	if _, err := os.Stat(filepath.Join(dir, "expected-error.txt")); err == nil {
		if rerr == nil {
			return errors.New("TVM refuses this schedule (expected-error.txt), we accepted it")
		}
		t.Logf("refused as in TVM: %v", rerr)
		return nil
	}
	if rerr != nil {
		return fmt.Errorf("replay: %w", rerr)
	}
	want, err := os.ReadFile(filepath.Join(dir, "expected.tir"))
	if err != nil {
		return fmt.Errorf("case data: %w", err)
	}
	if d := tvmgolden.Diff(s.Func().Script(), string(want)); d != "" {
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
