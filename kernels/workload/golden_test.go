package workload_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test -update if the change is intended); got:\n%s", path, got)
	}
}

// goldenSpecs is one shape per family: the first benchmark shape of the 13
// benchmark families, and the extras with their epilogues.
func goldenSpecs() map[string]string {
	specs := map[string]string{}
	for _, b := range workload.Benchmarks() {
		if b.Index == 0 {
			specs[b.Family] = b.Spec.Canonical()
		}
	}
	specs["DENSE"] = `{"family":"DENSE","M":128,"N":128,"K":128,"bias":true,"act":"relu"}`
	specs["MATMUL"] = `{"family":"MATMUL","N":64,"M":64,"K":64,"bias":true,"act":"gelu"}`
	specs["LNORM"] = `{"family":"LNORM","M":64,"N":128}`
	specs["POOL"] = `{"family":"POOL","N":1,"H":56,"W":56,"C":64,"k":3,"s":2,"p":1,"pool":"max"}`
	specs["POOL-avg"] = `{"family":"POOL","N":1,"H":7,"W":7,"C":64,"k":3,"s":2,"p":1,"pool":"avg","count_include_pad":false}`
	return specs
}

// TestGoldenFamilies compares the printed unscheduled IR of every family
// with testdata/golden/<family>.golden; the first line of each file is the
// spec.
func TestGoldenFamilies(t *testing.T) {
	specs := goldenSpecs()
	for _, fam := range workload.FamilyNames() {
		if _, ok := specs[fam]; !ok && fam != workload.CustomFamily {
			t.Errorf("family %s has no golden spec", fam)
		}
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			f, err := workload.Build([]byte(spec))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "golden", name+".golden"), "# "+spec+"\n"+f.Script())
		})
	}
}

// TestGoldenTVMTraces does the same for the workloads of the TVM traces
// (the custom modules are built from their JSON descriptions).
func TestGoldenTVMTraces(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/tvm-traces/*/workload.json")
	for _, path := range dirs {
		name := filepath.Base(filepath.Dir(path))
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := workload.Build(data)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "golden", "tvm-traces", name+".golden"), f.Script())
		})
	}
}

// TestGoldenBenchmarkHashes pins the spec hash of the 52 benchmark shapes:
// the hash names a workload in datasets and caches, so a change to the
// canonical form must be deliberate.
func TestGoldenBenchmarkHashes(t *testing.T) {
	var b strings.Builder
	for _, bm := range workload.Benchmarks() {
		b.WriteString(bm.Name() + " " + bm.Spec.Hash() + " " + bm.Spec.Canonical() + "\n")
	}
	golden(t, filepath.Join("testdata", "benchmark_hashes.golden"), b.String())
}
