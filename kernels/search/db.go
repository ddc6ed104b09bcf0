package search

import (
	"context"
	"math"
	"slices"
	"sync"

	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
)

// A Record is one measured candidate of a workload.
type Record struct {
	// Workload identifies the workload: the structural hash of its
	// unscheduled function (verdict.Hash).
	Workload string
	// Trace is the full trace measured.
	Trace *trace.Trace
	// IRHash is the structural hash of the scheduled function.
	IRHash string
	// OK is true when the candidate passed the check and was measured;
	// LatencyS and LatencySource are then its latency and the label of its
	// source; Error says why not otherwise.
	OK            bool
	LatencyS      float64
	LatencySource string
	Error         string
	// Phase is the verdict phase that failed ("" when OK): verify,
	// numeric or latency for a measured candidate.
	Phase verdict.Phase
}

// Database is what the search needs of a tuning database: commit a
// measured record, the best measured records of a workload, and whether a
// scheduled function was measured.
type Database interface {
	Commit(ctx context.Context, r Record) error
	// Top returns up to k records of the workload that passed, fastest
	// first.
	Top(ctx context.Context, workload string, k int) ([]Record, error)
	// Has reports whether the workload has a record of that IR hash.
	Has(ctx context.Context, workload, irHash string) (bool, error)
}

// MemoryDB is an in-memory Database, safe for concurrent use.
type MemoryDB struct {
	mu   sync.Mutex
	recs map[string][]Record
	seen map[[2]string]bool
}

// NewMemoryDB returns an empty in-memory database.
func NewMemoryDB() *MemoryDB {
	return &MemoryDB{recs: map[string][]Record{}, seen: map[[2]string]bool{}}
}

// Commit implements Database.
func (db *MemoryDB) Commit(_ context.Context, r Record) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.recs[r.Workload] = append(db.recs[r.Workload], r)
	db.seen[[2]string{r.Workload, r.IRHash}] = true
	return nil
}

// Top implements Database; ties keep the order of commit.
func (db *MemoryDB) Top(_ context.Context, workload string, k int) ([]Record, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var out []Record
	for _, r := range db.recs[workload] {
		if r.OK && !math.IsNaN(r.LatencyS) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int {
		switch {
		case a.LatencyS < b.LatencyS:
			return -1
		case a.LatencyS > b.LatencyS:
			return 1
		}
		return 0
	})
	if len(out) > k {
		out = out[:k]
	}
	return out, nil
}

// Has implements Database.
func (db *MemoryDB) Has(_ context.Context, workload, irHash string) (bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.seen[[2]string{workload, irHash}], nil
}

// Len returns the number of records of a workload.
func (db *MemoryDB) Len(workload string) int {
	db.mu.Lock()
	defer db.mu.Unlock()
	return len(db.recs[workload])
}
