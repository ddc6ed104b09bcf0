package stages

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"dragonx/cache"
)

// Status is the state of a stage instance after run or plan.
type Status string

// Statuses. run reports ran, cached, failed or skipped; plan reports cached,
// run (it would run) or maybe (an upstream runs first; it runs unless that
// upstream's outputs come out identical).
const (
	StatusRan     Status = "ran"
	StatusCached  Status = "cached"
	StatusFailed  Status = "failed"
	StatusSkipped Status = "skipped"
	StatusRun     Status = "run"
	StatusMaybe   Status = "maybe"
)

// Result is the outcome of one stage instance.
type Result struct {
	Addr     Addr
	Kind     string
	Key      cache.Key // zero when it could not be computed
	Status   Status
	Reasons  []string
	Outputs  map[string]cache.Output
	Duration time.Duration
	// Err is the failure of a failed stage.
	Err error
	// Cause is the failed stage a skipped stage waited for.
	Cause *Addr
	// Log is the digest of the stage's stored log (zero if none).
	Log cache.Digest
	// Remote marks a cached stage whose result came from the remote cache
	// (Run pulled it) or is there and not in the local cache (Plan).
	Remote bool
}

// Report is the outcome of a run or a plan, in the experiment's order.
type Report struct {
	Results []*Result
	// RemoteErr is the error that put Engine.Remote out of use during the
	// operation (it continued with the local cache), or nil.
	RemoteErr error
}

// OK reports whether no stage failed or was skipped.
func (r *Report) OK() bool {
	for _, res := range r.Results {
		if res.Status == StatusFailed || res.Status == StatusSkipped {
			return false
		}
	}
	return true
}

// Debug holds the DRAGONX_DEBUG knobs (see `dragonx help cache`).
type Debug struct {
	// CacheHash prints every key's input lines.
	CacheHash bool
	// CacheVerify reruns every stage even on a hit, and fails a stage whose
	// new outputs differ from the cached ones: a reproducibility audit.
	CacheVerify bool
}

// Engine plans and runs experiments against a cache. Its fields are set by
// the caller before use; an Engine runs one operation at a time.
type Engine struct {
	Store cache.Store
	// Jobs is the number of stages that may run at once (>= 1).
	Jobs int
	// OutDir receives a copy of every stage's outputs under
	// OutDir/<stage>/<path>; "" disables materialisation.
	OutDir string
	// WorkRoot holds the private working directories of running stages.
	// Leftovers from a killed run are removed at the start of the next.
	WorkRoot string
	// StateRoot holds each stage key's resume state (RunContext.StateDir,
	// StateRoot/<key>): kept when a stage fails or is interrupted, removed
	// when its result is stored. "" disables resume state.
	StateRoot string
	// UI receives progress and results for a person; nil means silent.
	UI UI
	// Debug holds the DRAGONX_DEBUG knobs; DebugOut receives their output.
	Debug    Debug
	DebugOut io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Host and Tool are recorded in manifests.
	Host, Tool string
	// Remote, when set, is a cache shared by a team: Run reads through it
	// for each stage missing locally and, with Push, writes each stage's
	// result through to it (outputs, log, then manifest); Plan consults it
	// for stages missing locally. Stages cached locally never contact it
	// unless pushing. Remote trouble never fails a run: Warn hears of it
	// once and the run continues with the local cache.
	Remote Remote
	Push   bool
	// Warn receives warnings for a person (remote trouble), one call at a
	// time; nil drops them.
	Warn func(msg string)
	// Cluster is how sharded stages' executors are built (RunContext.Shards).
	Cluster ClusterOptions
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// UI is how the engine tells a person what happens. Implementations must be
// safe for concurrent use.
type UI interface {
	// Begin announces a run or plan over n instances.
	Begin(op string, n int, jobs int)
	// Started says a stage began running. It may return a writer that
	// receives the stage's log as it is written (nil: none).
	Started(addr Addr, kind string, reasons []string) io.Writer
	// Progress forwards a running stage's progress.
	Progress(addr Addr, ev ProgressEvent)
	// Finished reports a stage's result; log is its log (may be nil).
	Finished(res *Result, log []byte)
	// End closes the run.
	End(rep *Report)
}

// ProgressEvent is a running stage's progress, as its kind reported it.
type ProgressEvent struct {
	Done, Total int64
	Unit, Note  string
	Elapsed     time.Duration
}

// selectInstances returns the instances of cfg to consider: all, or the
// targets and everything upstream of them.
func selectInstances(cfg *Config, targets []Addr) ([]*Instance, error) {
	if len(targets) == 0 {
		return cfg.Instances, nil
	}
	want := map[string]bool{}
	for _, t := range targets {
		matched := false
		for _, inst := range cfg.Instances {
			if inst.Addr == t || (!t.Keyed && inst.Addr.Name == t.Name) {
				matched = true
				want[inst.Addr.String()] = true
				for _, up := range cfg.Graph.Upstream(inst.Addr.String()) {
					want[up] = true
				}
			}
		}
		if !matched {
			return nil, fmt.Errorf("stages: the experiment has no stage %s", t)
		}
	}
	var out []*Instance
	for _, inst := range cfg.Instances {
		if want[inst.Addr.String()] {
			out = append(out, inst)
		}
	}
	return out, nil
}

// resolveInputs returns the content digest of every input of inst. Upstream
// digests come from done (the results so far); a missing upstream result
// leaves that input out and sets unknown.
func (e *Engine) resolveInputs(ctx context.Context, cfg *Config, inst *Instance, done func(Addr) *Result) (digests map[string]cache.Digest, unknown bool, err error) {
	digests = map[string]cache.Digest{}
	for _, in := range inst.Stage.Inputs() {
		if in.Ref != nil {
			up := done(in.Ref.Stage)
			if up == nil || up.Outputs == nil {
				unknown = true
				continue
			}
			o, ok := up.Outputs[in.Ref.Output]
			if !ok {
				return nil, false, fmt.Errorf("%s has no stored output %q", in.Ref.Stage, in.Ref.Output)
			}
			digests[in.Name] = o.Digest
			continue
		}
		p := localPath(cfg, in.Local)
		out, err := cache.HashPathCached(ctx, e.Store, p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, false, &InputError{Input: in, Path: p, Err: fmt.Errorf("local input %q does not exist (looked for %s, relative to the experiment file)", in.Local, p)}
			}
			return nil, false, &InputError{Input: in, Path: p, Err: fmt.Errorf("local input %q: %w", in.Local, err)}
		}
		digests[in.Name] = out.Digest
	}
	return digests, unknown, nil
}

// InputError is a problem with a declared input, with its HCL range.
type InputError struct {
	Input Input
	Path  string
	Err   error
}

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func localPath(cfg *Config, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(cfg.Dir, filepath.FromSlash(p))
}

// lastSnapshot returns the snapshot of addr's last success, or nil.
func (e *Engine) lastSnapshot(ctx context.Context, addr Addr) *snapshot {
	b, err := e.Store.GetSnapshot(ctx, addr.String())
	if err != nil {
		return nil
	}
	s, err := decodeSnapshot(b)
	if err != nil {
		return nil
	}
	return s
}
