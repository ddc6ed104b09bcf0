package search

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/ir"
	"dragonx/kernels/latency"
	"dragonx/kernels/lower"
	"dragonx/kernels/numeric"
	"dragonx/kernels/postproc"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
)

func measureSource(t testing.TB, noise float64) *gpumodel.Model {
	t.Helper()
	m, err := gpumodel.New("h100-model", gpumodel.Options{Noise: noise, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// small are options for a quick search: a small population, TVM's other
// defaults.
func small(t testing.TB, trials int, seed int64) Options {
	return Options{Trials: trials, TrialsPerRound: 16, PopulationSize: 48, InitMinUnmeasured: 16, Seed: seed, Measure: measureSource(t, 0.02)}
}

// TestRunDeterministic: two searches with the same seed measure the same
// candidates and find the same best; the curve never increases, has one
// point per trial, and every trial is recorded in the database.
func TestRunDeterministic(t *testing.T) {
	ctx := context.Background()
	f := benchFunc(t, "GMM", 0)
	var runs []*Result
	for range 2 {
		db := NewMemoryDB()
		o := small(t, 40, 11)
		o.DB = db
		calls := 0
		o.Progress = func(p Progress) {
			calls++
			if p.Trials != calls || p.Total != 40 {
				t.Fatalf("progress %+v at call %d", p, calls)
			}
		}
		r, err := Run(ctx, f, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Trials != 40 || len(r.Curve) != 40 || db.Len(verdictHash(f)) != 40 || calls != 40 {
			t.Fatalf("trials %d, curve %d, records %d, progress calls %d; want 40", r.Trials, len(r.Curve), db.Len(verdictHash(f)), calls)
		}
		for i := 1; i < len(r.Curve); i++ {
			if r.Curve[i] > r.Curve[i-1] {
				t.Fatalf("curve increases at trial %d: %g > %g", i, r.Curve[i], r.Curve[i-1])
			}
		}
		if r.Best == nil || r.Valid == 0 || math.IsInf(r.BestLatencyS, 0) || r.Curve[len(r.Curve)-1] != r.BestLatencyS {
			t.Fatalf("no valid best: %+v", r)
		}
		if r.LatencySource != "model:h100" {
			t.Errorf("latency source %q, want model:h100", r.LatencySource)
		}
		if r.Stop != StopTrials || r.Stopped != "" {
			t.Errorf("stop %q (%q), want %q", r.Stop, r.Stopped, StopTrials)
		}
		runs = append(runs, r)
	}
	if runs[0].Best.Trace.String() != runs[1].Best.Trace.String() || runs[0].BestLatencyS != runs[1].BestLatencyS {
		t.Error("two runs with seed 11 found different bests")
	}
	for i := range runs[0].Curve {
		if runs[0].Curve[i] != runs[1].Curve[i] {
			t.Fatalf("curves differ at trial %d", i)
		}
	}
}

// TestRunUsesDatabase: a second search on the same database (another seed)
// records all its trials and never measures a schedule the first measured.
func TestRunUsesDatabase(t *testing.T) {
	ctx := context.Background()
	f := benchFunc(t, "GMM", 0)
	db := NewMemoryDB()
	o := small(t, 24, 3)
	o.DB = db
	r1, err := Run(ctx, f, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Seed = 4
	r2, err := Run(ctx, f, o)
	if err != nil {
		t.Fatal(err)
	}
	w := verdictHash(f)
	if db.Len(w) != r1.Trials+r2.Trials {
		t.Fatalf("%d records, want %d", db.Len(w), r1.Trials+r2.Trials)
	}
	seen := map[string]int{}
	for _, r := range db.recs[w] {
		seen[r.IRHash]++
		if seen[r.IRHash] > 1 {
			t.Fatalf("schedule %s measured twice", r.IRHash)
		}
	}
}

// TestRunCancelled: a cancelled search stops with the context's error and
// the result so far.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := benchFunc(t, "GMM", 0)
	o := small(t, 200, 5)
	o.Progress = func(p Progress) {
		if p.Trials == 5 {
			cancel()
		}
	}
	r, err := Run(ctx, f, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if r == nil || r.Trials != 5 {
		t.Fatalf("result %+v, want 5 trials", r)
	}
}

// TestRunBadOptions: missing trials or source are errors, not panics.
func TestRunBadOptions(t *testing.T) {
	f := benchFunc(t, "GMM", 0)
	if _, err := Run(context.Background(), f, Options{Trials: 10}); err == nil {
		t.Error("no error without a latency source")
	}
	if _, err := Run(context.Background(), f, Options{Measure: measureSource(t, 0)}); err == nil {
		t.Error("no error with 0 trials")
	}
}

func verdictHash(f *ir.PrimFunc) string { return verdict.Hash(f) }

// TestAnalyticModel: the analytic cost model scores a candidate by the
// inverse of the model's latency, so that the faster of two scores higher.
func TestAnalyticModel(t *testing.T) {
	ctx := context.Background()
	f := benchFunc(t, "GMM", 0)
	src := measureSource(t, 0)
	var cands []*Candidate
	for _, tr := range drawOK(t, f, 2, 4) {
		v := verdict.CheckTrace(ctx, f, tr, verdict.Options{Latency: src})
		if !v.OK {
			t.Fatalf("draw fails its check: %s", v.Error)
		}
		cands = append(cands, &Candidate{Trace: v.Trace(), Func: v.Func(), Hash: v.IRHash})
		got, err := AnalyticModel{Source: src}.Predict(ctx, cands[len(cands)-1:])
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 / *v.LatencyS; math.Abs(got[0]-want) > 1e-9*want {
			t.Errorf("score %g, want 1/latency %g", got[0], want)
		}
	}
}

// rejectAll is a postprocessor that rejects every schedule.
type rejectAll struct{}

func (rejectAll) Name() string { return "RejectAll" }
func (rejectAll) Apply(context.Context, *trace.Session) error {
	return errors.New("rejected by the test")
}

// TestRunTooFewSamples: when a round cannot draw InitMinUnmeasured valid
// schedules, the search ends without an error and says why, as TVM's does.
func TestRunTooFewSamples(t *testing.T) {
	f := benchFunc(t, "GMM", 0)
	o := small(t, 40, 1)
	o.Sample.Postprocs = []postproc.Postproc{rejectAll{}}
	r, err := Run(context.Background(), f, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Trials != 0 || !strings.Contains(r.Stopped, "too few valid samples: 0 of 240 draws") || r.Stop != StopTooFew {
		t.Fatalf("trials %d, stopped %q (%q)", r.Trials, r.Stopped, r.Stop)
	}
}

// failingSource is a latency source that fails every program.
type failingSource struct{}

func (failingSource) Name() string { return "failing" }
func (failingSource) Latency(context.Context, *lower.Program) (latency.Estimate, error) {
	return latency.Estimate{}, errors.New("the test's source fails")
}

// TestRunRecordsFailurePhase: a candidate whose latency cannot be taken is
// recorded as a failure of the latency phase, with the source's error.
func TestRunRecordsFailurePhase(t *testing.T) {
	f := benchFunc(t, "GMM", 0)
	o := small(t, 5, 1)
	o.Measure = failingSource{}
	db := NewMemoryDB()
	o.DB = db
	r, err := Run(context.Background(), f, o)
	if err != nil {
		t.Fatal(err)
	}
	recs := db.recs[verdictHash(f)]
	if r.Trials != 5 || r.Valid != 0 || len(recs) != 5 {
		t.Fatalf("trials %d, valid %d, records %d; want 5, 0, 5", r.Trials, r.Valid, len(recs))
	}
	for _, rec := range recs {
		if rec.OK || rec.Phase != verdict.PhaseLatency || !strings.Contains(rec.Error, "the test's source fails") {
			t.Errorf("record ok=%v phase %q error %q: want a latency failure", rec.OK, rec.Phase, rec.Error)
		}
	}
}

// TestRunNumeric: with Options.Numeric, each measured candidate also passes
// the numerical gate (C with a GPU's semantics against a float64
// reference) before its latency is taken.
func TestRunNumeric(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	f := benchFunc(t, "GMM", 0)
	o := small(t, 3, 1)
	o.Numeric = true
	cache := t.TempDir()
	o.VerdictOptions.Numeric = numeric.Options{CacheDir: cache}
	db := NewMemoryDB()
	o.DB = db
	r, err := Run(context.Background(), f, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Trials != 3 || r.Valid != 3 {
		t.Fatalf("trials %d, valid %d; want 3, 3 (errors: %v)", r.Trials, r.Valid, db.recs)
	}
	if ents, err := os.ReadDir(cache); err != nil || len(ents) == 0 {
		t.Errorf("the numeric gate left nothing in its cache (%v): it did not run", err)
	}
}
