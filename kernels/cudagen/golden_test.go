package cudagen_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/cudagen"
	"dragonx/kernels/internal/gatecases"
	"dragonx/kernels/internal/tvmgolden"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// goldenCases are the reviewed workloads of testdata (see
// testdata/README.md): a case folder and its golden file.
var goldenCases = []struct{ dir, golden string }{
	{"../trace/testdata/tvm-traces/cuda-dense-nt-128", "dense-nt-128.cu"},
	{"../verdict/testdata/c2d-1x56x56x64-64-k3s1p1", "c2d-1x56x56x64-64-k3s1p1.cu"},
	{"../trace/testdata/tvm-space-cuda/nrm-1", "nrm-1x256x256-crossthread.cu"},
	{"../trace/testdata/tvm-traces/cuda-winograd-nhwc-56x56x64-add-relu", "winograd-nhwc-56x56x64-add-relu.cu"},
}

// TestGolden generates the CUDA of each case and compares it with its
// reviewed golden file (go test -run TestGolden -update rewrites them).
func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.golden, func(t *testing.T) {
			src := generate(t, c.dir)
			path := filepath.Join("testdata", c.golden)
			if *update {
				if err := os.WriteFile(path, []byte(src.Code), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if d := tvmgolden.Diff(src.Code, string(want)); d != "" {
				t.Errorf("generated CUDA differs from %s (go test -run TestGolden -update rewrites it): %s", path, d)
			}
		})
	}
}

func generate(t testing.TB, dir string) *cudagen.Source {
	t.Helper()
	c, err := gatecases.Dir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := cudagen.Generate(c.Program)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return src
}
