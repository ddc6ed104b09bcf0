package fidelity

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/timings"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// realTimings are the real GPU timings in testdata, each with its rows
// and the model targets it is judged on: the H100 model (the default
// target) and the model of the GPU that timed it, where the device table
// has it.
var realTimings = []struct {
	csv     string
	rows    int
	targets []string
}{
	{"a10-ansor-bert/measured_scalar.csv", 984, []string{"h100-model", "a10-model"}},
	{"a10-ansor-bert/measured_vectorize.csv", 984, []string{"h100-model", "a10-model"}},
	{"a100-mmperf/measured.csv", 1500, []string{"h100-model", "a100-model"}},
}

// TestRealTimingsGolden computes the fidelity figures of the models on the
// real GPU timings in testdata (the A10's in both forms of the traces, the
// A100's) and holds them in testdata/real-timings.golden: any change of
// the model shows there as a diff. go test -update rewrites it.
func TestRealTimingsGolden(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	for _, rt := range realTimings {
		path := filepath.Join("testdata", filepath.FromSlash(rt.csv))
		rows, err := timings.Read(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != rt.rows {
			t.Fatalf("%s: %d rows, want %d", path, len(rows), rt.rows)
		}
		for _, target := range rt.targets {
			if !slices.Contains(gpumodel.Targets(), target) {
				continue
			}
			m, err := gpumodel.New(target, gpumodel.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Evaluate(ctx, rows, m)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&out, "# dragonx kernel fidelity -measured kernels/fidelity/%s -target %s\n", filepath.ToSlash(path), target)
			if err := WriteText(&out, rep); err != nil {
				t.Fatal(err)
			}
			out.WriteString("\n")
		}
	}
	golden := filepath.Join("testdata", "real-timings.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("the figures on the real timings changed (go test -update rewrites %s if the change is meant):\n--- got\n%s\n--- want\n%s", golden, out.Bytes(), want)
	}
}
