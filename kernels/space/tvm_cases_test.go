package space_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/space"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

var update = flag.Bool("update", false, "write expected.tir of the cases that have none (to be checked by hand against TVM's module)")

// tvmRuleCases are apache/tvm's tests/python/meta_schedule/
// test_meta_schedule_schedule_rule_<rule>.py ported as data
// (testdata/tvm/README.md): the folder, the test's rule with the options of
// the test's target, and how many sketches the test's design space has.
var tvmRuleCases = []struct {
	dir      string
	rule     func() space.Rule
	sketches int
}{
	{"inline-into-multiple-consumers", func() space.Rule { return space.AutoInlineCUDA() }, 1},
	{"inline-constant-tensor", func() space.Rule { return space.AutoInlineCUDA() }, 1},
	{"inline-consumer-chain", func() space.Rule { return space.AutoInlineLLVM() }, 1},
}

// TestTVMRuleCases generates each case's design space under its one rule
// and compares the printed sketches with expected.tir (expected-<i>.tir
// when there are several), TVM's expected modules as our printer writes
// them. Each sketch's trace must also replay to the same function.
func TestTVMRuleCases(t *testing.T) {
	for _, c := range tvmRuleCases {
		t.Run(c.dir, func(t *testing.T) {
			if err := tvmRuleCase(filepath.Join("testdata/tvm", c.dir), c.rule(), c.sketches); err != nil {
				t.Error(err)
			}
		})
	}
}

func tvmRuleCase(dir string, rule space.Rule, sketches int) error {
	spec, err := os.ReadFile(filepath.Join(dir, "before.json"))
	if err != nil {
		return fmt.Errorf("case data: %w", err)
	}
	f, err := workload.Build(spec)
	if err != nil {
		return fmt.Errorf("before.json: %w", err)
	}
	ctx := context.Background()
	got, err := space.Generate(ctx, f, []space.Rule{rule}, trace.Options{Check: true})
	if err != nil {
		return err
	}
	if len(got) != sketches {
		return fmt.Errorf("%d sketches, TVM's design space has %d", len(got), sketches)
	}
	for i, s := range got {
		name := "expected.tir"
		if sketches > 1 {
			name = fmt.Sprintf("expected-%d.tir", i)
		}
		script := s.Func().Script()
		r, err := trace.Replay(ctx, f, s.Trace(), trace.Options{Check: true})
		if err != nil {
			return fmt.Errorf("sketch %d: its trace does not replay: %w", i, err)
		}
		if d := tvmgolden.Diff(r.Func().Script(), script); d != "" {
			return fmt.Errorf("sketch %d: its trace replays to another function: %s", i, d)
		}
		path := filepath.Join(dir, name)
		want, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) && *update {
			if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("case data: %w", err)
		}
		if d := tvmgolden.Diff(script, string(want)); d != "" {
			return fmt.Errorf("sketch %d: printed IR differs from TVM's: %s", i, d)
		}
	}
	return nil
}
