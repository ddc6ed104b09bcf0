package lower_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
)

// cudaCases lists the CUDA trace folders of the repository's testdata:
// TVM's recorded traces (with their postprocessor part) and the CUDA
// design-space sketches (without one).
func cudaCases(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, glob := range []string{
		"../trace/testdata/tvm-traces/cuda-*",
		"../trace/testdata/tvm-space-cuda/*-[0-9]*",
		"../trace/testdata/tvm-trace-apply/*-gpu",
	} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range m {
			if _, err := os.Stat(filepath.Join(d, "trace.json")); err == nil {
				if _, err := os.Stat(filepath.Join(d, "workload.json")); err == nil {
					dirs = append(dirs, d)
				}
			}
		}
	}
	sort.Strings(dirs)
	if len(dirs) == 0 {
		t.Fatal("no CUDA trace in testdata")
	}
	return dirs
}

// scheduled returns the function of a case folder after replay and the
// CUDA postprocessors: a recorded trace with a postproc part is replayed
// whole (its recorded postprocessors included); a sketch gets
// EnterPostproc and the rewriting postprocessors of postproc.CUDA(). err
// is a rewriting postprocessor's rejection (the function is then not
// lowerable), verr VerifyGPUCode's verdict with the CUDA limits.
func scheduled(t *testing.T, dir string) (f *ir.PrimFunc, err, verr error) {
	t.Helper()
	f, tr, err := tvmgolden.LoadCase(dir, "workload.json")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if tr.Postproc() < 0 {
		tr.Insts = append(tr.Insts, trace.Inst{Kind: "EnterPostproc"})
	}
	s, err := trace.Replay(ctx, f, tr, trace.Options{})
	if err != nil {
		t.Fatalf("%s: replay: %v", dir, err)
	}
	ps := postproc.CUDA()
	if ps[len(ps)-1].Name() != "VerifyGPUCode" {
		t.Fatalf("postproc.CUDA() does not end with VerifyGPUCode")
	}
	if tr.Postproc() < 0 {
		if err := postproc.Run(ctx, s, ps[:len(ps)-1]); err != nil {
			return s.Func(), err, nil
		}
	}
	return s.Func(), nil, postproc.VerifyGPUFunc(ctx, s.Func(), postproc.CUDALimits())
}
