package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"dragonx/kernels/cudabench"
	"dragonx/kernels/encode"
	"dragonx/kernels/judge"
	"dragonx/kernels/latency"
	"dragonx/kernels/sample"
	"dragonx/kernels/search"
	"dragonx/kernels/trace"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/verdict"
)

// baseline judges baseline b's attempts at the tasks it has none at yet,
// the tasks on the judging workers, and records each task's attempts.
func (r *run) baseline(ctx context.Context, b string) error {
	name := BaselinePrefix + b
	pending := r.pending(name, "")
	if len(pending) == 0 {
		r.logf("%s: every task done by an earlier attempt", name)
		return nil
	}
	bs := &baselines{r: r}
	if b == BaselineDatasetBest {
		db, err := tunedb.Load(filepath.Join(r.dir, filepath.FromSlash(r.sp.Files["db"])))
		if err != nil {
			return fmt.Errorf("the tuning database: %w", err)
		}
		bs.db = db
	}
	start := time.Now()
	var mu sync.Mutex
	done := 0
	err := parallel(ctx, len(pending), r.sp.Threads, func(ctx context.Context, i int) error {
		t := pending[i]
		base, err := r.baselineUS(ctx, t)
		if err != nil {
			return err
		}
		atts, err := bs.attempts(ctx, b, t, base)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name(), err)
		}
		if err := r.st.put(atts); err != nil {
			return err
		}
		mu.Lock()
		done++
		d := done
		mu.Unlock()
		r.progress(name, d, len(pending), start)
		return nil
	})
	if err != nil {
		return err
	}
	r.logf("%s: %d tasks in %.1f s", name, len(pending), time.Since(start).Seconds())
	return nil
}

// baselines holds what one baseline's tasks share: per workload, the
// design space (random), the search's result (search), and the database
// (dataset_best).
type baselines struct {
	r  *run
	db *tunedb.DB

	mu     sync.Mutex
	spaces map[string]*once[*sample.Space]
	scores map[string]*once[*judge.Result]
}

// once is a value computed once.
type once[T any] struct {
	o   sync.Once
	v   T
	err error
}

func (o *once[T]) get(f func() (T, error)) (T, error) {
	o.o.Do(func() { o.v, o.err = f() })
	return o.v, o.err
}

func onceOf[T any](mu *sync.Mutex, m *map[string]*once[T], key string) *once[T] {
	mu.Lock()
	defer mu.Unlock()
	if *m == nil {
		*m = map[string]*once[T]{}
	}
	o, ok := (*m)[key]
	if !ok {
		o = &once[T]{}
		(*m)[key] = o
	}
	return o
}

// attempts returns baseline b's attempts at task t.
func (bs *baselines) attempts(ctx context.Context, b string, t *Task, base *float64) ([]*Attempt, error) {
	r := bs.r
	name := BaselinePrefix + b
	w, err := r.js.workload(t)
	if err != nil {
		return nil, err
	}
	switch b {
	case BaselineUnscheduled:
		res, err := w.unscheduled(ctx)
		if err != nil {
			return nil, err
		}
		return []*Attempt{r.attempt(name, "", t, 0, false, res, base, 0)}, nil

	case BaselineRandom:
		// As many design-space samples as a policy's attempts, each
		// drawn with its own seed and judged as a policy's script.
		sp, err := onceOf(&bs.mu, &bs.spaces, t.Hash).get(func() (*sample.Space, error) {
			return sample.NewSpace(ctx, w.f, r.sp.Seed, sample.Options{})
		})
		if err != nil {
			return nil, fmt.Errorf("the design space: %w", err)
		}
		var out []*Attempt
		for i := range r.sp.rowsPerTask() {
			d, err := sp.Draw(ctx, RowSeed(r.sp.Seed, name, t.Kind, t.Index, i), 0)
			if err != nil {
				return nil, err
			}
			if !d.OK() {
				// The sampler's rejection is the static verdict's
				// (kernels/sample): the draw fails where its script
				// would.
				a := r.failed(name, "", t, i, false, d.Rejection.Err.Error(), base)
				a.Phase = string(d.Rejection.Phase)
				out = append(out, a)
				continue
			}
			res, err := bs.judgeTrace(ctx, w, d.Trace)
			if err != nil {
				return nil, err
			}
			out = append(out, r.attempt(name, "", t, i, false, res, base, 0))
		}
		return out, nil

	case BaselineSearch:
		// The evolutionary search's best, per workload (a refinement
		// prompt's workload may be a construction task's too).
		res, err := onceOf(&bs.mu, &bs.scores, t.Hash).get(func() (*judge.Result, error) { return bs.search(ctx, w, t) })
		if err != nil {
			return nil, err
		}
		if res == nil {
			return []*Attempt{r.failed(name, "", t, 0, false, fmt.Sprintf("the search found no valid schedule in %d trials", r.sp.SearchTrials), base)}, nil
		}
		return []*Attempt{r.attempt(name, "", t, 0, false, res, base, 0)}, nil

	case BaselineDatasetBest:
		res, why, err := bs.datasetBest(ctx, w, t)
		if err != nil {
			return nil, err
		}
		if res == nil {
			return []*Attempt{r.failed(name, "", t, 0, false, why, base)}, nil
		}
		return []*Attempt{r.attempt(name, "", t, 0, false, res, base, 0)}, nil
	}
	return nil, fmt.Errorf("unknown baseline %q", b)
}

// judgeTrace judges a full trace as the policies' scripts are judged: its
// script (kernels/encode) through the judge.
func (bs *baselines) judgeTrace(ctx context.Context, w *workloadJudge, tr *trace.Trace) (*judge.Result, error) {
	script, err := encode.Encode(w.f, tr)
	if err != nil {
		return &judge.Result{Verdict: verdict.Fail(verdict.PhaseParse, fmt.Errorf("the trace has no script: %w", err))}, nil
	}
	return w.judge.JudgeScript(ctx, script)
}

// search runs the evolutionary search on t's workload (search_trials
// trials, seeded from the seed and the workload) measuring with the
// target, its candidates checked as search_check says, and judges its best
// schedule (nil when it found none).
func (bs *baselines) search(ctx context.Context, w *workloadJudge, t *Task) (*judge.Result, error) {
	r := bs.r
	var src latency.Source = r.js.opts.Latency
	if r.js.cuda {
		src = &cudabench.Source{Workload: w.f}
	}
	res, err := search.Run(ctx, w.f, search.Options{
		Trials: r.sp.SearchTrials, Seed: RowSeed(r.sp.Seed, BaselinePrefix+BaselineSearch, "workload "+t.Hash, 0, 0),
		Measure: src, Numeric: r.sp.Numeric && r.sp.SearchCheck == SearchNumeric, VerdictOptions: verdict.Options{Gate: r.js.opts.Gate},
	})
	if err != nil {
		return nil, fmt.Errorf("the search: %w", err)
	}
	if res.Best == nil {
		return nil, nil
	}
	return bs.judgeTrace(ctx, w, res.Best.Trace)
}

// datasetBest judges the best valid record of t's workload in the tuning
// database (nil and why when it holds none).
func (bs *baselines) datasetBest(ctx context.Context, w *workloadJudge, t *Task) (*judge.Result, string, error) {
	i, ok := bs.db.Lookup(t.Spec)
	if !ok {
		return nil, "the tuning database does not hold the workload", nil
	}
	top := bs.db.TopK(i, 1)
	if len(top) == 0 {
		return nil, "the tuning database holds no valid record of the workload", nil
	}
	res, err := bs.judgeTrace(ctx, w, top[0].Trace)
	return res, "", err
}
