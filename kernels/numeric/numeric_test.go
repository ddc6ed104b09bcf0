package numeric_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dragonx/kernels/internal/gatecases"
	"dragonx/kernels/numeric"
)

const (
	denseCase = "../trace/testdata/tvm-traces/cuda-dense-nt-128"
	c2dCase   = "../verdict/testdata/c2d-1x56x56x64-64-k3s1p1"
)

func gate(t testing.TB, opts numeric.Options) *numeric.Gate {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	g, err := numeric.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func loadCase(t testing.TB, dir string) *gatecases.Case {
	t.Helper()
	c, err := gatecases.Dir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPasses(t *testing.T) {
	g := gate(t, numeric.Options{})
	for _, dir := range []string{denseCase, c2dCase} {
		c := loadCase(t, dir)
		res, err := g.Check(context.Background(), c.Workload, c.Program)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		t.Logf("%s: %+v", dir, res)
	}
}

func TestCacheReuseAndCorruption(t *testing.T) {
	dir := t.TempDir()
	c := loadCase(t, denseCase)
	ctx := context.Background()
	g := gate(t, numeric.Options{CacheDir: dir})
	res, err := g.Check(ctx, c.Workload, c.Program)
	if err != nil {
		t.Fatal(err)
	}
	if res.KernelCached || res.ReferenceCached {
		t.Fatalf("first check used the cache: %+v", res)
	}
	// A second gate (a second process) on the same directory reuses both.
	res2, err := gate(t, numeric.Options{CacheDir: dir}).Check(ctx, c.Workload, c.Program)
	if err != nil {
		t.Fatal(err)
	}
	if !res2.KernelCached || !res2.ReferenceCached || res2.MaxAbsErr != res.MaxAbsErr {
		t.Fatalf("second check: %+v, first %+v", res2, res)
	}
	// Truncate every entry: each is rebuilt, not trusted.
	entries, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e, ".bin") || strings.HasSuffix(e, ".out") {
			data, err := os.ReadFile(e)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(e, data[:len(data)/2], 0o755); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n != 3 { // kernel, reference binary, reference output
		t.Fatalf("%d entries in the cache, want 3: %v", n, entries)
	}
	res3, err := gate(t, numeric.Options{CacheDir: dir}).Check(ctx, c.Workload, c.Program)
	if err != nil {
		t.Fatal(err)
	}
	if res3.KernelCached || res3.ReferenceCached || res3.MaxAbsErr != res.MaxAbsErr {
		t.Fatalf("after truncation: %+v", res3)
	}
	// Another seed: the reference's outputs are not reused.
	res4, err := gate(t, numeric.Options{CacheDir: dir, Seed: 9}).Check(ctx, c.Workload, c.Program)
	if err != nil {
		t.Fatal(err)
	}
	if !res4.KernelCached || res4.ReferenceCached {
		t.Fatalf("seed 9: %+v", res4)
	}
}

// TestConcurrentGates: gates sharing a cache directory fill it at the same
// time without harm.
func TestConcurrentGates(t *testing.T) {
	dir := t.TempDir()
	c := loadCase(t, denseCase)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = gate(t, numeric.Options{CacheDir: dir}).Check(context.Background(), c.Workload, c.Program)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	tmp, _ := filepath.Glob(filepath.Join(dir, "*.tmp*"))
	if len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

func TestCancel(t *testing.T) {
	c := loadCase(t, c2dCase)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := gate(t, numeric.Options{}).Check(ctx, c.Workload, c.Program)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second { // generous: the machine is shared
		t.Errorf("cancelled check returned after %v", d)
	}
}

func TestCompilerErrors(t *testing.T) {
	c := loadCase(t, denseCase)
	ctx := context.Background()
	_, err := gate(t, numeric.Options{CC: "dragonx-no-such-cc"}).Check(ctx, c.Workload, c.Program)
	if err == nil || !strings.Contains(err.Error(), "dragonx-no-such-cc") {
		t.Errorf("missing compiler: %v", err)
	}
	_, err = gate(t, numeric.Options{Flags: []string{"-fdragonx-no-such-flag"}}).Check(ctx, c.Workload, c.Program)
	var ge *numeric.Error
	if !errors.As(err, &ge) || ge.Kind != numeric.KindCompile || !strings.Contains(err.Error(), "dragonx-no-such-flag") {
		t.Errorf("bad flag: %v, want a compile error quoting the compiler", err)
	}
}

// TestTolerances: beyond the tolerance of the float64 reference, a kernel
// passes when it is within it of the workload's float32 program (the dense
// schedule sums each element's k in the workload's order: bit for bit the
// float32 program), and fails when it is far from both (the cross-thread
// reduction of nrm-1 sums in a tree).
func TestTolerances(t *testing.T) {
	ctx := context.Background()
	c := loadCase(t, denseCase)
	res, err := gate(t, numeric.Options{RTol: 1e-12, ATol: 1e-12}).Check(ctx, c.Workload, c.Program)
	if err != nil || !res.Float32Program || res.MaxAbsErr == 0 || res.Compared != 128*128 {
		t.Fatalf("dense at 1e-12: %+v, %v; want a pass against the float32 program, with the float64 figures", res, err)
	}
	res, err = gate(t, numeric.Options{}).Check(ctx, c.Workload, c.Program)
	if err != nil || res.Float32Program {
		t.Fatalf("dense at the default tolerances: %+v, %v; want a pass against the float64 reference", res, err)
	}
	c = loadCase(t, "../trace/testdata/tvm-space-cuda/nrm-1")
	_, err = gate(t, numeric.Options{RTol: 1e-12, ATol: 1e-12}).Check(ctx, c.Workload, c.Program)
	var ge *numeric.Error
	if !errors.As(err, &ge) || ge.Kind != numeric.KindMismatch || ge.Result == nil || ge.Result.Compared == 0 || ge.Result.MaxAbsErr == 0 {
		t.Fatalf("nrm-1 at 1e-12: got %v, want a mismatch with figures", err)
	}
	if !strings.Contains(err.Error(), "first ") || !strings.Contains(err.Error(), "float32 program") {
		t.Errorf("%v does not name the first bad element and both references", err)
	}
	if _, err := numeric.New(numeric.Options{RTol: -1}); err == nil {
		t.Error("a negative tolerance is accepted")
	}
}

// TestMoreCases: schedules with several kernels, global intermediates
// between them and cross-thread reductions pass.
func TestMoreCases(t *testing.T) {
	g := gate(t, numeric.Options{})
	for _, dir := range []string{
		"../trace/testdata/tvm-traces/cuda-winograd-nhwc-56x56x64-add-relu",
		"../trace/testdata/tvm-space-cuda/cbr-0",
		"../trace/testdata/tvm-space-cuda/nrm-0",
		"../trace/testdata/tvm-space-cuda/sfm-0",
		"../trace/testdata/tvm-trace-apply/dense-add-gpu",
	} {
		c := loadCase(t, dir)
		if _, err := g.Check(context.Background(), c.Workload, c.Program); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

// TestTwoProcesses: two processes (this test binary, re-run as a helper)
// check the same program on one empty cache directory at the same time;
// both pass and the directory holds complete entries only.
func TestTwoProcesses(t *testing.T) {
	if dir := os.Getenv("DRAGONX_NUMERIC_HELPER_DIR"); dir != "" {
		c := loadCase(t, denseCase)
		if _, err := gate(t, numeric.Options{CacheDir: dir}).Check(context.Background(), c.Workload, c.Program); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := t.TempDir()
	var cmds []*exec.Cmd
	outs := make([]*strings.Builder, 2)
	for i := range outs {
		outs[i] = &strings.Builder{}
		cmd := exec.Command(os.Args[0], "-test.run=^TestTwoProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "DRAGONX_NUMERIC_HELPER_DIR="+dir)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	res, err := gate(t, numeric.Options{CacheDir: dir}).Check(context.Background(), loadCase(t, denseCase).Workload, loadCase(t, denseCase).Program)
	if err != nil || !res.KernelCached || !res.ReferenceCached {
		t.Errorf("after the two processes: %+v, %v", res, err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "*.tmp*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// TestCompare: outputs computed elsewhere (a GPU's) are compared with the
// references as Check compares a kernel's: the float64 reference rounded
// to float32 passes; one element off, a mismatch naming it; a NaN, nan; a
// short output, run.
func TestCompare(t *testing.T) {
	ctx := context.Background()
	c := loadCase(t, denseCase)
	g := gate(t, numeric.Options{})
	ref, err := g.Reference(ctx, c.Workload)
	if err != nil {
		t.Fatal(err)
	}
	if len(ref) != 8*128*128 {
		t.Fatalf("reference: %d bytes", len(ref))
	}
	out := make([]byte, 0, len(ref)/2)
	for i := 0; i < len(ref); i += 8 {
		out = binary.NativeEndian.AppendUint32(out, math.Float32bits(float32(math.Float64frombits(binary.NativeEndian.Uint64(ref[i:])))))
	}
	res, err := g.Compare(ctx, c.Workload, out)
	if err != nil || !res.ReferenceCached || res.Compared != 128*128 || res.MaxAbsErr > 1e-6 {
		t.Fatalf("the reference itself: %+v, %v", res, err)
	}
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		kind numeric.Kind
		msg  string
	}{
		{"one element off", func(b []byte) []byte {
			binary.NativeEndian.PutUint32(b[4*77:], math.Float32bits(math.Float32frombits(binary.NativeEndian.Uint32(b[4*77:]))+1))
			return b
		}, numeric.KindMismatch, "first T_matmul_NT[77]"},
		{"NaN", func(b []byte) []byte {
			binary.NativeEndian.PutUint32(b[4*5:], math.Float32bits(float32(math.NaN())))
			return b
		}, numeric.KindNaN, "T_matmul_NT[5] is NaN"},
		{"short", func(b []byte) []byte { return b[:len(b)-4] }, numeric.KindRun, "wrote"},
	} {
		_, err := g.Compare(ctx, c.Workload, tc.edit(append([]byte(nil), out...)))
		var ge *numeric.Error
		if !errors.As(err, &ge) || ge.Kind != tc.kind || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %s naming %q", tc.name, err, tc.kind, tc.msg)
		}
	}
}
