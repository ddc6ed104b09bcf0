package postproc_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
)

var update = flag.Bool("update", false, "write expected.tir of the cases that have none (to be checked by hand against TVM's module)")

// tvmCases are apache/tvm's tests/python/meta_schedule/
// test_meta_schedule_postproc_<name>.py ported as data (testdata/tvm,
// README.md there): the folder and the postprocessor the test runs.
var tvmCases = []struct {
	dir string
	pp  func() postproc.Postproc
}{
	{"cooperative-fetch-matmul", postproc.NewRewriteCooperativeFetch},
	{"cooperative-fetch-warp-execution", postproc.NewRewriteCooperativeFetch},
	{"unbound-elementwise", postproc.NewRewriteUnboundBlock},
	{"unbound-elementwise-large", postproc.NewRewriteUnboundBlock},
	{"unbound-norm-bmn", postproc.NewRewriteUnboundBlock},
	{"unbound-bert-reshape", postproc.NewRewriteUnboundBlock},
	{"unbound-unrolled-loop", postproc.NewRewriteUnboundBlock},
}

// TestTVMPostprocCases replays each case's trace (the test's schedule
// calls, up to EnterPostproc) on its "before" module, runs the
// postprocessor and compares the printed function with expected.tir, TVM's
// expected module as our printer writes it.
func TestTVMPostprocCases(t *testing.T) {
	const dir = "testdata/tvm"
	for _, c := range tvmCases {
		t.Run(c.dir, func(t *testing.T) {
			if err := tvmPostprocCase(filepath.Join(dir, c.dir), c.pp()); err != nil {
				t.Error(err)
			}
		})
	}
}

func tvmPostprocCase(dir string, p postproc.Postproc) error {
	f, tr, err := tvmgolden.LoadCase(dir, "before.json")
	if err != nil {
		return err
	}
	s, err := trace.Replay(context.Background(), f, tr, trace.Options{Check: true})
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if err := postproc.Run(context.Background(), s, []postproc.Postproc{p}); err != nil {
		return err
	}
	got := s.Func().Script()
	path := filepath.Join(dir, "expected.tir")
	want, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && *update {
		return os.WriteFile(path, []byte(got), 0o644)
	}
	if err != nil {
		return fmt.Errorf("case data: %w", err)
	}
	if d := tvmgolden.Diff(got, string(want)); d != "" {
		return errors.New("printed IR differs from TVM's: " + d)
	}
	return nil
}
