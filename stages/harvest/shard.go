package harvest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"dragonx/internal/progress"
	"dragonx/internal/safeio"
	"dragonx/kernels/cudabench"
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/latency"
	"dragonx/kernels/numeric"
	"dragonx/kernels/search"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

// Params are the parameters of the searches (the part of a harvest stage a
// shard needs). Zero search knobs are resolved to TVM's defaults by Decode,
// so that equal searches have equal Params.
type Params struct {
	// Target is h100-model, h200-model (kernels/gpumodel) or cuda (a GPU).
	Target string `json:"target"`
	// Trials is the number of candidates measured per workload.
	Trials int `json:"trials"`
	// Seed seeds every search with the workload's spec hash.
	Seed int64 `json:"seed"`
	// Noise is the σ of the model targets' lognormal noise (0 for cuda).
	Noise  float64       `json:"noise"`
	Search SearchOptions `json:"search"`
}

// SearchOptions are the knobs of search.Options a harvest exposes.
type SearchOptions struct {
	// CostModel is random, analytic (the target's model without noise; the
	// H100 model for cuda) or gbt (gradient-boosted trees trained online).
	CostModel string `json:"cost_model"`
	// Numeric adds the numerical gate to every measured candidate.
	Numeric bool `json:"numeric"`
	// Population, TrialsPerRound, Generations and EpsGreedy are
	// search.Options' PopulationSize, TrialsPerRound, GeneticNumIters and
	// EpsGreedy.
	Population     int     `json:"population"`
	TrialsPerRound int     `json:"trials_per_round"`
	Generations    int     `json:"generations"`
	EpsGreedy      float64 `json:"eps_greedy"`
}

// Cost model names.
const (
	ModelRandom   = "random"
	ModelAnalytic = "analytic"
	ModelGBT      = "gbt"
)

// TargetCUDA is the measured target.
const TargetCUDA = "cuda"

// Targets returns the target names a harvest accepts.
func Targets() []string { return append(gpumodel.Targets(), TargetCUDA) }

// Check reports the first parameter out of its range.
func (p *Params) Check() error {
	switch {
	case !slices.Contains(Targets(), p.Target):
		return fmt.Errorf("harvest: target %q: want one of %s", p.Target, strings.Join(Targets(), ", "))
	case p.Trials < 1:
		return fmt.Errorf("harvest: trials %d: want at least 1", p.Trials)
	case p.Noise < 0 || p.Noise > 1 || math.IsNaN(p.Noise):
		return fmt.Errorf("harvest: noise %v: want a σ in [0, 1]", p.Noise)
	case p.Target == TargetCUDA && p.Noise != 0:
		return fmt.Errorf("harvest: noise %v: the cuda target measures, it has no model noise", p.Noise)
	}
	s := p.Search
	switch {
	case s.CostModel != ModelRandom && s.CostModel != ModelAnalytic && s.CostModel != ModelGBT:
		return fmt.Errorf("harvest: cost model %q: want random, analytic or gbt", s.CostModel)
	case s.Population < 1 || s.TrialsPerRound < 1 || s.Generations < 1:
		return fmt.Errorf("harvest: population %d, trials per round %d, generations %d: want at least 1 each", s.Population, s.TrialsPerRound, s.Generations)
	case !(s.EpsGreedy > 0 && s.EpsGreedy <= 1):
		return fmt.Errorf("harvest: eps greedy %v: want (0, 1]", s.EpsGreedy)
	}
	return nil
}

// ShardJob is the work of one shard: the parameters, the shard's index and
// the number of shards, and the workloads of the shard (those whose
// tunedb.ShardOf is Shard), in the order they are tuned. It round-trips
// through JSON, so that another process (a cluster task) can run it.
type ShardJob struct {
	// Version is the harvest kind's version that wrote the job; RunShard
	// refuses another.
	Version   string           `json:"version"`
	Params    Params           `json:"params"`
	Shard     int              `json:"shard"`
	Shards    int              `json:"shards"`
	Workloads []*workload.Spec `json:"workloads"`
}

// Check reports what makes the job unusable.
func (j *ShardJob) Check() error {
	if j.Version != Version {
		return fmt.Errorf("harvest: shard job of version %q, this dragonx runs version %s", j.Version, Version)
	}
	if j.Shards < 1 || j.Shard < 0 || j.Shard >= j.Shards {
		return fmt.Errorf("harvest: shard %d of %d: want 0 <= shard < shards", j.Shard, j.Shards)
	}
	if err := j.Params.Check(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, s := range j.Workloads {
		if s == nil {
			return fmt.Errorf("harvest: shard job workload %d is null", i)
		}
		if got := tunedb.ShardOf(s, j.Shards); got != j.Shard {
			return fmt.Errorf("harvest: workload %s belongs to shard %d of %d, not %d", s.Label(), got, j.Shards, j.Shard)
		}
		if seen[s.Hash()] {
			return fmt.Errorf("harvest: workload %s appears twice in shard %d", s.Label(), j.Shard)
		}
		seen[s.Hash()] = true
	}
	return nil
}

// ParseShardJob reads a job written with encoding/json, strictly (unknown
// fields are an error), and checks it.
func ParseShardJob(b []byte) (*ShardJob, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var j ShardJob
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("harvest: reading a shard job: %w", err)
	}
	if dec.More() {
		return nil, errors.New("harvest: reading a shard job: data after the job object")
	}
	if err := j.Check(); err != nil {
		return nil, err
	}
	return &j, nil
}

// WorkloadSummary is the outcome of one workload's search.
type WorkloadSummary struct {
	Hash  string `json:"hash"`
	Label string `json:"label"`
	// Trials measured, Valid of them passed; Failures counts the others by
	// the verdict phase that failed (verify, numeric, latency).
	Trials   int            `json:"trials"`
	Valid    int            `json:"valid"`
	Failures map[string]int `json:"failures,omitempty"`
	// Stop is search.Result.Stop; Error says why the search could not run
	// at all (the workload does not build, its design space is empty).
	Stop         string   `json:"stop,omitempty"`
	Error        string   `json:"error,omitempty"`
	BestLatencyS *float64 `json:"best_latency_s,omitempty"`
	// Seconds is the search's wall time (for the log, never an output).
	Seconds float64 `json:"seconds"`
}

// ShardSummary is what a finished shard did.
type ShardSummary struct {
	Shard     int               `json:"shard"`
	Shards    int               `json:"shards"`
	Workloads []WorkloadSummary `json:"workloads"`
}

// The layout of a shard directory.
const (
	// ShardMarker is the shard's completion marker, written last by an
	// atomic rename; a valid one means DBDir holds the shard's database.
	ShardMarker = "shard.json"
	// DBDir is the shard's tuning database (kernels/tunedb).
	DBDir = "db"
	// workDir holds one database per workload while the shard runs,
	// each with its own marker; removed once the shard is done.
	workDir        = "workloads"
	workloadMarker = "done.json"
)

type shardMarker struct {
	Job     string       `json:"job"` // jobDigest
	Summary ShardSummary `json:"summary"`
}

type workloadMarkerFile struct {
	Params  string          `json:"params"` // paramsDigest
	Summary WorkloadSummary `json:"summary"`
}

func digestJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a NaN or infinite number fails, which Check refuses: ""
		// matches no marker.
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func paramsDigest(p Params) string {
	return digestJSON(struct {
		Version string `json:"version"`
		Params  Params `json:"params"`
	}{Version, p})
}

func jobDigest(j *ShardJob) string { return digestJSON(j) }

// WorkloadSeed is the seed of one workload's search (and of the model's
// noise): a function of the harvest seed and the workload's spec hash, never
// of its position, so that the results do not depend on the sharding.
func WorkloadSeed(seed int64, specHash string) int64 {
	sum := sha256.Sum256([]byte(fmt.Sprintf("dragonx/harvest %d %s", seed, specHash)))
	return int64(binary.BigEndian.Uint64(sum[:8]) >> 1)
}

// ShardDone reports whether dir holds the finished result of job: a valid
// marker for this very job and its database.
func ShardDone(dir string, job *ShardJob) (*ShardSummary, bool) {
	b, err := readMarker(filepath.Join(dir, ShardMarker))
	if err != nil {
		return nil, false
	}
	var m shardMarker
	if err := json.Unmarshal(b, &m); err != nil || m.Job == "" || m.Job != jobDigest(job) {
		return nil, false
	}
	if st, err := os.Stat(filepath.Join(dir, DBDir)); err != nil || !st.IsDir() {
		return nil, false
	}
	return &m.Summary, true
}

// RunShard tunes the workloads of job into dir: a tuning database in
// dir/db and the completion marker dir/shard.json, written last by an
// atomic rename. A shard already finished in dir is not run again. An
// interrupted shard resumes at workload granularity: each workload is tuned
// into its own database with its own marker, and those finished are reused;
// the shard's database is their merge in the canonical order, so the result
// is byte for byte the same. rep receives workloads done out of the shard's.
// Everything runs on the calling goroutine.
func RunShard(ctx context.Context, job ShardJob, dir string, rep progress.Reporter) error {
	if rep == nil {
		rep = progress.Nop{}
	}
	n := len(job.Workloads)
	done, trials := 0, 0
	start := time.Now()
	_, err := runShard(ctx, &job, dir, func(w WorkloadSummary, reused bool) {
		done++
		if !reused {
			trials += w.Trials
		}
		rep.Report(progressEvent(done, n, trials, start))
	})
	return err
}

// progressEvent is workloads done out of total, with the trials/s measured
// since start in the note.
func progressEvent(done, total, trials int, start time.Time) progress.Event {
	note := ""
	if s := time.Since(start).Seconds(); s > 0 && trials > 0 {
		note = fmt.Sprintf("%.1f trials/s", float64(trials)/s)
	}
	return progress.Event{Done: int64(done), Total: int64(total), Unit: "workloads", Note: note}
}

// runShard is RunShard with a callback per workload (reused: finished by an
// earlier attempt). It returns the shard's summary.
func runShard(ctx context.Context, job *ShardJob, dir string, onWorkload func(WorkloadSummary, bool)) (*ShardSummary, error) {
	if err := job.Check(); err != nil {
		return nil, err
	}
	if sum, ok := ShardDone(dir, job); ok {
		for _, w := range sum.Workloads {
			onWorkload(w, true)
		}
		return sum, nil
	}
	if err := os.MkdirAll(filepath.Join(dir, workDir), 0o755); err != nil {
		return nil, fmt.Errorf("harvest: shard %d: %w", job.Shard, err)
	}
	pd := paramsDigest(job.Params)
	sum := &ShardSummary{Shard: job.Shard, Shards: job.Shards}
	var dbs []string
	for _, s := range job.Workloads {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("harvest: shard %d interrupted: %w", job.Shard, err)
		}
		wdir := filepath.Join(dir, workDir, s.Hash())
		w, reused, err := tuneOnce(ctx, job.Params, pd, s, wdir)
		if err != nil {
			return nil, fmt.Errorf("harvest: shard %d: %w", job.Shard, err)
		}
		sum.Workloads = append(sum.Workloads, *w)
		dbs = append(dbs, wdir)
		onWorkload(*w, reused)
	}
	// The shard's database: the merge of its workloads', canonical order.
	dbDir := filepath.Join(dir, DBDir)
	if err := os.RemoveAll(dbDir); err != nil {
		return nil, fmt.Errorf("harvest: shard %d: %w", job.Shard, err)
	}
	if err := os.MkdirAll(dbDir, 0o755); err != nil {
		return nil, fmt.Errorf("harvest: shard %d: %w", job.Shard, err)
	}
	problems, err := tunedb.Merge(ctx, dbDir, dbs...)
	if err != nil {
		return nil, fmt.Errorf("harvest: shard %d: merging its workloads: %w", job.Shard, err)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("harvest: shard %d: a workload database is damaged: %s", job.Shard, problems[0])
	}
	if err := writeAtomic(filepath.Join(dir, ShardMarker), shardMarker{Job: jobDigest(job), Summary: *sum}); err != nil {
		return nil, fmt.Errorf("harvest: shard %d: %w", job.Shard, err)
	}
	// The per-workload databases have served their purpose.
	_ = os.RemoveAll(filepath.Join(dir, workDir))
	return sum, nil
}

// tuneOnce returns the summary of a workload finished in wdir by an earlier
// attempt, or tunes it there (after clearing what an unfinished attempt
// left).
func tuneOnce(ctx context.Context, p Params, pd string, s *workload.Spec, wdir string) (*WorkloadSummary, bool, error) {
	if b, err := readMarker(filepath.Join(wdir, workloadMarker)); err == nil {
		var m workloadMarkerFile
		if json.Unmarshal(b, &m) == nil && m.Params == pd && m.Summary.Hash == s.Hash() {
			return &m.Summary, true, nil
		}
	}
	if err := os.RemoveAll(wdir); err != nil {
		return nil, false, err
	}
	w, err := tune(ctx, p, s, wdir)
	if err != nil {
		return nil, false, err
	}
	if err := writeAtomic(filepath.Join(wdir, workloadMarker), workloadMarkerFile{Params: pd, Summary: *w}); err != nil {
		return nil, false, err
	}
	return w, false, nil
}

// countingDB counts the failed measurements of a search by phase, and
// keeps the database's own error (a full disk fails the shard; it is not
// the workload's fault).
type countingDB struct {
	search.Database
	failures map[string]int
	err      error
}

func (c *countingDB) Commit(ctx context.Context, r search.Record) error {
	if !r.OK {
		ph := string(r.Phase)
		if ph == "" {
			ph = "unknown"
		}
		c.failures[ph]++
	}
	err := c.Database.Commit(ctx, r)
	if err != nil && c.err == nil {
		c.err = err
	}
	return err
}

// tune searches one workload into a fresh database in wdir. An error is
// returned only when the search was interrupted or the database failed; a
// workload that cannot be searched is summarised with its Error.
func tune(ctx context.Context, p Params, s *workload.Spec, wdir string) (*WorkloadSummary, error) {
	start := time.Now()
	w := &WorkloadSummary{Hash: s.Hash(), Label: s.Label()}
	db, err := tunedb.Open(wdir)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	f, err := s.Build()
	if err != nil {
		// Recorded without records: dataset.Build counts it as a build
		// failure.
		if _, cerr := db.CommitWorkload(s); cerr != nil {
			return nil, cerr
		}
		w.Error = fmt.Sprintf("the workload does not build: %v", err)
		return w, db.Close()
	}
	seed := WorkloadSeed(p.Seed, s.Hash())
	var src latency.Source
	if p.Target == TargetCUDA {
		src = &cudabench.Source{Workload: f}
	} else if src, err = gpumodel.New(p.Target, gpumodel.Options{Noise: p.Noise, Seed: uint64(seed)}); err != nil {
		return nil, err
	}
	var cm search.CostModel
	switch p.Search.CostModel {
	case ModelRandom:
		cm = search.NewRandomModel(seed)
	case ModelGBT:
		cm = search.NewGBTModel(seed)
	case ModelAnalytic:
		mt := p.Target
		if mt == TargetCUDA {
			mt = gpumodel.Targets()[0]
		}
		m, err := gpumodel.New(mt, gpumodel.Options{})
		if err != nil {
			return nil, err
		}
		cm = search.AnalyticModel{Source: m}
	default:
		return nil, fmt.Errorf("harvest: cost model %q", p.Search.CostModel)
	}
	tdb, err := search.NewTuneDB(ctx, db, s, f, search.TargetConfig(p.Target))
	if err != nil {
		return nil, err
	}
	var vo verdict.Options
	if p.Search.Numeric {
		// One gate for the workload's checks: it looks the compiler up once.
		if vo.Gate, err = numeric.New(numeric.Options{}); err != nil {
			return nil, err
		}
	}
	cdb := &countingDB{Database: tdb, failures: map[string]int{}}
	res, err := search.Run(ctx, f, search.Options{
		Trials:          p.Trials,
		TrialsPerRound:  p.Search.TrialsPerRound,
		PopulationSize:  p.Search.Population,
		GeneticNumIters: p.Search.Generations,
		EpsGreedy:       p.Search.EpsGreedy,
		Seed:            seed,
		Model:           cm,
		Measure:         src,
		Numeric:         p.Search.Numeric,
		VerdictOptions:  vo,
		DB:              cdb,
	})
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, fmt.Errorf("%s interrupted: %w", s.Label(), ctxErr)
	}
	if cdb.err != nil {
		return nil, fmt.Errorf("%s: the tuning database: %w", s.Label(), cdb.err)
	}
	if err != nil {
		// The design space could not be built, or the search failed on
		// this workload: record why and go on with the others.
		w.Error = err.Error()
	}
	if res != nil {
		w.Trials, w.Valid, w.Stop = res.Trials, res.Valid, res.Stop
		if res.Best != nil {
			l := res.BestLatencyS
			w.BestLatencyS = &l
		}
	}
	if len(cdb.failures) > 0 {
		w.Failures = cdb.failures
	}
	w.Seconds = time.Since(start).Seconds()
	if err := db.Close(); err != nil {
		return nil, err
	}
	return w, nil
}

// writeAtomic writes v as JSON to path with safeio.WriteAtomic: a reader
// sees the whole file or none, and whatever was at path (a planted link) is
// replaced, not written through.
func writeAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return safeio.WriteAtomic(path, func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err })
}

// maxMarker bounds a marker file of the state directory (a summary of a
// shard or a workload: kilobytes).
const maxMarker = 16 << 20

// readMarker reads a marker file of the state directory through safeio (a
// regular file, no link, no pipe, capped).
func readMarker(path string) ([]byte, error) {
	return safeio.ReadFile(path, maxMarker, safeio.Options{NoFollow: true})
}

// SearchStats are the search figures of a harvest, in stats.json. They are
// deterministic: timings go to the log only.
type SearchStats struct {
	Workloads int `json:"workloads"`
	Trials    int `json:"trials"`
	Valid     int `json:"valid"`
	// FailuresByPhase counts the failed measurements by verdict phase.
	FailuresByPhase map[string]int `json:"failures_by_phase"`
	// Stops counts the searches by why they ended (search.Result.Stop):
	// trials, too_few_samples, nothing_new.
	Stops map[string]int `json:"stops"`
	// Errors are the workloads whose search could not run, by spec hash.
	Errors []WorkloadError `json:"errors,omitempty"`
}

// WorkloadError is a workload whose search could not run.
type WorkloadError struct {
	Hash  string `json:"hash"`
	Label string `json:"label"`
	Error string `json:"error"`
}

// summarize adds up the workloads' summaries, sorted by spec hash so that
// the result does not depend on the sharding.
func summarize(ws []WorkloadSummary) SearchStats {
	ws = slices.Clone(ws)
	sort.Slice(ws, func(i, j int) bool { return ws[i].Hash < ws[j].Hash })
	st := SearchStats{FailuresByPhase: map[string]int{}, Stops: map[string]int{}}
	for _, w := range ws {
		st.Workloads++
		st.Trials += w.Trials
		st.Valid += w.Valid
		for ph, n := range w.Failures {
			st.FailuresByPhase[ph] += n
		}
		if w.Stop != "" {
			st.Stops[w.Stop]++
		}
		if w.Error != "" {
			st.Errors = append(st.Errors, WorkloadError{Hash: w.Hash, Label: w.Label, Error: w.Error})
		}
	}
	return st
}
