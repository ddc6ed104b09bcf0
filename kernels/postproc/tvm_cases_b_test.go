package postproc_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// TestTVMPostprocModules runs the TVM postprocessor tests ported in
// testdata/tvm (each folder's SOURCE.md says from where and how): build
// before.json, replay trace.json, run the postprocessor, and compare the
// printed function with TVM's expected module.
func TestTVMPostprocModules(t *testing.T) {
	cases := []struct {
		dir string
		p   postproc.Postproc
	}{
		{"rewrite-reduction-block-tiled-matmul", postproc.NewRewriteReductionBlock()},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			dir := filepath.Join("testdata", "tvm", c.dir)
			read := func(name string) []byte {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			f, err := workload.Build(read("before.json"))
			if err != nil {
				t.Fatal(err)
			}
			tr, err := trace.Parse(read("trace.json"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := trace.Replay(context.Background(), f, tr, trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := postproc.Run(context.Background(), s, []postproc.Postproc{c.p}); err != nil {
				t.Fatal(err)
			}
			if d := tvmgolden.Diff(s.Func().Script(), string(read("expected.tir"))); d != "" {
				t.Errorf("%s: %s", c.dir, d)
			}
		})
	}
}
