package search

import (
	"context"
	"encoding/json"
	"testing"

	"dragonx/kernels/tunedb"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

// TestTuneDB: a search records every trial in a tunedb directory (valid
// ones with their latency and label); a second search on the reopened
// directory seeds from it and measures none of the schedules measured
// before.
func TestTuneDB(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spec, err := workload.BenchmarkSpec("GMM", 0)
	if err != nil {
		t.Fatal(err)
	}
	f := benchFunc(t, "GMM", 0)
	target := json.RawMessage(`{"kind":"cuda","arch":"sm_90"}`)
	run := func(seed int64) *Result {
		db, err := tunedb.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		tdb, err := NewTuneDB(ctx, db, spec, f, target)
		if err != nil {
			t.Fatal(err)
		}
		o := small(t, 24, seed)
		o.DB = tdb
		r, err := Run(ctx, f, o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1 := run(1)
	r2 := run(2)
	db, err := tunedb.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	i, ok := db.Lookup(spec)
	if !ok {
		t.Fatal("workload not in the database")
	}
	recs := db.Records(i)
	if len(recs) != r1.Trials+r2.Trials {
		t.Fatalf("%d records, want %d", len(recs), r1.Trials+r2.Trials)
	}
	valid := 0
	hashes := map[string]bool{}
	for _, r := range recs {
		if r.Valid() {
			valid++
			if r.LatencySource != "model:h100" {
				t.Errorf("record labelled %q", r.LatencySource)
			}
		}
		h := verdict.CheckTrace(ctx, f, r.Trace, verdict.Options{Until: verdict.PhaseReplay}).IRHash
		if h == "" || hashes[h] {
			t.Fatalf("schedule %q measured twice or does not replay", h)
		}
		hashes[h] = true
	}
	if valid != r1.Valid+r2.Valid {
		t.Errorf("%d valid records, want %d", valid, r1.Valid+r2.Valid)
	}
	best := db.TopK(i, 1)[0].Mean()
	if want := min(r1.BestLatencyS, r2.BestLatencyS); best != want {
		t.Errorf("database best %g, searches' best %g", best, want)
	}
}
