package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"dragonx/dragon"
	"dragonx/internal/progress"
	"dragonx/internal/safeio"
	"dragonx/kernels/cudabench"
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/ir"
	"dragonx/kernels/judge"
	"dragonx/kernels/roofline"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
	"dragonx/stages/job"
	"dragonx/stages/sft"
)

// Model is a policy's model as the benchmark samples it (the torch build's
// *dragon.Model).
type Model interface {
	// Context is the model's context length.
	Context() int
	SampleRows(ctx context.Context, rows []dragon.SampleRow, opts dragon.SampleOptions) ([]dragon.Sample, error)
	Close()
}

// Loader loads the policies' checkpoints (the torch build's; nil without
// libtorch).
type Loader interface {
	Load(path string, voc *vocab.Vocab) (Model, error)
	Close()
}

// NewLoader makes a Loader with libtorch's threads and seed.
type NewLoader func(threads int, seed int64, logf func(string, ...any)) (Loader, error)

// eosID is <eos>, always id 1 in kernels/vocab.
const eosID = 1

// runJob runs the benchmark described by the job: the policies (sampled
// with the models newLoader loads; nil without libtorch), then the
// baselines, and writes the outputs into the job's directory.
func runJob(ctx context.Context, j *job.Job, env *job.Env, newLoader NewLoader) error {
	var sp Spec
	dec := json.NewDecoder(bytes.NewReader(j.Spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		return fmt.Errorf("decoding the spec: %w", err)
	}
	if err := sp.Validate(); err != nil {
		return fmt.Errorf("invalid spec: %w", err)
	}
	if len(sp.Policies) > 0 && newLoader == nil {
		return errors.New("built without libtorch: a bench job with policies runs in dragonx-torch (this program built with -tags=torch; `make build` makes both)")
	}
	logf := func(format string, args ...any) { fmt.Fprintf(env.Log, "bench: "+format+"\n", args...) }
	path := func(name string) string { return filepath.Join(j.Dir, filepath.FromSlash(name)) }
	start := time.Now()

	var tasks []*Task
	var err error
	if sp.Outside != "" {
		tasks, err = OutsideTasks(sp.Outside, sp.Tasks)
	} else {
		tasks, err = ReadTasks(path(sp.Files["construction_tasks"]), path(sp.Files["refinement_prompts"]), sp.Tasks, sp.TaskPick)
	}
	if err != nil {
		return err
	}
	if j.Shards > 1 {
		// This shard's tasks: those of its workloads (tunedb.ShardOf), so
		// that the tasks of one workload share its search.
		var mine []*Task
		for _, t := range tasks {
			if tunedb.ShardOf(t.Spec, j.Shards) == j.Shard {
				mine = append(mine, t)
			}
		}
		tasks = mine
	}
	var voc *vocab.Vocab
	if sp.Files["vocab"] != "" {
		if voc, err = sft.LoadVocab(path(sp.Files["vocab"])); err != nil {
			return err
		}
	}
	format := sft.FormatScript
	if sp.Files["heldout"] != "" {
		if voc == nil {
			return errors.New("heldout.jsonl without a vocabulary file")
		}
		hf, err := os.Open(path(sp.Files["heldout"]))
		if err != nil {
			return err
		}
		held, err := sft.ReadHeldout(hf, "heldout.jsonl", voc.VocabSize())
		hf.Close()
		if err != nil {
			return err
		}
		if err := AttachPrompts(tasks, held); err != nil {
			return err
		}
		if format, err = sft.HeldoutFormat(held); err != nil {
			return err
		}
	}
	if sp.Outside != "" && voc != nil {
		if sp.Format != "" {
			format = sft.Format(sp.Format)
		}
		if err := BuildPrompts(tasks, voc, format); err != nil {
			return err
		}
	}
	// The numerical gate's programs and references: in the state
	// directory, so that a resumed run does not compile and run them again
	// (the engine removes it when the stage succeeds).
	var gateDir string
	if j.StateDir != "" {
		gateDir = filepath.Join(j.StateDir, "gate")
	} else {
		if gateDir, err = os.MkdirTemp("", "dragonx-bench-gate-"); err != nil {
			return err
		}
		defer os.RemoveAll(gateDir)
	}
	js, err := newJudges(sp, voc, gateDir)
	if err != nil {
		return err
	}
	var phases []verdict.Phase
	if len(tasks) > 0 {
		w, err := js.workload(tasks[0])
		if err != nil {
			return err
		}
		phases = w.judge.Phases()
	}
	stateDir := j.StateDir
	if j.Shards > 1 && stateDir != "" {
		stateDir = filepath.Join(stateDir, shardName(j.Shard, j.Shards))
	}
	st, err := openState(stateDir, sp, logf)
	if err != nil {
		return err
	}
	defer st.close()

	r := &run{sp: sp, tasks: tasks, voc: voc, format: format, js: js, st: st, logf: logf, rep: env.Progress, dir: j.Dir, grammars: sft.NewGrammars(ctx, voc, sp.Seed),
		total: len(tasks) * len(entriesOf(sp))}
	r.done = st.count()
	logf("%d construction tasks and %d refinement prompts; %d policies, decoding %v, baselines %v; target %s (%s); %d groups done before", countKind(tasks, KindConstruction), countKind(tasks, KindRefinement), len(sp.Policies), sp.Modes(), sp.Baselines, sp.Target, js.source, r.done)

	if len(sp.Policies) > 0 {
		ld, err := newLoader(sp.Threads, sp.Seed, logf)
		if err != nil {
			return err
		}
		defer ld.Close()
		for _, mode := range sp.Modes() {
			for _, p := range sp.Policies {
				if err := r.policy(ctx, ld, p, mode); err != nil {
					return fmt.Errorf("policy %s (%s): %w", p.Name, mode, err)
				}
			}
		}
	}
	for _, b := range sp.Baselines {
		if b == BaselineRandomWalk {
			for _, mode := range sp.walkModes() {
				if err := r.walks(ctx, mode); err != nil {
					return fmt.Errorf("baseline %s (%s): %w", b, mode, err)
				}
			}
			continue
		}
		if err := r.baseline(ctx, b); err != nil {
			return fmt.Errorf("baseline %s: %w", b, err)
		}
	}

	if j.Shards > 1 {
		return writeShard(j.Dir, j.Shard, j.Shards, js.source, phases, st)
	}
	return finish(j.Dir, sp, tasks, st.get, js.source, phases, logf, start)
}

// entriesOf lists the entries of a bench, without their attempts: each
// policy under each decoding mode (mode by mode), then the baselines,
// random_walk under each grammar mode.
func entriesOf(sp Spec) []entry {
	var out []entry
	for _, mode := range sp.Modes() {
		for _, p := range sp.Policies {
			out = append(out, entry{name: p.Name, mode: mode})
		}
	}
	for _, b := range sp.Baselines {
		modes := []string{""}
		if b == BaselineRandomWalk {
			modes = sp.walkModes()
		}
		for _, mode := range modes {
			out = append(out, entry{name: BaselinePrefix + b, mode: mode, baseline: true})
		}
	}
	return out
}

// finish writes the outputs from the groups of every entry at every task
// (get returns them).
func finish(dir string, sp Spec, tasks []*Task, get func(string, string, *Task) ([]*Attempt, bool), source string, phases []verdict.Phase, logf func(string, ...any), start time.Time) error {
	entries := entriesOf(sp)
	var all []*Attempt
	for i := range entries {
		e := &entries[i]
		for _, t := range tasks {
			g, ok := get(e.name, e.mode, t)
			if !ok {
				return fmt.Errorf("internal error: no attempts of %s (%q) at %s", e.name, e.mode, t.Name())
			}
			e.attempts = append(e.attempts, g...)
		}
		all = append(all, e.attempts...)
	}
	return writeOutputs(dir, sp, source, entries, all, phases, logf, start)
}

func countKind(tasks []*Task, kind string) int {
	n := 0
	for _, t := range tasks {
		if t.Kind == kind {
			n++
		}
	}
	return n
}

// writeOutputs writes attempts.jsonl, per_task.csv and summary.json.
func writeOutputs(dir string, sp Spec, source string, entries []entry, all []*Attempt, phases []verdict.Phase, logf func(string, ...any), start time.Time) error {
	atts, err := encodeAttempts(all)
	if err != nil {
		return err
	}
	per, err := encodePerTask(all)
	if err != nil {
		return err
	}
	sum := summarize(sp, source, entries, phases)
	sb, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return fmt.Errorf("summary.json: %w", err)
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{AttemptsFile, atts}, {PerTaskFile, per}, {SummaryFile, append(sb, '\n')}} {
		if err := safeio.WriteAtomic(filepath.Join(dir, f.name), func(w io.Writer) error { _, err := w.Write(f.b); return err }); err != nil {
			return err
		}
	}
	for _, p := range sum.Policies {
		for _, g := range []struct {
			kind string
			g    Group
		}{{KindConstruction, p.Construction}, {KindRefinement, p.Refinement}} {
			gm := "none"
			if g.g.GeomeanSpeedup != nil {
				gm = fmt.Sprintf("%.3g", *g.g.GeomeanSpeedup)
			}
			logf("%s%s%s: %d tasks, %d/%d attempts correct, pass@1 %.3f, fast_1 %.3f, geomean speedup %s (%s, simulated unless measured)",
				p.Name, modeSuffix(p.Decoding), g.kind, g.g.Tasks, g.g.Correct, g.g.Attempts, g.g.PassAt1, g.g.FastP["1"], gm, source)
		}
	}
	logf("done in %.1f s", time.Since(start).Seconds())
	return nil
}

// modeSuffix is " (MODE) " for a decoding mode, " " for none.
func modeSuffix(mode string) string {
	if mode == "" {
		return " "
	}
	return " (" + mode + ") "
}

// run is one benchmark run's state.
type run struct {
	sp    Spec
	tasks []*Task
	voc   *vocab.Vocab
	// format is the format the policies write (heldout.jsonl's), and the
	// one random_walk walks in.
	format sft.Format
	js     *judges
	st     *state
	logf   func(string, ...any)
	rep    progress.Reporter
	dir    string

	mu          sync.Mutex
	done, total int

	basesMu sync.Mutex
	bases   map[string]*once[*float64]

	// grammars are the workloads' script grammars, built on first use,
	// shared by the policies and random_walk.
	grammars *sft.Grammars
}

// grammar returns the script grammar of t's workload, with the thread
// limits with gpuLimits: the mask the policies sample under and
// random_walk walks under, and what expands a decision stream.
func (r *run) grammar(t *Task, gpuLimits bool) *sft.LazyGrammar {
	return r.grammars.Of(t.Spec, "held-out "+t.Name(), gpuLimits)
}

// judgeSample judges the tokens a policy (or random_walk) wrote at task t
// under decoding mode, in the run's format (sft.Format.Judge: a decision
// stream is expanded with the grammar of the mode, or the plain one
// unconstrained).
func (r *run) judgeSample(ctx context.Context, t *Task, mode string, toks []int) (*judge.Result, error) {
	w, err := r.js.workload(t)
	if err != nil {
		return nil, err
	}
	var lg *sft.LazyGrammar
	if r.format.Streams() {
		_, gpuLimits := decodingFlags(mode)
		lg = r.grammar(t, gpuLimits)
	}
	return r.format.Judge(ctx, w.judge, lg, toks)
}

// progress reports a finished group of name's, with that entry's ETA.
func (r *run) progress(name string, done, total int, since time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	note := fmt.Sprintf("%s %d/%d tasks", name, done, total)
	if done > 0 && done < total {
		eta := time.Duration(float64(time.Since(since)) / float64(done) * float64(total-done))
		note += ", ETA " + eta.Round(time.Second).String()
	}
	r.rep.Report(progress.Event{Done: int64(r.done), Total: int64(r.total), Unit: "tasks", Note: note})
}

// pending returns the tasks name has no attempts at yet under decoding mode.
func (r *run) pending(name, mode string) []*Task {
	var out []*Task
	for _, t := range r.tasks {
		if _, ok := r.st.get(name, mode, t); !ok {
			out = append(out, t)
		}
	}
	return out
}

// baselineUS returns the task's baseline latency in µs (nil without one),
// judged once, or taken from the resume state.
func (r *run) baselineUS(ctx context.Context, t *Task) (*float64, error) {
	return onceOf(&r.basesMu, &r.bases, t.Name()).get(func() (*float64, error) {
		if b, ok := r.st.baseline(t); ok {
			return b, nil // judged by the run that finished a group of t
		}
		return r.judgeBaseline(ctx, t)
	})
}

// judgeBaseline judges the task's baseline: the unscheduled kernel for a
// construction task, the prompt's script for a refinement prompt.
func (r *run) judgeBaseline(ctx context.Context, t *Task) (*float64, error) {
	w, err := r.js.workload(t)
	if err != nil {
		return nil, err
	}
	var res *judge.Result
	if t.Kind == KindConstruction {
		res, err = w.unscheduled(ctx)
	} else {
		res, err = w.judge.JudgeScript(ctx, []byte(t.Source))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: judging its baseline: %w", t.Name(), err)
	}
	if res.OK && res.LatencyS != nil && *res.LatencyS > 0 {
		us := *res.LatencyS * 1e6
		return &us, nil
	}
	return nil, nil
}

// attempt turns a judgement into an attempt of task t under decoding mode
// ("" for a baseline that decodes nothing).
func (r *run) attempt(name, mode string, t *Task, i int, greedy bool, res *judge.Result, base *float64, tokens int) *Attempt {
	a := &Attempt{Policy: name, Decoding: mode, Task: t.Kind, Index: t.Index, Hash: t.Hash, Family: t.Family, Attempt: i, Greedy: greedy,
		Phase: string(res.Phase), OK: res.OK, Error: res.Error, Source: r.js.source, BaselineUS: base, Tokens: tokens}
	if res.OK && res.LatencyS != nil {
		us := *res.LatencyS * 1e6
		a.LatencyUS = &us
		if res.LatencySource != "" {
			a.Source = res.LatencySource
		}
		if w, err := r.js.workload(t); err == nil && w.roofline > 0 {
			if pf, err := roofline.Fraction(w.roofline, us*1e-6); err == nil {
				a.PeakFraction = &pf
			}
		}
	}
	a.setSpeedup()
	return a
}

// failed is an attempt that did not get to the judge (phase decode: nothing
// passed).
func (r *run) failed(name, mode string, t *Task, i int, greedy bool, why string, base *float64) *Attempt {
	return &Attempt{Policy: name, Decoding: mode, Task: t.Kind, Index: t.Index, Hash: t.Hash, Family: t.Family, Attempt: i, Greedy: greedy,
		Phase: string(judge.PhaseDecode), Error: why, Source: r.js.source, BaselineUS: base}
}

// parallel runs f(0..n-1) on at most workers goroutines and returns the
// first error, cancelling the context the others see.
func parallel(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, workers))
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return f(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// judges holds the judge of each workload and what the baselines share.
type judges struct {
	opts   judge.Options
	cuda   bool
	source string
	// dev is the modelled device (nil when measuring on the machine's
	// GPU, which the device table may not hold): the roofline's.
	dev *gpumodel.Device

	mu sync.Mutex
	m  map[string]*workloadJudge
}

// workloadJudge is one workload's judge, built once.
type workloadJudge struct {
	once  sync.Once
	f     *ir.PrimFunc
	judge *judge.Judge
	err   error

	// roofline is the workload's roofline time on the judges' device in
	// seconds (0 without a device).
	roofline float64

	unschedOnce sync.Once
	unsched     *judge.Result
	unschedErr  error
}

// newJudges returns the judges' factory: every phase up to the numerical
// gate (numeric) or the static verdict, then the latency on the target.
func newJudges(sp Spec, voc *vocab.Vocab, gateDir string) (*judges, error) {
	model := sp.Target
	if model == TargetCUDA {
		model = defaultTarget // replaced by the GPU, per workload
	}
	opts, err := sft.JudgeOptions(sft.EvalSpec{Numeric: sp.Numeric, Target: model, MaxNew: 1}, voc, sp.Seed, gateDir)
	if err != nil {
		return nil, err
	}
	js := &judges{opts: opts, cuda: sp.Target == TargetCUDA, m: map[string]*workloadJudge{}}
	js.source = "measured"
	if l, ok := opts.Latency.(interface{ Label() string }); ok && !js.cuda {
		js.source = l.Label()
	}
	if !js.cuda {
		dev, err := gpumodel.LookupDevice(model)
		if err != nil {
			return nil, err
		}
		js.dev = &dev
	}
	return js, nil
}

// workload returns the judge of t's workload, building it on first use.
func (js *judges) workload(t *Task) (*workloadJudge, error) {
	js.mu.Lock()
	w, ok := js.m[t.Hash]
	if !ok {
		w = &workloadJudge{}
		js.m[t.Hash] = w
	}
	js.mu.Unlock()
	w.once.Do(func() {
		if w.f, w.err = t.Spec.Build(); w.err != nil {
			return
		}
		if js.dev != nil {
			if w.roofline, w.err = rooflineSeconds(w.f, js.dev); w.err != nil {
				return
			}
		}
		opts := js.opts
		if js.cuda {
			opts.Latency = &cudabench.Source{Workload: w.f}
		}
		w.judge, w.err = judge.New(t.Spec, opts)
	})
	if w.err != nil {
		return nil, fmt.Errorf("%s: the workload: %w", t.Name(), w.err)
	}
	return w, nil
}

// unscheduled judges the empty script: the workload with only the default
// thread binding the postprocessors give it (RewriteUnboundBlock).
func (w *workloadJudge) unscheduled(ctx context.Context) (*judge.Result, error) {
	w.unschedOnce.Do(func() { w.unsched, w.unschedErr = w.judge.JudgeScript(ctx, nil) })
	return w.unsched, w.unschedErr
}

// rooflineSeconds is f's roofline time on dev.
func rooflineSeconds(f *ir.PrimFunc, dev *gpumodel.Device) (float64, error) {
	w, err := roofline.Of(f)
	if err != nil {
		return 0, err
	}
	b, err := roofline.Time(w, dev)
	return b.Seconds, err
}
