package space_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/ir"
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
	{"inline-into-cache", func() space.Rule { return space.AutoInlineCUDA() }, 1},
	{"mlt-cuda-matmul", func() space.Rule { return space.MultiLevelTilingCUDA() }, 1},
	{"mlt-cuda-matmul-relu", func() space.Rule { return space.MultiLevelTilingCUDA() }, 1},
	{"mlt-cuda-sum-trivial-block-iter", func() space.Rule { return space.MultiLevelTilingCUDA() }, 1},
	{"mlt-cache-read-specify-consumer", func() space.Rule { return space.MultiLevelTilingCUDA() }, 1},
	{"autobind-elementwise", func() space.Rule { return space.AutoBindCUDA() }, 1},
	{"ctr-softmax-mn", func() space.Rule { return space.CrossThreadReductionCUDA() }, 4},
	{"ctr-softmax-mn-after-inline", func() space.Rule { return space.CrossThreadReductionCUDA() }, 4},
	{"ctr-batch-norm-bmn", func() space.Rule { return space.CrossThreadReductionCUDA() }, 2},
	{"pvu-matmul", func() space.Rule {
		// test_parallel_vectorize_unroll: llvm --num-cores=32, max_jobs_per_core 16.
		return &space.ParallelizeVectorizeUnroll{MaxParallelExtent: 32 * 16, MaxVectorizeExtent: 32, UnrollMaxSteps: []int64{0, 16, 64, 512}, UnrollExplicit: true}
	}, 1},
}

// TestTVMRuleCases generates each case's design space under its one rule
// and compares the printed sketches with expected.tir (expected-<i>.tir
// when there are several), TVM's expected modules as our printer writes
// them. Each sketch's trace must also replay to the same function. Where
// the test gives decisions (decisions.json: one list per sketch, the
// decisions of its sampling instructions in order, as TVM's
// check_sketches takes them), the sketch's trace is replayed with them
// and the result compared.
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
	start := trace.NewSession(f, trace.Options{Check: true})
	if data, err := os.ReadFile(filepath.Join(dir, "before-trace.json")); err == nil {
		tr, err := trace.Parse([]byte(strings.TrimSpace(string(data))))
		if err != nil {
			return fmt.Errorf("before-trace.json: %w", err)
		}
		if start, err = trace.Replay(ctx, f, tr, trace.Options{Check: true}); err != nil {
			return fmt.Errorf("before-trace.json: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("case data: %w", err)
	}
	got, err := space.GenerateFrom(ctx, start, []space.Rule{rule})
	if err != nil {
		return err
	}
	if len(got) != sketches {
		return fmt.Errorf("%d sketches, TVM's design space has %d", len(got), sketches)
	}
	decisions, err := readDecisions(filepath.Join(dir, "decisions.json"), sketches)
	if err != nil {
		return err
	}
	for i, s := range got {
		r, err := trace.Replay(ctx, f, s.Trace(), trace.Options{Check: true})
		if err != nil {
			return fmt.Errorf("sketch %d: its trace does not replay: %w", i, err)
		}
		if d := tvmgolden.Diff(r.Func().Script(), s.Func().Script()); d != "" {
			return fmt.Errorf("sketch %d: its trace replays to another function: %s", i, d)
		}
	}
	// TVM's check_sketches pairs each expected module (with its decisions)
	// with some sketch of the space, in any order; so does this.
	used := make([]bool, len(got))
	for i := range sketches {
		name := "expected.tir"
		if sketches > 1 {
			name = fmt.Sprintf("expected-%d.tir", i)
		}
		var ds []trace.Value
		if decisions != nil {
			ds = decisions[i]
		}
		path := filepath.Join(dir, name)
		want, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) && *update {
			script, err := printWith(ctx, f, got[i], decisions != nil, ds)
			if err != nil {
				return fmt.Errorf("sketch %d: %w", i, err)
			}
			if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
				return err
			}
			used[i] = true
			continue
		}
		if err != nil {
			return fmt.Errorf("case data: %w", err)
		}
		var firstDiff string
		found := false
		for k, s := range got {
			if used[k] {
				continue
			}
			script, err := printWith(ctx, f, s, decisions != nil, ds)
			if err != nil {
				if firstDiff == "" {
					firstDiff = fmt.Sprintf("sketch %d: %v", k, err)
				}
				continue
			}
			d := tvmgolden.Diff(script, string(want))
			if d == "" {
				used[k], found = true, true
				break
			}
			if firstDiff == "" {
				firstDiff = fmt.Sprintf("sketch %d: %s", k, d)
			}
		}
		if !found {
			return fmt.Errorf("%s: no sketch prints TVM's module; first difference: %s", name, firstDiff)
		}
	}
	return nil
}

// printWith prints the function of sketch s's trace replayed with the
// decisions ds when withDs, else the sketch's own function.
func printWith(ctx context.Context, f *ir.PrimFunc, s *trace.Session, withDs bool, ds []trace.Value) (string, error) {
	if !withDs {
		return s.Func().Script(), nil
	}
	tr, err := withDecisions(s.Trace(), ds)
	if err != nil {
		return "", err
	}
	r, err := trace.Replay(ctx, f, tr, trace.Options{Check: true})
	if err != nil {
		return "", fmt.Errorf("replay with TVM's decisions: %w", err)
	}
	return r.Func().Script(), nil
}

// readDecisions reads decisions.json ([[sketch 0's decisions], ...]); nil
// when the case has none.
func readDecisions(path string, sketches int) ([][]trace.Value, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("case data: %w", err)
	}
	var raw [][]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(raw) != sketches {
		return nil, fmt.Errorf("%s: decisions for %d sketches, want %d", path, len(raw), sketches)
	}
	out := make([][]trace.Value, len(raw))
	for i, ds := range raw {
		for _, d := range ds {
			var n int64
			var ns []int64
			switch {
			case json.Unmarshal(d, &n) == nil:
				out[i] = append(out[i], trace.IntValue(n))
			case json.Unmarshal(d, &ns) == nil:
				out[i] = append(out[i], trace.IntsValue(ns))
			default:
				return nil, fmt.Errorf("%s: decision %s is neither an integer nor a list of integers", path, d)
			}
		}
	}
	return out, nil
}

// withDecisions returns a copy of tr whose sampling instructions take ds,
// in order.
func withDecisions(tr *trace.Trace, ds []trace.Value) (*trace.Trace, error) {
	out := tr.Clone()
	k := 0
	for i, in := range out.Insts {
		if !strings.HasPrefix(in.Kind, "Sample") {
			continue
		}
		if k == len(ds) {
			return nil, fmt.Errorf("the trace samples more than the test's %d decisions", len(ds))
		}
		out.SetDecision(i, ds[k])
		k++
	}
	if k != len(ds) {
		return nil, fmt.Errorf("the trace samples %d times, the test gives %d decisions", k, len(ds))
	}
	return out, nil
}

// TestMultiLevelTilingSkipsTrivialBlockIter is the rest of TVM's
// test_cuda_sum_with_trivial_block_iter: the rule does not apply, so the
// sketch's trace holds nothing but the GetBlock instructions of the
// collection (which TVM's simplified trace drops).
func TestMultiLevelTilingSkipsTrivialBlockIter(t *testing.T) {
	spec, err := os.ReadFile("testdata/tvm/mlt-cuda-sum-trivial-block-iter/before.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := workload.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := space.Generate(context.Background(), f, []space.Rule{space.MultiLevelTilingCUDA()}, trace.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range got[0].Trace().Insts {
		if in.Kind != "GetBlock" {
			t.Errorf("the sketch applies %s", in.Kind)
		}
	}
}
