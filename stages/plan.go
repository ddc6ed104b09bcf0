package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"dragonx/cache"
)

// Plan says, without running anything, what Run would do: for each selected
// instance whether it is cached, would run, or may run (an upstream stage
// runs first), with the reasons in words. targets narrows the plan to those
// stages and their upstreams. With a Remote, a stage missing locally but
// complete on the remote is cached (Result.Remote), and the keys of its
// dependents follow from the remote's manifest.
func (e *Engine) Plan(ctx context.Context, cfg *Config, targets []Addr) (*Report, error) {
	insts, err := selectInstances(cfg, targets)
	if err != nil {
		return nil, err
	}
	if e.UI != nil {
		e.UI.Begin("plan", len(insts), e.Jobs)
	}
	results := map[string]*Result{}
	done := func(a Addr) *Result {
		r := results[a.String()]
		if r == nil || r.Status != StatusCached {
			return nil
		}
		return r
	}
	remote := e.useRemote()
	rep := &Report{}
	for _, inst := range insts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res := &Result{Addr: inst.Addr, Kind: inst.Kind.Name()}
		results[inst.Addr.String()] = res
		rep.Results = append(rep.Results, res)

		var blocked []string
		for _, d := range inst.Deps {
			if r := results[d.String()]; r != nil && r.Status != StatusCached {
				if r.Status == StatusFailed {
					res.Status = StatusSkipped
					res.Cause = r.Cause
					if res.Cause == nil {
						a := r.Addr
						res.Cause = &a
					}
				}
				blocked = append(blocked, d.String())
			}
		}
		if res.Status == StatusSkipped {
			res.Reasons = []string{fmt.Sprintf("upstream %s failed", res.Cause)}
			continue
		}
		digests, unknown, err := e.resolveInputs(ctx, cfg, inst, done)
		if err != nil {
			res.Status = StatusFailed
			res.Err = err
			continue
		}
		prev := e.lastSnapshot(ctx, inst.Addr)
		if unknown {
			res.Status = StatusMaybe
			sort.Strings(blocked)
			for _, b := range blocked {
				res.Reasons = append(res.Reasons, fmt.Sprintf("upstream %s runs first; its outputs decide", b))
			}
			for _, r := range explain(prev, inst, digests) {
				if r != "no previous run" || prev == nil {
					res.Reasons = append(res.Reasons, r)
				}
			}
			continue
		}
		lines := keyInput(inst, digests)
		res.Key = hashLines(lines)
		if e.Debug.CacheHash && e.DebugOut != nil {
			fmt.Fprint(e.DebugOut, keyDebug(inst.Addr, res.Key, lines))
		}
		m, err := e.Store.GetManifest(ctx, res.Key)
		if err == nil && missingOutput(inst, m) == "" && e.blobsPresent(ctx, m) {
			res.Status = StatusCached
			res.Outputs = m.Outputs
			res.Log = m.Log
			res.Duration = m.Duration
			if e.Debug.CacheVerify {
				res.Status = StatusRun
				res.Reasons = []string{"DRAGONX_DEBUG=cacheverify=1 reruns every stage"}
			}
			continue
		}
		if !e.Debug.CacheVerify {
			if m := remote.lookup(ctx, inst.Addr, res.Key); m != nil && missingOutput(inst, m) == "" {
				res.Status = StatusCached
				res.Remote = true
				res.Outputs = m.Outputs
				res.Log = m.Log
				res.Duration = m.Duration
				continue
			}
		}
		res.Status = StatusRun
		res.Reasons = explain(prev, inst, digests)
		if err == nil {
			if name := missingOutput(inst, m); name != "" {
				res.Reasons = []string{incompleteReason(name)}
			}
		}
		if len(res.Reasons) == 0 {
			res.Reasons = []string{"the cached result of this exact configuration is gone (removed by gc, deleted, or found corrupt)"}
		}
		if r := e.resumeReason(res.Key); r != "" {
			res.Reasons = append(res.Reasons, r)
		}
	}
	rep.RemoteErr = remote.err()
	if e.UI != nil {
		for _, r := range rep.Results {
			e.UI.Finished(r, nil)
		}
		e.UI.End(rep)
	}
	return rep, nil
}

// missingOutput returns the name of an output inst declares that manifest m
// does not record, or "". Such a manifest (damaged, crafted, or written
// when the stage declared fewer outputs) is a miss: the stage reruns and
// its new manifest replaces it.
func missingOutput(inst *Instance, m *cache.Manifest) string {
	for _, o := range inst.Stage.Outputs() {
		if _, ok := m.Outputs[o.Name]; !ok {
			return o.Name
		}
	}
	return ""
}

// incompleteReason explains a rerun for a manifest that lacks an output.
func incompleteReason(output string) string {
	return fmt.Sprintf("the cached result lacks the declared output %q; regenerating", output)
}

// blobsPresent reports whether every blob a manifest names is stored.
func (e *Engine) blobsPresent(ctx context.Context, m *cache.Manifest) bool {
	for _, d := range m.Blobs() {
		ok, err := e.Store.HasBlob(ctx, d)
		if err != nil || !ok {
			return false
		}
	}
	return true
}

// resumeReason says that an interrupted or failed run of key left resume
// state (RunContext.StateDir) that the next run continues from, or "".
func (e *Engine) resumeReason(key cache.Key) string {
	if e.StateRoot == "" || key.IsZero() {
		return ""
	}
	ents, err := os.ReadDir(filepath.Join(e.StateRoot, key.String()))
	if err != nil || len(ents) == 0 {
		return ""
	}
	return "an interrupted run of this configuration left resume state; the stage continues from it"
}
