package ptxas_test

import (
	"context"
	"errors"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/cudagen"
	"dragonx/kernels/internal/gatecases"
	"dragonx/kernels/ptxas"
)

// A report of nvcc 11.8 for sm_90 (the Winograd golden, two of its kernels,
// and a kernel with a constant bank and spills, edited from a real one).
const report = `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'main_kernel1' for 'sm_90'
ptxas info    : Function properties for main_kernel1
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 254 registers, 33792 bytes smem
ptxas info    : Compiling entry function 'main_kernel0' for 'sm_90'
ptxas info    : Function properties for main_kernel0
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 80 registers
ptxas info    : Compiling entry function 'big' for 'sm_90'
ptxas info    : Function properties for big
    1032 bytes stack frame, 812 bytes spill stores, 900 bytes spill loads
ptxas info    : Used 255 registers, 4096 bytes smem, 400 bytes cmem[0]
`

func TestParse(t *testing.T) {
	ks, err := ptxas.Parse(report)
	if err != nil {
		t.Fatal(err)
	}
	want := []ptxas.Kernel{
		{Name: "main_kernel1", Registers: 254, SharedBytes: 33792},
		{Name: "main_kernel0", Registers: 80},
		{Name: "big", Registers: 255, SharedBytes: 4096, StackBytes: 1032, SpillStores: 812, SpillLoads: 900},
	}
	if len(ks) != len(want) {
		t.Fatalf("got %+v", ks)
	}
	for i := range want {
		if ks[i] != want[i] {
			t.Errorf("kernel %d: got %+v, want %+v", i, ks[i], want[i])
		}
	}
	if ks[0].Spills() || !ks[2].Spills() {
		t.Errorf("Spills: %v %v", ks[0].Spills(), ks[2].Spills())
	}
	for _, bad := range []string{"", "ptxas info    : 0 bytes gmem\n", "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"} {
		if _, err := ptxas.Parse(bad); err == nil {
			t.Errorf("Parse(%q) passed", bad)
		}
	}
}

func compiler(t testing.TB, dir string) *ptxas.Compiler {
	t.Helper()
	c, err := ptxas.New(context.Background(), ptxas.Options{CacheDir: dir})
	if errors.Is(err, ptxas.ErrNoNVCC) {
		t.Skipf("nvcc is not installed (make test installs it: scripts/cuda-toolkit.sh): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// goldens are kernels/cudagen's reviewed sources.
func goldens(t *testing.T) []string {
	t.Helper()
	fs, err := filepath.Glob("../cudagen/testdata/*.cu")
	if err != nil || len(fs) < 4 {
		t.Fatalf("goldens: %v %v", fs, err)
	}
	return fs
}

// TestGoldensCompile: every golden of kernels/cudagen compiles for sm_90,
// no kernel spills, and each kernel's shared memory is what the generator
// declared (ptxas may pad each array to its 16-byte alignment).
func TestGoldensCompile(t *testing.T) {
	c := compiler(t, t.TempDir())
	byFile := map[string]string{}
	for _, tc := range []struct{ dir, golden string }{
		{"../trace/testdata/tvm-traces/cuda-dense-nt-128", "dense-nt-128.cu"},
		{"../verdict/testdata/c2d-1x56x56x64-64-k3s1p1", "c2d-1x56x56x64-64-k3s1p1.cu"},
		{"../trace/testdata/tvm-space-cuda/nrm-1", "nrm-1x256x256-crossthread.cu"},
		{"../trace/testdata/tvm-traces/cuda-winograd-nhwc-56x56x64-add-relu", "winograd-nhwc-56x56x64-add-relu.cu"},
	} {
		byFile[tc.golden] = tc.dir
	}
	for _, f := range goldens(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.Compile(context.Background(), string(src))
			if err != nil {
				t.Fatal(err)
			}
			dir, ok := byFile[filepath.Base(f)]
			if !ok {
				t.Fatalf("golden %s: no case folder known for it", f)
			}
			cs, err := gatecases.Dir(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			gen, err := cudagen.Generate(cs.Program)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, gen, r)
			ks, err := c.CompileProgram(context.Background(), cs.Program)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range gen.Launches {
				if want, _ := r.Kernel(l.Kernel); ks[i] != want {
					t.Errorf("CompileProgram kernel %d: %+v, want %+v", i, ks[i], want)
				}
			}
		})
	}
}

// checkReport compares ptxas's report with the generator's launches.
func checkReport(t *testing.T, gen *cudagen.Source, r *ptxas.Report) {
	t.Helper()
	if len(r.Kernels) != len(gen.Launches) {
		t.Fatalf("ptxas reports %d kernels, the source has %d", len(r.Kernels), len(gen.Launches))
	}
	for _, l := range gen.Launches {
		k, ok := r.Kernel(l.Kernel)
		if !ok {
			t.Fatalf("no report for kernel %s", l.Kernel)
		}
		if k.Spills() {
			t.Errorf("%s spills: %+v", l.Kernel, k)
		}
		if k.Registers <= 0 || k.Registers > 255 {
			t.Errorf("%s: %d registers", l.Kernel, k.Registers)
		}
		if k.SharedBytes < l.SharedBytes || k.SharedBytes > l.SharedBytes+15*int64(l.SharedArrays) {
			t.Errorf("%s: ptxas %d B shared, generator declared %d B", l.Kernel, k.SharedBytes, l.SharedBytes)
		}
	}
}

// TestCache: a second compiler on the same directory (another process)
// reuses the report; a corrupted entry is compiled again, not trusted.
func TestCache(t *testing.T) {
	dir := t.TempDir()
	c := compiler(t, dir)
	src, err := os.ReadFile("../cudagen/testdata/dense-nt-128.cu")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r1, err := c.Compile(ctx, string(src))
	if err != nil {
		t.Fatal(err)
	}
	if r1.Cached {
		t.Fatal("first compile came from the cache")
	}
	r2, err := compiler(t, dir).Compile(ctx, string(src))
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Cached || r2.Kernels[0] != r1.Kernels[0] {
		t.Fatalf("second compile: %+v, first %+v", r2, r1)
	}
	entries, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("entries %v %v", entries, err)
	}
	if err := os.WriteFile(entries[0], []byte(`{"arch":"sm_90","kernels":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r3, err := c.Compile(ctx, string(src))
	if err != nil {
		t.Fatal(err)
	}
	if r3.Cached || r3.Kernels[0] != r1.Kernels[0] {
		t.Fatalf("after corruption: %+v", r3)
	}
}

// TestCompileError: a source that does not compile is ErrCompile with
// nvcc's message.
func TestCompileError(t *testing.T) {
	c := compiler(t, t.TempDir())
	_, err := c.Compile(context.Background(), "extern \"C\" __global__ void k(float *a) { a[0] = undeclared; }\n")
	if !errors.Is(err, ptxas.ErrCompile) || !strings.Contains(err.Error(), "undeclared") {
		t.Fatalf("got %v", err)
	}
}
