package encode_test

import (
	"context"
	"encoding/json"
	"testing"

	"dragonx/kernels/dataset"
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/search"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/workload"
)

var target = json.RawMessage(`{"kind":"cuda","arch":"sm_90"}`)

func mustSpec(t testing.TB, js string) *workload.Spec {
	t.Helper()
	s, err := workload.ParseString(js)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// buildDataset tunes each workload with a short evolutionary search on the
// H100 model (seed 1) into a tuning database, and writes kernels/dataset's
// files for it into dir, holding out the test workloads.
func buildDataset(t testing.TB, dir string, specs, test []*workload.Spec, trials, testConstruction, testRefinement int) *dataset.Result {
	t.Helper()
	ctx := context.Background()
	db, err := tunedb.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range specs {
		f, err := s.Build()
		if err != nil {
			t.Fatal(err)
		}
		tdb, err := search.NewTuneDB(ctx, db, s, f, target)
		if err != nil {
			t.Fatal(err)
		}
		m, err := gpumodel.New("h100-model", gpumodel.Options{Noise: 0.02, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		o := search.Options{Trials: trials, TrialsPerRound: 16, PopulationSize: 48, InitMinUnmeasured: 16, Seed: 1, Measure: m, DB: tdb}
		if _, err := search.Run(ctx, f, o); err != nil {
			t.Fatal(err)
		}
	}
	opts := dataset.DefaultOptions()
	opts.Test = test
	opts.TestConstruction, opts.TestRefinement = testConstruction, testRefinement
	res, err := dataset.Build(ctx, db, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := dataset.Write(dir, res); err != nil {
		t.Fatal(err)
	}
	return res
}
