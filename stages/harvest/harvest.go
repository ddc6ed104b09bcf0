// Package harvest is the `harvest` stage kind: it tunes every workload of a
// corpus (kernels/corpus records, both splits) with the evolutionary search
// of kernels/search on a target, into a tuning database (kernels/tunedb),
// and builds the language model's datasets from it (kernels/dataset): the
// construction and refinement examples of the train split, and the held-out
// construction tasks and refinement prompts of the test split.
//
//	stage "harvest" {
//	  kind      = "harvest"
//	  workloads = stage.workloads.out.workloads   # or a local file
//	  target    = "h100-model"                    # h100-model | h200-model | cuda
//	  trials    = 64                              # per workload
//	  seed      = 1
//	  shards    = 2                               # parallel workers, not in the key
//	  search  { cost_model = "gbt"  numeric = false  population = 512  trials_per_round = 64 }
//	  dataset { min_records = 5  band_low = 0.4  band_high = 0.6  min_speedup = 1.1  pairs = 1
//	            test_construction = 102  test_refinement = 170 }
//	}
//
// The work is split into shards by tunedb.ShardOf; each shard is a pure
// function of its ShardJob (RunShard), and every workload's search is seeded
// from the seed and the workload's spec hash, so that the outputs are byte
// for byte the same for any number of shards. docs/pipeline.md (## harvest)
// documents the outputs and the resume behaviour.
package harvest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"dragonx/internal/progress"
	"dragonx/kernels/corpus"
	"dragonx/kernels/cudabench"
	"dragonx/kernels/dataset"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/workload"
	"dragonx/stages"
)

// Version is the harvest kind's version; bump it when the same parameters
// would produce different outputs.
const Version = "3" // 2: GPU model version 2 (issue 28); 3: local buffers compacted per vthread, so the static verdict (512 KiB local) changes

// Kind is the harvest stage kind.
type Kind struct{}

func init() { stages.Register(Kind{}) }

// Name returns "harvest".
func (Kind) Name() string { return "harvest" }

// Version returns the kind version.
func (Kind) Version() string { return Version }

// Output names and paths.
const (
	OutDB               = "db"
	OutConstruction     = "construction"
	OutRefinement       = "refinement"
	OutTestConstruction = "test_construction"
	OutTestRefinement   = "test_refinement"
	OutStats            = "stats"

	inputWorkloads = "workloads.jsonl"
)

// Defaults of the attributes.
const (
	DefaultTarget = "h100-model"
	DefaultSeed   = 1
	DefaultShards = 1
	DefaultNoise  = 0.02
)

// DefaultSearch returns the search block's defaults: the learned (gbt) cost
// model, no numerical gate, and TVM's population 512, 64 trials per round,
// 4 generations and ε 0.05.
func DefaultSearch() SearchOptions {
	return SearchOptions{CostModel: ModelGBT, Population: 512, TrialsPerRound: 64, Generations: 4, EpsGreedy: 0.05}
}

// DatasetOptions is the dataset block: dataset.Options without the test
// split (taken from the workloads' split field).
type DatasetOptions struct {
	LatencySource   string  `json:"latency_source"`
	MinConstruction int     `json:"min_construction"`
	MinRecords      int     `json:"min_records"`
	BandLow         float64 `json:"band_low"`
	BandHigh        float64 `json:"band_high"`
	MinSpeedup      float64 `json:"min_speedup"`
	Pairs           int     `json:"pairs"`
	// Construction and ConstructionWithin: construction examples per
	// workload, and the latency bound on them (dataset.Options).
	Construction       int     `json:"construction"`
	ConstructionWithin float64 `json:"construction_within"`
	TestConstruction   int     `json:"test_construction"`
	TestRefinement     int     `json:"test_refinement"`
}

func datasetFrom(o dataset.Options) DatasetOptions {
	return DatasetOptions{LatencySource: o.LatencySource, MinConstruction: o.MinConstruction, MinRecords: o.MinRecords,
		BandLow: o.SourceLow, BandHigh: o.SourceHigh, MinSpeedup: o.MinSpeedup, Pairs: o.PairsPerWorkload,
		Construction: o.ConstructionPerWorkload, ConstructionWithin: o.ConstructionWithin,
		TestConstruction: o.TestConstruction, TestRefinement: o.TestRefinement}
}

// Options returns the dataset.Options with the test split.
func (d DatasetOptions) Options(test []*workload.Spec) dataset.Options {
	return dataset.Options{LatencySource: d.LatencySource, MinConstruction: d.MinConstruction, MinRecords: d.MinRecords,
		SourceLow: d.BandLow, SourceHigh: d.BandHigh, MinSpeedup: d.MinSpeedup, PairsPerWorkload: d.Pairs,
		ConstructionPerWorkload: d.Construction, ConstructionWithin: d.ConstructionWithin,
		Test: test, TestConstruction: d.TestConstruction, TestRefinement: d.TestRefinement}
}

// Stage is a decoded harvest stage.
type Stage struct {
	input   stages.Input
	params  Params
	dataset DatasetOptions
	shards  int
	key     []stages.Param
}

// SearchParams returns the search parameters (for tests and tools).
func (s *Stage) SearchParams() Params { return s.params }

// Shards returns the number of shards (not a parameter of the key).
func (s *Stage) Shards() int { return s.shards }

// Params returns workloads, target, trials, seed, noise, search and
// dataset, in that order. shards is not one: it cannot change the outputs.
func (s *Stage) Params() []stages.Param { return s.key }

// Inputs returns the workloads file.
func (s *Stage) Inputs() []stages.Input { return []stages.Input{s.input} }

// Outputs returns the outputs, sorted by name.
func (s *Stage) Outputs() []stages.OutputDecl {
	return []stages.OutputDecl{
		{Name: OutConstruction, Path: dataset.ConstructionFile},
		{Name: OutDB, Path: "db"},
		{Name: OutRefinement, Path: dataset.RefinementFile},
		{Name: OutStats, Path: dataset.StatsFile},
		{Name: OutTestConstruction, Path: dataset.TestConstructionFile},
		{Name: OutTestRefinement, Path: dataset.TestRefinementFile},
	}
}

// Stats is stats.json: dataset.Stats with the search figures.
type Stats struct {
	*dataset.Stats
	Search SearchStats `json:"search"`
}

// ReadWorkloads reads a workloads file (kernels/corpus records, both
// splits): the distinct workloads in file order, and the test split. A
// workload listed twice with different splits is an error.
func ReadWorkloads(r io.Reader) (all, test []*workload.Spec, err error) {
	recs, err := corpus.Read(r)
	if err != nil {
		return nil, nil, fmt.Errorf("harvest: workloads: %w", err)
	}
	split := map[string]string{}
	for i, rec := range recs {
		h := rec.Spec.Hash()
		if prev, ok := split[h]; ok {
			if prev != rec.Split {
				return nil, nil, fmt.Errorf("harvest: workloads: record %d: %s is listed in both the %s and the %s split", i+1, rec.Spec.Label(), prev, rec.Split)
			}
			continue
		}
		split[h] = rec.Split
		all = append(all, rec.Spec)
		if rec.Split == corpus.Test {
			test = append(test, rec.Spec)
		}
	}
	if len(all) == 0 {
		return nil, nil, errors.New("harvest: workloads: the file holds no workload")
	}
	return all, test, nil
}

// Jobs splits the workloads into n shard jobs (tunedb.ShardOf), each
// keeping the file order.
func Jobs(p Params, specs []*workload.Spec, n int) []ShardJob {
	jobs := make([]ShardJob, n)
	for i := range jobs {
		jobs[i] = ShardJob{Version: Version, Params: p, Shard: i, Shards: n, Workloads: []*workload.Spec{}}
	}
	for _, s := range specs {
		k := tunedb.ShardOf(s, n)
		jobs[k].Workloads = append(jobs[k].Workloads, s)
	}
	return jobs
}

// Run tunes the workloads in s.shards shards, merges the shards' databases
// and builds the datasets. Without an executor block the shards run on
// goroutines of this process (resume state under rc.StateDir); with one,
// each shard is a task of the executor (`dragonx stage-job`, task.go). The
// outputs are the same bytes either way.
func (s *Stage) Run(ctx context.Context, rc *stages.RunContext) error {
	in := filepath.Join(rc.Dir, ".input-"+inputWorkloads)
	if err := rc.Materialize(ctx, s.input.Name, in); err != nil {
		return fmt.Errorf("harvest: placing the workloads: %w", err)
	}
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("harvest: %w", err)
	}
	specs, test, err := ReadWorkloads(f)
	f.Close()
	os.Remove(in)
	if err != nil {
		return err
	}
	if s.params.Target == TargetCUDA {
		// Before any long work: the measured target needs a GPU.
		dev, err := cudabench.CheckGPU(ctx, cudabench.Options{})
		if err != nil {
			return fmt.Errorf("harvest: target cuda: %w", err)
		}
		fmt.Fprintf(rc.Log, "target cuda: measuring on %s\n", dev)
	}
	if s.params.Search.Numeric {
		// The numerical gate compiles every measured candidate with cc.
		if _, err := exec.LookPath("cc"); err != nil {
			return fmt.Errorf("harvest: search.numeric needs a C compiler (cc) to run the numerical gate: %w (install gcc: make setup)", err)
		}
	}
	state := rc.StateDir
	if state == "" {
		tmp, err := os.MkdirTemp("", "dragonx-harvest-")
		if err != nil {
			return fmt.Errorf("harvest: %w", err)
		}
		defer os.RemoveAll(tmp)
		state = tmp
	}
	fmt.Fprintf(rc.Log, "harvest: %d workloads (%d test), %d trials each on %s, %d shards\n", len(specs), len(test), s.params.Trials, s.params.Target, s.shards)
	jobs := Jobs(s.params, specs, s.shards)
	if rc.Executor != "" {
		// An executor block: each shard is a task of the executor.
		dirs, sums, cleanup, err := runExecutor(ctx, rc, jobs)
		if err != nil {
			return err
		}
		if err := Finish(ctx, rc.Dir, dirs, sums, s.dataset.Options(test), rc.Log); err != nil {
			return err
		}
		cleanup()
		return nil
	}
	clearStale(state, len(jobs), rc.Log)
	sums, err := runLocal(ctx, jobs, state, rc.Progress, rc.Log)
	if err != nil {
		return err
	}
	dirs := make([]string, len(jobs))
	for i := range jobs {
		dirs[i] = shardDir(state, i, len(jobs))
	}
	return Finish(ctx, rc.Dir, dirs, sums, s.dataset.Options(test), rc.Log)
}

// shardDir is the directory of shard i of n under the state directory.
func shardDir(state string, i, n int) string {
	return filepath.Join(state, fmt.Sprintf("shard-%d-of-%d", i, n))
}

// clearStale removes shard directories of another shard count that an
// interrupted attempt left in state: this attempt cannot use them.
func clearStale(state string, n int, log io.Writer) {
	ents, _ := os.ReadDir(state)
	for _, e := range ents {
		var i, m int
		if _, err := fmt.Sscanf(e.Name(), "shard-%d-of-%d", &i, &m); err == nil && m != n {
			fmt.Fprintf(log, "removing %s, left by an interrupted attempt with %d shards\n", e.Name(), m)
			_ = os.RemoveAll(filepath.Join(state, e.Name()))
		}
	}
}

// runLocal runs the jobs on one goroutine each, in shard directories under
// state, and returns the shards' summaries in shard order.
func runLocal(ctx context.Context, jobs []ShardJob, state string, rep progress.Reporter, log io.Writer) ([]*ShardSummary, error) {
	total := 0
	for _, j := range jobs {
		total += len(j.Workloads)
	}
	var mu sync.Mutex
	done, trials := 0, 0
	start := time.Now()
	report := func() {
		note := ""
		if s := time.Since(start).Seconds(); s > 0 && trials > 0 {
			note = fmt.Sprintf("%.1f trials/s", float64(trials)/s)
		}
		rep.Report(progress.Event{Done: int64(done), Total: int64(total), Unit: "workloads", Note: note})
	}
	report()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sums := make([]*ShardSummary, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			reused := 0
			sum, err := runShard(ctx, &jobs[i], shardDir(state, i, len(jobs)), func(w WorkloadSummary, old bool) {
				mu.Lock()
				defer mu.Unlock()
				done++
				if old {
					reused++
				} else {
					trials += w.Trials
				}
				report()
			})
			if err != nil {
				errs[i] = err
				cancel() // one failed shard fails the stage: stop the others
				return
			}
			sums[i] = sum
			mu.Lock()
			fmt.Fprintf(log, "%s\n", shardLine(sum, reused, time.Since(t0)))
			mu.Unlock()
		}()
	}
	wg.Wait()
	// The first real failure, rather than the cancellations it caused.
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	return sums, nil
}

// shardLine is the log line of a finished shard.
func shardLine(sum *ShardSummary, reused int, wall time.Duration) string {
	st := summarize(sum.Workloads)
	secs := 0.0
	for _, w := range sum.Workloads {
		secs += w.Seconds
	}
	what := fmt.Sprintf("%.1f s", wall.Seconds())
	switch {
	case reused == len(sum.Workloads) && reused > 0:
		what = "reused (finished by an earlier attempt)"
	case reused > 0:
		what += fmt.Sprintf(", %d workloads reused", reused)
	}
	rate := ""
	if secs > 0 {
		rate = fmt.Sprintf(", %.1f trials/s searching", float64(st.Trials)/secs)
	}
	return fmt.Sprintf("shard %d/%d: %d workloads, %d trials (%d valid)%s: %s", sum.Shard+1, sum.Shards, st.Workloads, st.Trials, st.Valid, rate, what)
}

// Finish merges the shard databases (the DBDir of each shard directory, in
// any order) into dir/db, builds the datasets (kernels/dataset) with opts,
// and writes them and stats.json into dir. sums are the shards' summaries;
// the log gets the summary of the whole harvest.
func Finish(ctx context.Context, dir string, shardDirs []string, sums []*ShardSummary, opts dataset.Options, log io.Writer) error {
	var ws []WorkloadSummary
	secs := 0.0
	for _, sum := range sums {
		ws = append(ws, sum.Workloads...)
		for _, w := range sum.Workloads {
			secs += w.Seconds
		}
	}
	srcs := make([]string, len(shardDirs))
	for i, d := range shardDirs {
		srcs[i] = filepath.Join(d, DBDir)
	}
	dbDir := filepath.Join(dir, OutDB)
	if err := os.MkdirAll(dbDir, 0o755); err != nil {
		return fmt.Errorf("harvest: %w", err)
	}
	problems, err := tunedb.Merge(ctx, dbDir, srcs...)
	if err != nil {
		return fmt.Errorf("harvest: merging the shards: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("harvest: merging the shards: a shard database is damaged: %s", problems[0])
	}
	db, err := tunedb.Load(dbDir)
	if err != nil {
		return fmt.Errorf("harvest: %w", err)
	}
	res, err := dataset.Build(ctx, db, opts)
	if err != nil {
		return fmt.Errorf("harvest: building the datasets: %w", err)
	}
	if err := dataset.Write(dir, res); err != nil {
		return fmt.Errorf("harvest: %w", err)
	}
	st := Stats{Stats: res.Stats, Search: summarize(ws)}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("harvest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, dataset.StatsFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("harvest: %w", err)
	}
	logSummary(log, st, secs)
	return nil
}

// logSummary writes the harvest's figures to the log: those of stats.json,
// and the search time (which no output holds: outputs are deterministic).
func logSummary(log io.Writer, st Stats, secs float64) {
	s := st.Search
	fmt.Fprintf(log, "searched %d workloads: %d trials, %d valid", s.Workloads, s.Trials, s.Valid)
	if secs > 0 {
		fmt.Fprintf(log, ", %.1f s of search (%.1f trials/s, %.3f s per workload)", secs, float64(s.Trials)/secs, secs/float64(max(1, s.Workloads)))
	}
	fmt.Fprintln(log)
	fmt.Fprintf(log, "failures by phase: %s\n", counts(s.FailuresByPhase))
	fmt.Fprintf(log, "stops by reason: %s\n", counts(s.Stops))
	for i, e := range s.Errors {
		if i == 5 {
			fmt.Fprintf(log, "... and %d more workloads not searched (stats.json lists them)\n", len(s.Errors)-i)
			break
		}
		fmt.Fprintf(log, "not searched: %s: %s\n", e.Label, e.Error)
	}
	d := st.Stats
	fmt.Fprintf(log, "datasets: %d construction, %d refinement examples; %d test construction tasks, %d test refinement prompts (%d test workloads)\n",
		d.Construction, d.Refinement, d.TestConstruction, d.TestRefinement, d.TestWorkloads)
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
