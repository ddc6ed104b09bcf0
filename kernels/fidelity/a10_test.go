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

// a10Targets are the model targets the A10 timings are judged on: the
// H100 model (the default target) and the A10's, where the device table
// has it.
var a10Targets = []string{"h100-model", "a10-model"}

// TestA10Golden computes the fidelity figures of the models on the real
// A10 timings in testdata/a10-ansor-bert (both forms of the traces) and
// holds them in testdata/a10-ansor-bert.golden: any change of the model
// shows there as a diff. go test -update rewrites it.
func TestA10Golden(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	for _, csv := range []string{"measured_scalar.csv", "measured_vectorize.csv"} {
		path := filepath.Join("testdata", "a10-ansor-bert", csv)
		rows, err := timings.Read(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 984 {
			t.Fatalf("%s: %d rows, want 984", path, len(rows))
		}
		for _, target := range a10Targets {
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
	golden := filepath.Join("testdata", "a10-ansor-bert.golden")
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
		t.Errorf("the figures on the A10 timings changed (go test -update rewrites %s if the change is meant):\n--- got\n%s\n--- want\n%s", golden, out.Bytes(), want)
	}
}
