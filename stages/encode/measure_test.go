package encode_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"dragonx/kernels/corpus"
	"dragonx/kernels/dataset"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
	"dragonx/stages/encode"
)

var measure = flag.Int("measure", 0, "TestMeasure: tune this many corpus workloads (seed 1, 32 trials each) and time the stage on their dataset")

// TestMeasure measures Encode's throughput on a dataset searched from the
// corpus (go test ./stages/encode -run TestMeasure -measure 300 -v).
func TestMeasure(t *testing.T) {
	if *measure == 0 {
		t.Skip("set -measure N")
	}
	ctx := context.Background()
	recs, err := corpus.Generate(ctx, corpus.Options{Count: *measure, Seed: 1, TestFraction: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	var tuned, test []*workload.Spec
	for _, r := range recs {
		tuned = append(tuned, r.Spec)
		if r.Split == corpus.Test {
			test = append(test, r.Spec)
		}
	}
	dir := t.TempDir()
	start := time.Now()
	res := buildDataset(t, dir, tuned, test, 32, 102, 170)
	t.Logf("dataset of %d workloads in %v: %d construction, %d refinement, %d + %d held-out", len(tuned), time.Since(start), len(res.Construction), len(res.Refinement), len(res.TestConstruction), len(res.TestRefinement))
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	start = time.Now()
	err = encode.Encode(ctx, encode.Options{
		Construction: filepath.Join(dir, dataset.ConstructionFile), Refinement: filepath.Join(dir, dataset.RefinementFile),
		TestConstruction: filepath.Join(dir, dataset.TestConstructionFile), TestRefinement: filepath.Join(dir, dataset.TestRefinementFile),
		Out: out, Vocab: voc, Log: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	n := len(res.Construction) + len(res.Refinement) + len(res.TestConstruction) + len(res.TestRefinement)
	b, _ := os.ReadFile(filepath.Join(out, encode.ReportFile))
	t.Logf("encode: %d examples and tasks in %v on GOMAXPROCS=%d: %.0f examples/s\n%s", n, el, runtime.GOMAXPROCS(0), float64(n)/el.Seconds(), b)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// BenchmarkEncode encodes and checks testdata/dataset (12 examples and
// tasks) per iteration.
func BenchmarkEncode(b *testing.B) {
	voc, err := vocab.Default()
	if err != nil {
		b.Fatal(err)
	}
	ds := filepath.Join("testdata", "dataset")
	out := b.TempDir()
	for b.Loop() {
		err := encode.Encode(context.Background(), encode.Options{
			Construction: filepath.Join(ds, dataset.ConstructionFile), Refinement: filepath.Join(ds, dataset.RefinementFile),
			TestConstruction: filepath.Join(ds, dataset.TestConstructionFile), TestRefinement: filepath.Join(ds, dataset.TestRefinementFile),
			Out: out, Vocab: voc, Workers: 1,
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*12)/b.Elapsed().Seconds(), "examples/s")
}
