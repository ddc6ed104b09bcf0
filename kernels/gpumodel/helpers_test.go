package gpumodel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/lower"
	"dragonx/kernels/verdict"
)

// gmm is the spec of a B=1 N×M×K batch matmul.
func gmm(n int) string {
	return fmt.Sprintf(`{"family":"GMM","B":1,"N":%d,"M":%d,"K":%d}`, n, n, n)
}

// lowered checks a trace statically on a workload spec and lowers the
// scheduled function.
func lowered(t testing.TB, spec string, traceJSON []byte) *lower.Program {
	t.Helper()
	v := verdict.Check(context.Background(), []byte(spec), traceJSON, verdict.Options{})
	if !v.OK && v.Phase == verdict.PhasePostproc {
		// A full trace recorded by an older TVM: replay it literally.
		v = verdict.Check(context.Background(), []byte(spec), traceJSON, verdict.Options{Until: verdict.PhaseReplay})
	}
	if !v.OK {
		t.Fatalf("static check of %s: %s", spec, v.Error)
	}
	p, err := lower.Lower(context.Background(), v.Func())
	if err != nil {
		t.Fatalf("lower %s: %v", spec, err)
	}
	return p
}

// loweredFile is lowered on a trace file.
func loweredFile(t testing.TB, spec, path string) *lower.Program {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return lowered(t, spec, data)
}

func testdata(name string) string { return filepath.Join("testdata", name) }

func model(t testing.TB, target string) *gpumodel.Model {
	t.Helper()
	m, err := gpumodel.New(target, gpumodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// report analyses and costs p on m.
func report(t testing.TB, m *gpumodel.Model, p *lower.Program) *gpumodel.Report {
	t.Helper()
	a, err := gpumodel.Analyze(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Cost(a)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
