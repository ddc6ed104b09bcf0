package search

import (
	"context"
	"encoding/json"
	"fmt"

	"dragonx/kernels/ir"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

// TuneDB is the Database of one workload in a kernels/tunedb database
// directory (TVM's JSONDatabase layout): measured candidates are appended
// as tuning records (run_secs [latency] with its latency_source label, or
// [1e10] for a failure), and the best records seed the search.
//
// tunedb records carry no IR hash: NewTuneDB replays the full trace of each
// record of the workload once (literally, postprocessors' part included) to
// learn the hashes of the schedules measured before, so that a new search
// does not measure them again.
type TuneDB struct {
	db       *tunedb.DB
	index    int
	target   json.RawMessage
	args     []tunedb.ArgInfo
	workload string
	hashes   map[string]bool
}

// NewTuneDB commits the workload spec (built as f) to db and returns its
// Database. target is the records' target config (TVM's Target.export(),
// e.g. {"kind":"cuda","arch":"sm_90"}).
func NewTuneDB(ctx context.Context, db *tunedb.DB, spec *workload.Spec, f *ir.PrimFunc, target json.RawMessage) (*TuneDB, error) {
	i, err := db.CommitWorkload(spec)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	t := &TuneDB{db: db, index: i, target: target, args: tunedb.ArgsInfo(f), workload: verdict.Hash(f), hashes: map[string]bool{}}
	for _, r := range db.Records(i) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("search: reading the database: %w", err)
		}
		v := verdict.CheckTrace(ctx, f, r.Trace, verdict.Options{Until: verdict.PhaseReplay})
		if v.IRHash != "" {
			t.hashes[v.IRHash] = true
		}
	}
	return t, nil
}

func (t *TuneDB) check(workload string) error {
	if workload != t.workload {
		return fmt.Errorf("search: the database was opened for workload %s, not %s", t.workload, workload)
	}
	return nil
}

// Commit implements Database.
func (t *TuneDB) Commit(_ context.Context, r Record) error {
	if err := t.check(r.Workload); err != nil {
		return err
	}
	rec := tunedb.Failed(t.index, r.Trace, t.target, t.args, r.LatencySource)
	if r.OK {
		rec.RunSecs = []float64{r.LatencyS}
	}
	if err := t.db.CommitRecord(rec); err != nil {
		return fmt.Errorf("search: %w", err)
	}
	t.hashes[r.IRHash] = true
	return nil
}

// Top implements Database: the workload's valid records with the smallest
// mean run time.
func (t *TuneDB) Top(_ context.Context, workload string, k int) ([]Record, error) {
	if err := t.check(workload); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, nil
	}
	var out []Record
	for _, r := range t.db.TopK(t.index, k) {
		out = append(out, Record{Workload: workload, Trace: r.Trace, OK: true, LatencyS: r.Mean(), LatencySource: r.LatencySource})
	}
	return out, nil
}

// Has implements Database.
func (t *TuneDB) Has(_ context.Context, workload, irHash string) (bool, error) {
	if err := t.check(workload); err != nil {
		return false, err
	}
	return t.hashes[irHash], nil
}

// TargetConfig is the target config recorded with the tuning records of a
// search on target (TVM's Target.export() form): the model targets
// (h100-model, h200-model) model Hopper GPUs (sm_90); a real GPU's ("cuda")
// architecture is not known here.
func TargetConfig(target string) json.RawMessage {
	if target == "cuda" {
		return json.RawMessage(`{"kind":"cuda"}`)
	}
	return json.RawMessage(`{"kind":"cuda","arch":"sm_90"}`)
}
