package netbench

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"dragonx/kernels/corpus"
	kencode "dragonx/kernels/encode"
	"dragonx/kernels/judge"
	"dragonx/kernels/latency"
	"dragonx/kernels/search"
	"dragonx/kernels/verdict"
)

// SearchPoint is the evolutionary search on one subgraph after a budget of
// Trials measured candidates: its best so far, judged as the policies'
// attempts are (every phase up to the numerical gate with numeric, then
// the latency).
type SearchPoint struct {
	Trials int `json:"trials"` // the budget N
	// Measured is the number of candidates measured within the budget
	// (fewer than Trials when the search ended early); WallS the search's
	// wall time until its last one.
	Measured int     `json:"measured"`
	WallS    float64 `json:"wall_s"`
	// OK is true when the best candidate passed the judge; LatencyUS is
	// then its latency (µs, from Source), null otherwise; Error why not.
	OK        bool     `json:"ok"`
	LatencyUS *float64 `json:"latency_us"`
	Source    string   `json:"source,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// trialLog is the search's database, recording each measured candidate in
// order with the wall time at which it was committed.
type trialLog struct {
	*search.MemoryDB
	start time.Time
	mu    sync.Mutex
	recs  []search.Record
	at    []time.Duration
}

// Commit records r, then commits it to the memory database.
func (l *trialLog) Commit(ctx context.Context, r search.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r)
	l.at = append(l.at, time.Since(l.start))
	l.mu.Unlock()
	return l.MemoryDB.Commit(ctx, r)
}

// searchSeed is the seed of the search on a subgraph: a hash of the
// stage's seed and the subgraph's structural hash.
func searchSeed(seed int64, hash string) int64 {
	h := sha256.Sum256(fmt.Appendf(nil, "dragonx netbench search\x00%d\x00%s", seed, hash))
	return int64(binary.BigEndian.Uint64(h[:8]))
}

// roundTrials is kernels/search's default round: a search to N trials
// measures the first N candidates of a longer one with the same seed when
// N is a multiple of it (each round is drawn from the seed and the round
// number, and measures a full round until the last).
const roundTrials = 64

// searchSubgraph searches sg and returns its best at each budget
// (increasing): one search to the largest budget, read at each budget that
// is a multiple of roundTrials, and a search of its own for any other.
func searchSubgraph(ctx context.Context, sg corpus.Subgraph, budgets []int, seed int64, src latency.Source, jopts judge.Options) ([]SearchPoint, error) {
	f, err := sg.Spec.Build()
	if err != nil {
		return nil, fmt.Errorf("the workload: %w", err)
	}
	j, err := judge.New(sg.Spec, jopts)
	if err != nil {
		return nil, err
	}
	run := func(trials int) (*trialLog, error) {
		log := &trialLog{MemoryDB: search.NewMemoryDB(), start: time.Now()}
		_, err := search.Run(ctx, f, search.Options{
			Trials: trials, TrialsPerRound: roundTrials, Seed: searchSeed(seed, sg.Hash), Measure: src, DB: log,
			VerdictOptions: verdict.Options{Gate: jopts.Gate},
		})
		if err != nil {
			return nil, fmt.Errorf("the search: %w", err)
		}
		return log, nil
	}
	longest, err := run(budgets[len(budgets)-1])
	if err != nil {
		return nil, err
	}
	judged := map[string]*judge.Result{} // by the scheduled function's hash
	var out []SearchPoint
	for _, n := range budgets {
		log := longest
		if n%roundTrials != 0 && n != budgets[len(budgets)-1] {
			if log, err = run(n); err != nil {
				return nil, err
			}
		}
		m := min(n, len(log.recs))
		p := SearchPoint{Trials: n, Measured: m}
		if m > 0 {
			p.WallS = log.at[m-1].Seconds()
		}
		best := bestRecord(log.recs[:m])
		if best == nil {
			p.Error = fmt.Sprintf("the search measured no valid candidate in %d trials", m)
			out = append(out, p)
			continue
		}
		res, ok := judged[best.IRHash]
		if !ok {
			script, err := kencode.Encode(f, best.Trace)
			if err != nil {
				res = &judge.Result{Verdict: verdict.Fail(verdict.PhaseParse, fmt.Errorf("the trace has no script: %w", err))}
			} else if res, err = j.JudgeScript(ctx, script); err != nil {
				return nil, fmt.Errorf("judging the search's best: %w", err)
			}
			judged[best.IRHash] = res
		}
		p.OK, p.Error = res.OK, res.Error
		if res.OK && res.LatencyS != nil {
			us := *res.LatencyS * 1e6
			p.LatencyUS, p.Source = &us, res.LatencySource
		} else {
			p.OK = false
		}
		out = append(out, p)
	}
	return out, nil
}

// bestRecord is the fastest valid record (the first of equals), nil when
// none is valid.
func bestRecord(recs []search.Record) *search.Record {
	var best *search.Record
	for i := range recs {
		if r := &recs[i]; r.OK && (best == nil || r.LatencyS < best.LatencyS) {
			best = r
		}
	}
	return best
}
