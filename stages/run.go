package stages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"dragonx/cache"
	"dragonx/internal/fscopy"
	"dragonx/internal/progress"
	"dragonx/stages/cluster"
)

// Run brings the selected stages up to date: each stage whose key has a
// complete cache entry is a hit; the others run, at most Jobs at a time, as
// soon as their dependencies are done. A failed stage stops its dependents,
// which are reported as skipped with the root cause. Cancelling ctx stops
// running stages and starts no new ones; nothing partial enters the cache.
//
// The returned error is for failures of the engine itself (the cache); stage
// failures are in the Report.
func (e *Engine) Run(ctx context.Context, cfg *Config, targets []Addr) (*Report, error) {
	insts, err := selectInstances(cfg, targets)
	if err != nil {
		return nil, err
	}
	jobs := max(e.Jobs, 1)
	if err := e.resetWorkRoot(); err != nil {
		return nil, err
	}
	r := &runner{
		e:       e,
		cfg:     cfg,
		results: map[string]*Result{},
		repairs: map[string]*sync.Once{},
		remote:  e.useRemote(),
	}
	if e.OutDir != "" {
		r.out = loadOutState(e.OutDir)
	}
	if e.UI != nil {
		e.UI.Begin("run", len(insts), jobs)
	}

	index := map[string]int{}
	selected := map[string]*Instance{}
	for i, inst := range insts {
		index[inst.Addr.String()] = i
		selected[inst.Addr.String()] = inst
	}
	pending := map[string]int{}
	dependents := map[string][]*Instance{}
	var queue []*Instance
	for _, inst := range insts {
		n := 0
		for _, d := range inst.Deps {
			if selected[d.String()] != nil {
				n++
				dependents[d.String()] = append(dependents[d.String()], inst)
			}
		}
		pending[inst.Addr.String()] = n
		if n == 0 {
			queue = append(queue, inst)
		}
	}

	type done struct{ res *Result }
	doneCh := make(chan done)
	running := 0
	finished := 0
	var skip func(inst *Instance, cause Addr, why string)
	finish := func(res *Result) {
		r.setResult(res)
		finished++
		addr := res.Addr.String()
		for _, dep := range dependents[addr] {
			switch res.Status {
			case StatusFailed:
				skip(dep, res.Addr, fmt.Sprintf("upstream %s failed", res.Addr))
			case StatusSkipped:
				cause := res.Addr
				if res.Cause != nil {
					cause = *res.Cause
				}
				skip(dep, cause, fmt.Sprintf("upstream %s failed", cause))
			default:
				pending[dep.Addr.String()]--
				if pending[dep.Addr.String()] == 0 {
					queue = append(queue, dep)
					sort.Slice(queue, func(i, j int) bool { return index[queue[i].Addr.String()] < index[queue[j].Addr.String()] })
				}
			}
		}
	}
	skip = func(inst *Instance, cause Addr, why string) {
		if r.result(inst.Addr) != nil {
			return
		}
		c := cause
		res := &Result{Addr: inst.Addr, Kind: inst.Kind.Name(), Status: StatusSkipped, Cause: &c, Reasons: []string{why}}
		if e.UI != nil {
			e.UI.Finished(res, nil)
		}
		finish(res)
	}

	for finished < len(insts) {
		for len(queue) > 0 && running < jobs && ctx.Err() == nil {
			inst := queue[0]
			queue = queue[1:]
			running++
			go func() { doneCh <- done{r.runOne(ctx, inst, false)} }()
		}
		if running == 0 {
			// Interrupted: nothing runs and nothing new may start.
			for _, inst := range insts {
				if r.result(inst.Addr) == nil {
					res := &Result{Addr: inst.Addr, Kind: inst.Kind.Name(), Status: StatusSkipped, Reasons: []string{"interrupted"}}
					if e.UI != nil {
						e.UI.Finished(res, nil)
					}
					r.setResult(res)
					finished++
				}
			}
			break
		}
		d := <-doneCh
		running--
		finish(d.res)
	}

	rep := &Report{}
	for _, inst := range insts {
		rep.Results = append(rep.Results, r.result(inst.Addr))
	}
	if r.out != nil {
		if err := r.out.save(); err != nil && e.UI != nil {
			// The outputs are in place; only the bookkeeping that saves
			// re-copying them next time is lost.
			fmt.Fprintf(os.Stderr, "dragonx: warning: %v\n", err)
		}
	}
	r.remote.wait()
	rep.RemoteErr = r.remote.err()
	if e.UI != nil {
		e.UI.End(rep)
	}
	return rep, r.engineErr()
}

// runner is the state of one Run.
type runner struct {
	e   *Engine
	cfg *Config
	out *outState

	remote *remoteUse // nil without a remote

	mu      sync.Mutex
	results map[string]*Result
	repairs map[string]*sync.Once
	errs    []error
}

func (r *runner) result(a Addr) *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results[a.String()]
}

func (r *runner) setResult(res *Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results[res.Addr.String()] = res
}

func (r *runner) engineErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// runOne brings one instance up to date: a cache hit, or a run. force skips
// the cache lookup (used to regenerate an output found corrupt).
func (r *runner) runOne(ctx context.Context, inst *Instance, force bool) *Result {
	e := r.e
	res := &Result{Addr: inst.Addr, Kind: inst.Kind.Name()}
	fail := func(err error) *Result {
		res.Status = StatusFailed
		res.Err = err
		if e.UI != nil {
			e.UI.Finished(res, nil)
		}
		return res
	}
	digests, unknown, err := e.resolveInputs(ctx, r.cfg, inst, r.doneDep)
	if err != nil {
		return fail(err)
	}
	if unknown {
		return fail(fmt.Errorf("stages: internal error: inputs of %s not ready", inst.Addr))
	}
	lines := keyInput(inst, digests)
	res.Key = hashLines(lines)
	if e.Debug.CacheHash && e.DebugOut != nil {
		fmt.Fprint(e.DebugOut, keyDebug(inst.Addr, res.Key, lines))
	}
	prev := e.lastSnapshot(ctx, inst.Addr)

	var cached *cache.Manifest
	if m, err := e.Store.GetManifest(ctx, res.Key); err == nil {
		cached = m
	}
	// A manifest that lacks a declared output is a miss (rerun), never a
	// permanent failure.
	lacks := ""
	if cached != nil {
		lacks = missingOutput(inst, cached)
	}
	usable := cached != nil && lacks == "" && !force && !e.Debug.CacheVerify
	complete := usable && e.blobsPresent(ctx, cached)
	pulled := false
	if !complete && !force && !e.Debug.CacheVerify {
		// Read through: a local miss asks the remote, which copies a
		// complete, verified entry into the local store.
		if m := r.remote.fetch(ctx, inst.Addr, res.Key); m != nil {
			if name := missingOutput(inst, m); name == "" {
				cached, usable, complete, pulled = m, true, true, true
			} else {
				lacks = name
			}
		}
	}
	if !usable && lacks != "" && !force && !e.Debug.CacheVerify {
		res.Reasons = []string{incompleteReason(lacks)}
	}
	if usable {
		if complete {
			err := r.materialize(ctx, inst, cached.Outputs, "")
			if err == nil {
				res.Status = StatusCached
				res.Remote = pulled
				res.Outputs = cached.Outputs
				res.Log = cached.Log
				res.Duration = cached.Duration
				if !pulled {
					// Write through: the remote may lack what is cached here.
					r.remote.push(ctx, inst.Addr, res.Key)
				}
				_ = e.Store.TouchManifest(ctx, res.Key, e.now())
				if prev == nil || prev.Key != res.Key {
					// A no-op run writes nothing (the store stays read-only).
					r.saveSnapshot(ctx, inst, res, digests)
				}
				if e.UI != nil {
					e.UI.Finished(res, nil)
				}
				return res
			}
			if !errors.Is(err, cache.ErrCorrupt) {
				return fail(fmt.Errorf("materialising cached outputs: %w", err))
			}
			r.purge(ctx, cached)
			res.Reasons = []string{fmt.Sprintf("cached output was corrupt (%v); regenerating", err)}
		} else {
			res.Reasons = []string{"the cached result is incomplete (a blob is missing); regenerating"}
		}
	}
	if len(res.Reasons) == 0 {
		switch {
		case force:
			res.Reasons = []string{"a downstream stage found this stage's cached output corrupt; regenerating"}
		case e.Debug.CacheVerify && cached != nil:
			res.Reasons = []string{"DRAGONX_DEBUG=cacheverify=1 reruns every stage"}
		default:
			res.Reasons = explain(prev, inst, digests)
			if len(res.Reasons) == 0 {
				res.Reasons = []string{"the cached result of this exact configuration is gone (removed by gc, deleted, or found corrupt)"}
			}
		}
	}
	if rr := e.resumeReason(res.Key); rr != "" {
		res.Reasons = append(res.Reasons, rr)
	}
	return r.execute(ctx, inst, res, digests, cached)
}

// doneDep returns the result of a finished dependency that produced outputs.
func (r *runner) doneDep(a Addr) *Result {
	res := r.result(a)
	if res == nil || (res.Status != StatusRan && res.Status != StatusCached) {
		return nil
	}
	return res
}

// execute runs inst in a fresh working directory and stores its outputs.
func (r *runner) execute(ctx context.Context, inst *Instance, res *Result, digests map[string]cache.Digest, cached *cache.Manifest) *Result {
	e := r.e
	start := e.now()
	// The directory's name only helps people find it: clipped, so that a
	// long name or instance key cannot make it longer than a file system
	// allows.
	prefix := safeFileName(inst.Addr.Short())
	if len(prefix) > 64 {
		prefix = prefix[:64]
	}
	scratch, err := os.MkdirTemp(e.WorkRoot, prefix+"-")
	if err != nil {
		return r.failWithLog(ctx, inst, res, fmt.Errorf("stages: cannot create working directory: %w", err), nil)
	}
	defer os.RemoveAll(scratch)
	dir, tmp := filepath.Join(scratch, "work"), filepath.Join(scratch, "tmp")
	for _, d := range []string{dir, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return r.failWithLog(ctx, inst, res, fmt.Errorf("stages: cannot create working directory: %w", err), nil)
		}
	}
	var logBuf lockedBuffer
	var logW io.Writer = &logBuf
	if e.UI != nil {
		if live := e.uiStarted(inst, res.Reasons); live != nil {
			logW = io.MultiWriter(&logBuf, live)
		}
	}
	stateDir := ""
	if e.StateRoot != "" {
		stateDir = filepath.Join(e.StateRoot, res.Key.String())
		if err := os.MkdirAll(stateDir, 0o755); err != nil {
			return r.failWithLog(ctx, inst, res, fmt.Errorf("stages: cannot create state directory: %w", err), nil)
		}
	}
	inputs := map[string]Input{}
	for _, in := range inst.Stage.Inputs() {
		inputs[in.Name] = in
	}
	declared := ""
	if spec := r.cfg.ExecutorOf(inst); spec != nil {
		declared = spec.Type
	}
	rc := &RunContext{
		Executor: declared,
		Dir:      dir,
		Tmp:      tmp,
		StateDir: stateDir,
		Key:      res.Key.String(),
		Log:      logW,
		Progress: &stageProgress{
			addr: inst.Addr, ui: e.UI, log: logW, start: start, now: e.now,
		},
		Shards: func() (cluster.Executor, error) {
			return e.shardExecutor(r.cfg.ExecutorOf(inst), res.Key.String())
		},
		Binary: e.Cluster.Binary,
		Materialize: func(ctx context.Context, name, dst string) error {
			in, ok := inputs[name]
			if !ok {
				return fmt.Errorf("stages: %s has no input %q", inst.Addr, name)
			}
			return r.placeInput(ctx, in, dst)
		},
	}
	runErr := runProtected(ctx, inst.Stage, rc)
	res.Duration = e.now().Sub(start)
	if runErr != nil {
		if ctx.Err() != nil {
			runErr = fmt.Errorf("interrupted: %w", runErr)
		}
		return r.failWithLog(ctx, inst, res, runErr, logBuf.Bytes())
	}

	// Store the outputs, then the log, then the manifest that names them.
	outs := map[string]cache.Output{}
	for _, o := range inst.Stage.Outputs() {
		// No link is followed: what the command left cannot make dragonx
		// read (or later move) a file outside its working directory.
		out, err := cache.PutPathIn(ctx, e.Store, dir, path.Clean(o.Path))
		if err != nil {
			return r.failWithLog(ctx, inst, res, fmt.Errorf("storing output %s (%s): %w", o.Name, o.Path, err), logBuf.Bytes())
		}
		outs[o.Name] = out
	}
	logDigest, err := r.storeLog(ctx, logBuf.Bytes())
	if err != nil {
		return r.failWithLog(ctx, inst, res, err, logBuf.Bytes())
	}
	if e.Debug.CacheVerify && cached != nil {
		if diff := diffOutputs(cached.Outputs, outs); diff != "" {
			return r.failWithLog(ctx, inst, res, fmt.Errorf("not reproducible: %s (DRAGONX_DEBUG=cacheverify=1)", diff), logBuf.Bytes())
		}
	}
	m := &cache.Manifest{
		Version:     cache.ManifestVersion,
		Key:         res.Key,
		Stage:       inst.Addr.String(),
		Kind:        inst.Kind.Name(),
		KindVersion: inst.Kind.Version(),
		Outputs:     outs,
		Log:         logDigest,
		Started:     start.UTC(),
		Duration:    res.Duration,
		Host:        e.Host,
		Tool:        e.Tool,
		LastUsed:    e.now().UTC(),
	}
	if err := e.Store.PutManifest(ctx, m); err != nil {
		r.mu.Lock()
		r.errs = append(r.errs, fmt.Errorf("stages: recording %s: %w", inst.Addr, err))
		r.mu.Unlock()
		return r.failWithLog(ctx, inst, res, fmt.Errorf("recording the result in the cache: %w", err), logBuf.Bytes())
	}
	res.Status = StatusRan
	res.Outputs = outs
	res.Log = logDigest
	if stateDir != "" {
		// The result is stored: the resume state has served its purpose.
		_ = os.RemoveAll(stateDir)
	}
	r.remote.push(ctx, inst.Addr, res.Key)
	r.saveSnapshot(ctx, inst, res, digests)
	if err := r.materialize(ctx, inst, outs, dir); err != nil {
		res.Status = StatusFailed
		res.Err = fmt.Errorf("copying outputs to %s: %w", e.OutDir, err)
	}
	if e.UI != nil {
		e.UI.Finished(res, logBuf.Bytes())
	}
	return res
}

// runProtected runs a stage, turning a panic in a kind into a failure of
// that stage rather than a crash of the whole run.
func runProtected(ctx context.Context, st Stage, rc *RunContext) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("stages: the stage kind panicked: %v", p)
		}
	}()
	return st.Run(ctx, rc)
}

func (e *Engine) uiStarted(inst *Instance, reasons []string) io.Writer {
	return e.UI.Started(inst.Addr, inst.Kind.Name(), reasons)
}

// failWithLog records a failed run: its log is kept (as a blob, with a
// failure record) so that `dragonx show` can replay it.
func (r *runner) failWithLog(ctx context.Context, inst *Instance, res *Result, err error, log []byte) *Result {
	res.Status = StatusFailed
	res.Err = err
	if d, perr := r.storeLog(ctx, log); perr == nil && !d.IsZero() {
		res.Log = d
		rec := failureRecord{Key: res.Key, Log: d, Error: err.Error(), Time: r.e.now().UTC()}
		if b, jerr := jsonMarshal(rec); jerr == nil {
			_ = r.e.Store.PutSnapshot(ctx, failureSnapshotName(inst.Addr), b)
		}
	}
	if r.e.UI != nil {
		r.e.UI.Finished(res, log)
	}
	return res
}

func (r *runner) storeLog(ctx context.Context, log []byte) (cache.Digest, error) {
	if len(log) == 0 {
		return cache.Digest{}, nil
	}
	d, _, err := r.e.Store.PutBlob(ctx, bytes.NewReader(log))
	if err != nil {
		return cache.Digest{}, fmt.Errorf("storing the log: %w", err)
	}
	return d, nil
}

func (r *runner) saveSnapshot(ctx context.Context, inst *Instance, res *Result, digests map[string]cache.Digest) {
	s := snapshot{
		Key:         res.Key,
		Kind:        inst.Kind.Name(),
		KindVersion: inst.Kind.Version(),
		Params:      inst.Stage.Params(),
		Outputs:     res.Outputs,
		Time:        r.e.now().UTC(),
	}
	for _, in := range inst.Stage.Inputs() {
		s.Inputs = append(s.Inputs, snapInput{Name: in.Name, Source: inputSource(in), Digest: digests[in.Name]})
	}
	b, err := jsonMarshal(s)
	if err != nil {
		return
	}
	// The snapshot only improves plan's explanations; a failure to save it
	// changes no result.
	_ = r.e.Store.PutSnapshot(ctx, inst.Addr.String(), b)
}

// placeInput writes one input of a running stage at dst: an upstream output
// from the cache (regenerating the upstream if its blob turns out corrupt),
// or a copy of a local file or directory.
func (r *runner) placeInput(ctx context.Context, in Input, dst string) error {
	if in.Ref == nil {
		return fscopy.Copy(localPath(r.cfg, in.Local), dst)
	}
	up := r.doneDep(in.Ref.Stage)
	if up == nil {
		return fmt.Errorf("stages: %s has not produced its outputs", in.Ref.Stage)
	}
	out, ok := up.Outputs[in.Ref.Output]
	if !ok {
		return fmt.Errorf("stages: %s has no output %q", in.Ref.Stage, in.Ref.Output)
	}
	err := cache.Materialize(ctx, r.e.Store, out, dst)
	if err == nil || !errors.Is(err, cache.ErrCorrupt) {
		return err
	}
	// The upstream's cached output is corrupt: regenerate it once, then
	// try again with what it produced.
	if rerr := r.repair(ctx, in.Ref.Stage); rerr != nil {
		return fmt.Errorf("%s (%v); regenerating %s failed: %w", in.Ref, err, in.Ref.Stage, rerr)
	}
	up = r.doneDep(in.Ref.Stage)
	if up == nil {
		return fmt.Errorf("stages: regenerating %s failed", in.Ref.Stage)
	}
	_ = os.RemoveAll(dst)
	return cache.Materialize(ctx, r.e.Store, up.Outputs[in.Ref.Output], dst)
}

// repair reruns an upstream instance whose cached output was found corrupt,
// at most once per Run however many dependents ask.
func (r *runner) repair(ctx context.Context, a Addr) error {
	r.mu.Lock()
	once := r.repairs[a.String()]
	if once == nil {
		once = &sync.Once{}
		r.repairs[a.String()] = once
	}
	r.mu.Unlock()
	inst := r.cfg.Instance(a)
	if inst == nil {
		return fmt.Errorf("stages: no instance %s", a)
	}
	var err error
	once.Do(func() {
		if old := r.result(a); old != nil && old.Status == StatusCached {
			if m, gerr := r.e.Store.GetManifest(ctx, old.Key); gerr == nil {
				r.purge(ctx, m)
			}
		}
		res := r.runOne(ctx, inst, true)
		r.setResult(res)
		if res.Status != StatusRan {
			err = res.Err
			if err == nil {
				err = fmt.Errorf("it did not run (%s)", res.Status)
			}
		}
	})
	return err
}

// purge removes a manifest and every blob of it that fails verification, so
// that a rerun stores fresh bytes instead of deduplicating against bad ones.
func (r *runner) purge(ctx context.Context, m *cache.Manifest) {
	for _, d := range corruptBlobs(ctx, r.e.Store, m) {
		_ = r.e.Store.DeleteBlob(ctx, d)
	}
	_ = r.e.Store.DeleteManifest(ctx, m.Key)
}

// diffOutputs describes how two sets of outputs differ, or returns "".
func diffOutputs(a, b map[string]cache.Output) string {
	var names []string
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if a[n].Digest != b[n].Digest {
			return fmt.Sprintf("output %s was %s, now %s", n, a[n].Digest.Short(), b[n].Digest.Short())
		}
	}
	return ""
}

// resetWorkRoot removes what a killed run left in WorkRoot. The caller
// holds the cache lock, so nothing else is using it.
func (e *Engine) resetWorkRoot() error {
	if e.WorkRoot == "" {
		return fmt.Errorf("stages: Engine.WorkRoot is not set")
	}
	if err := os.RemoveAll(e.WorkRoot); err != nil {
		return fmt.Errorf("stages: cleaning %s: %w", e.WorkRoot, err)
	}
	if err := os.MkdirAll(e.WorkRoot, 0o755); err != nil {
		return fmt.Errorf("stages: %w", err)
	}
	return nil
}

// stageProgress forwards a stage's progress to the UI, and writes a plain
// line into the stage log at most every logEvery.
type stageProgress struct {
	addr  Addr
	ui    UI
	log   io.Writer
	start time.Time
	now   func() time.Time

	mu      sync.Mutex
	lastLog time.Time
}

const logEvery = 10 * time.Second

func (p *stageProgress) Report(ev progress.Event) {
	now := p.now()
	if p.ui != nil {
		p.ui.Progress(p.addr, ProgressEvent{Done: ev.Done, Total: ev.Total, Unit: ev.Unit, Note: ev.Note, Elapsed: now.Sub(p.start)})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	final := ev.Total > 0 && ev.Done >= ev.Total
	if final || p.lastLog.IsZero() || now.Sub(p.lastLog) >= logEvery {
		p.lastLog = now
		fmt.Fprintf(p.log, "progress: %s\n", progress.Format("", ev, now.Sub(p.start)))
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers (a command's
// stdout and stderr).
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}
