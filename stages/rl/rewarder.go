package rl

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

	"dragonx/dragon/grpo"
	"dragonx/kernels/cudabench"
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/judge"
	"dragonx/kernels/latency"
	"dragonx/kernels/numeric"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
	"dragonx/stages/sft"
)

// RewarderOptions configure a Rewarder.
type RewarderOptions struct {
	// Vocab is the vocabulary of the samples' ids.
	Vocab *vocab.Vocab
	// Numeric configures the numerical gate (gate numeric): its seed and
	// cache directory.
	Numeric numeric.Options
	// Workers is how many samples are judged at once; 0 means GOMAXPROCS
	// (1 for target cuda: one GPU measures one program at a time).
	Workers int
	// Grammar returns the grammar a decisions-format task's samples
	// expand with (sft.Format.Expand): the one they were sampled under,
	// or the plain one. Needed only with such tasks.
	Grammar func(Task) *sft.LazyGrammar
}

// Rewarder judges the samples of the training tasks (kernels/judge, one
// judge per workload built once) and scores them with a RewardSpec.
// It is safe for concurrent use.
type Rewarder struct {
	spec    RewardSpec
	tasks   map[string]*taskJudge
	workers int

	mu      sync.Mutex
	pending []SampleLog // Reward's logs since the last TakeLogs
}

var _ grpo.Rewarder = (*Rewarder)(nil)

// Reward implements grpo.Rewarder: it judges and scores the samples of
// p (p.ID is a task's ID) and keeps their logs for TakeLogs.
func (rw *Rewarder) Reward(ctx context.Context, p grpo.Prompt, samples [][]int) ([]grpo.Reward, error) {
	logs, err := rw.Judge(ctx, p.ID, samples)
	if err != nil {
		return nil, err
	}
	out := make([]grpo.Reward, len(logs))
	for i, l := range logs {
		out[i] = grpo.Reward{Total: l.Total, Components: l.Components()}
	}
	rw.mu.Lock()
	rw.pending = append(rw.pending, logs...)
	rw.mu.Unlock()
	return out, nil
}

// TakeLogs returns the logs of the samples Reward scored since the last
// call, in the order of the calls (a GRPO step's groups in order).
func (rw *Rewarder) TakeLogs() []SampleLog {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	p := rw.pending
	rw.pending = nil
	return p
}

// taskJudge is a task with its judges and baseline.
type taskJudge struct {
	task  Task
	judge *judge.Judge
	// grammar expands a decisions-format task's samples (nil in script
	// format).
	grammar *sft.LazyGrammar
	// baseJudge judges the baseline script (nil when the bonus needs no
	// baseline).
	baseJudge *judge.Judge

	// The baseline, judged on the task's first use: base is nil when the
	// bonus needs none or the task has none (baseErr says why).
	mu      sync.Mutex
	done    bool
	base    *Baseline
	baseErr string
}

// baseline returns the task's baseline, judging it on first use.
func (tj *taskJudge) baseline(ctx context.Context, spec RewardSpec) (*Baseline, string, error) {
	tj.mu.Lock()
	defer tj.mu.Unlock()
	if tj.done || tj.baseJudge == nil || spec.Bonus == BonusNone {
		return tj.base, tj.baseErr, nil
	}
	base, why, err := baseline(ctx, spec, tj.task, tj.baseJudge)
	if err != nil {
		return nil, "", err // not cached: a cancelled judgement is retried
	}
	tj.base, tj.baseErr, tj.done = base, why, true
	return base, why, nil
}

// SampleLog is a judged sample: one line of samples.jsonl (the runner
// adds the step).
type SampleLog struct {
	Step   int    `json:"step"`
	Task   string `json:"task"`
	Sample int    `json:"sample"`
	Tokens int    `json:"tokens"`
	SampleReward
	// Error is the judge's reason for a failed phase.
	Error string `json:"error,omitempty"`
	// BaselineError says why the task has no baseline.
	BaselineError string `json:"baseline_error,omitempty"`
}

// latencySource returns the measured latency source (target cuda) for the
// workload of judgeOf's judge.
func latencySource(judgeOf func() (*judge.Judge, error), numericOpts numeric.Options) (latency.Source, error) {
	j, err := judgeOf()
	if err != nil {
		return nil, err
	}
	f, err := j.Spec().Build()
	if err != nil {
		return nil, err
	}
	return &cudabench.Source{Workload: f, Options: cudabench.Options{Seed: numericOpts.Seed, NumericCache: numericOpts.CacheDir}}, nil
}

// NewRewarder builds a judge per workload of the tasks. A task's baseline
// (when the bonus needs one) is judged on the task's first use, with the
// static verdict and the latency on the target: a run judges the
// baselines of the tasks it draws, not of all.
func NewRewarder(ctx context.Context, spec RewardSpec, tasks []Task, opts RewarderOptions) (*Rewarder, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	rw := &Rewarder{spec: spec, tasks: map[string]*taskJudge{}, workers: opts.Workers}
	if rw.workers <= 0 {
		rw.workers = runtime.GOMAXPROCS(0)
		if spec.Target == TargetCUDA {
			rw.workers = 1
		}
	}
	var gate *numeric.Gate
	if spec.JudgeUntil() == verdict.PhaseNumeric {
		var err error
		if gate, err = numeric.New(opts.Numeric); err != nil {
			return nil, fmt.Errorf("rl: the numerical gate: %w", err)
		}
	}
	// The models' latency source is shared by every judge (it is safe for
	// concurrent use); a measurement needs its workload (latencySource).
	var model latency.Source
	if spec.NeedsLatency() && spec.Target != TargetCUDA {
		var err error
		if model, err = gpumodel.New(spec.Target, gpumodel.Options{}); err != nil {
			return nil, fmt.Errorf("rl: %w", err)
		}
	}
	type judges struct{ sample, base *judge.Judge }
	byWorkload := map[string]judges{}
	for _, t := range tasks {
		if _, dup := rw.tasks[t.ID]; dup {
			return nil, fmt.Errorf("rl: two tasks are named %s", t.ID)
		}
		if t.Spec == nil {
			return nil, fmt.Errorf("rl: task %s has no workload", t.ID)
		}
		key := t.Spec.Hash()
		js, ok := byWorkload[key]
		if !ok {
			src := model
			if spec.NeedsLatency() && model == nil {
				var err error
				plain := func() (*judge.Judge, error) {
					return judge.New(t.Spec, judge.Options{Until: judge.PhaseDecode, Vocab: opts.Vocab})
				}
				if src, err = latencySource(plain, opts.Numeric); err != nil {
					return nil, fmt.Errorf("rl: task %s: the latency source: %w", t.ID, err)
				}
			}
			var err error
			if js.sample, err = judge.New(t.Spec, judge.Options{Until: spec.JudgeUntil(), Latency: src, Gate: gate, Vocab: opts.Vocab}); err != nil {
				return nil, fmt.Errorf("rl: task %s: %w", t.ID, err)
			}
			if src != nil {
				if js.base, err = judge.New(t.Spec, judge.Options{Until: verdict.PhaseVerify, Latency: src, Vocab: opts.Vocab}); err != nil {
					return nil, fmt.Errorf("rl: task %s: %w", t.ID, err)
				}
			}
			byWorkload[key] = js
		}
		tj := &taskJudge{task: t, judge: js.sample, baseJudge: js.base}
		if t.Format.Streams() {
			if opts.Grammar == nil {
				return nil, fmt.Errorf("rl: task %s is in decisions format, and the rewarder has no grammar to expand its samples with", t.ID)
			}
			tj.grammar = opts.Grammar(t)
		}
		rw.tasks[t.ID] = tj
	}
	return rw, nil
}

// baseline judges a task's baseline script: the empty script for
// unscheduled (the postprocessors give it the default thread binding), a
// refinement task's source script for prompt (a construction task has
// none: the dataset's best script stands in), the dataset's best script
// for dataset_best; a construction task takes ConstructionBaseline when it
// is set. A script that does not get a latency leaves the task
// without a baseline, with the reason.
func baseline(ctx context.Context, spec RewardSpec, t Task, j *judge.Judge) (*Baseline, string, error) {
	kind := spec.Baseline
	if t.Source == nil && spec.ConstructionBaseline != "" {
		kind = spec.ConstructionBaseline
	}
	var script string
	switch {
	case kind == BaselineUnscheduled:
	case kind == BaselinePrompt && t.Source != nil:
		script = t.Source.Script
	case kind == BaselinePrompt || kind == BaselineDatasetBest:
		if t.Best == nil {
			return nil, "the dataset has no script of the workload", nil
		}
		if kind == BaselinePrompt {
			kind = BaselineDatasetBest + " (construction task)"
		}
		script = t.Best.Script
	}
	r, err := j.JudgeScript(ctx, []byte(script))
	if err != nil {
		return nil, "", fmt.Errorf("rl: task %s: judging its %s baseline: %w", t.ID, kind, err)
	}
	if r.LatencyS == nil {
		return nil, fmt.Sprintf("the %s baseline script got no latency: %s: %s", kind, r.Phase, r.Error), nil
	}
	return &Baseline{Kind: kind, LatencyS: *r.LatencyS, Source: r.LatencySource}, "", nil
}

// parallel runs f(0..n-1) on the rewarder's workers and returns the first
// error; after one, no further i is started.
func (rw *Rewarder) parallel(ctx context.Context, n int, f func(i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, rw.workers))
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return f(i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// Baseline returns a task's baseline (judging it on first use) and,
// without one, why.
func (rw *Rewarder) Baseline(ctx context.Context, id string) (*Baseline, string, error) {
	tj, ok := rw.tasks[id]
	if !ok {
		return nil, "", fmt.Errorf("rl: no training task %q", id)
	}
	return tj.baseline(ctx, rw.spec)
}

// Judge judges the samples of a task (the ids each generated after the
// prompt; in decisions format, the scripts their streams expand into) in
// parallel and scores the group.
func (rw *Rewarder) Judge(ctx context.Context, id string, samples [][]int) ([]SampleLog, error) {
	tj, ok := rw.tasks[id]
	if !ok {
		return nil, fmt.Errorf("rl: no training task %q", id)
	}
	base, baseErr, err := tj.baseline(ctx, rw.spec)
	if err != nil {
		return nil, err
	}
	results := make([]*judge.Result, len(samples))
	err = rw.parallel(ctx, len(samples), func(i int) error {
		r, err := tj.task.Format.Judge(ctx, tj.judge, tj.grammar, samples[i])
		results[i] = r
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rl: judging task %s: %w", id, err)
	}
	outcomes := make([]Outcome, len(results))
	for i, r := range results {
		outcomes[i] = OutcomeOf(r)
	}
	scored := rw.spec.Score(outcomes, base)
	logs := make([]SampleLog, len(samples))
	for i, s := range scored {
		logs[i] = SampleLog{Task: id, Sample: i, Tokens: results[i].Tokens, SampleReward: s, Error: results[i].Error, BaselineError: baseErr}
	}
	return logs, nil
}
