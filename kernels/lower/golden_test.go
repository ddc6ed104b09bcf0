package lower_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/lower"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// TestGolden prints the lowered program of TVM's recorded dense trace
// (replayed with its postprocessor part) and compares it with the
// reviewed testdata/dense-nt-128.golden (see testdata/README.md).
func TestGolden(t *testing.T) {
	for _, c := range []struct{ dir, golden string }{
		{"../trace/testdata/tvm-traces/cuda-dense-nt-128", "dense-nt-128.golden"},
	} {
		t.Run(c.golden, func(t *testing.T) {
			f, err, verr := scheduled(t, c.dir)
			if err != nil || verr != nil {
				t.Fatalf("postprocessors: %v, %v", err, verr)
			}
			p, err := lower.Lower(context.Background(), f)
			if err != nil {
				t.Fatal(err)
			}
			got := p.String()
			path := filepath.Join("testdata", c.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if d := tvmgolden.Diff(got, string(want)); d != "" {
				t.Errorf("lowered program differs from %s (go test -run TestGolden -update rewrites it): %s", path, d)
			}
		})
	}
}
