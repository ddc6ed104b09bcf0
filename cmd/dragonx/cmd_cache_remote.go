package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"text/tabwriter"

	"golang.org/x/sync/errgroup"

	"dragonx/cache"
	"dragonx/cache/remote"
	"dragonx/internal/humanize"
	"dragonx/internal/progress"
	"dragonx/internal/termtext"
	"dragonx/stages"
	"dragonx/stages/runlog"
)

// This file holds the remote-cache subcommands of `dragonx cache`: push,
// pull, and ls -remote.

// cacheRemoteFlags registers the flags that push, pull and ls -remote share.
func cacheRemoteFlags(fs *flag.FlagSet, rf *remoteFlags, stageNames *stringList) {
	rf.register(fs, false)
	fs.Var(stageNames, "stage", "only this stage `NAME` and the stages it depends on (repeatable)")
}

// openForRemote opens the cache and the remote for push, pull and ls: the
// experiment file (may be "") sets the cache directory and may set the
// remote. It checks that the remote answers.
func openForRemote(ctx context.Context, e *env, f *expFlags, rf *remoteFlags, file string, withProgress bool) (cache.Store, *remote.Client, *stages.Config, error) {
	var cfg *stages.Config
	if file != "" {
		c, err := loadExperiment(e, f, file)
		if err != nil {
			return nil, nil, nil, err
		}
		cfg = c
	}
	url, from := remoteURL(e, rf, cfg)
	if url == "" {
		return nil, nil, nil, usagef("no remote cache: give -remote URL, set $DRAGONX_REMOTE, or add cache { remote = \"URL\" } to the experiment")
	}
	store, _, err := openCacheFor(ctx, e, f, file)
	if err != nil {
		return nil, nil, nil, err
	}
	var p progress.Reporter
	if withProgress {
		p = bytesProgress(e, "remote")
	}
	client, err := openRemote(e, url, store, p)
	if err != nil {
		store.Close()
		return nil, nil, nil, fmt.Errorf("%w (the remote is set by %s)", err, from)
	}
	if err := client.Ping(ctx); err != nil {
		store.Close()
		return nil, nil, nil, fmt.Errorf("the remote cache %s cannot be used: %w", client, err)
	}
	return store, client, cfg, nil
}

func cachePush(ctx context.Context, e *env, fs *flag.FlagSet, f *expFlags, args []string) error {
	var rf remoteFlags
	var stageNames stringList
	cacheRemoteFlags(fs, &rf, &stageNames)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	file, err := optionalFile(pos)
	if err != nil {
		return err
	}
	targets, err := parseTargets(stageNames)
	if err != nil {
		return err
	}
	store, client, cfg, err := openForRemote(ctx, e, f, &rf, file, true)
	if err != nil {
		return err
	}
	defer store.Close()

	// What to push: the experiment's cached stages (with -stage, those and
	// their upstreams), else every entry of the local cache (with -stage,
	// those of the named stages).
	entries := map[cache.Key]string{}
	if cfg != nil {
		ks, err := currentKeys(ctx, e, f, store, file, targets)
		if err != nil {
			return err
		}
		entries = ks
	} else {
		err := store.Manifests(ctx, func(m *cache.Manifest) error {
			if matchesTargets(m.Stage, targets) {
				entries[m.Key] = m.Stage
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(entries) == 0 {
		return errors.New("nothing to push: no stage of the selection is in the local cache; run the experiment first")
	}
	keys := sortedKeys(entries)
	type outcome struct {
		pushed bool
		err    error
	}
	outs := make([]outcome, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, k := range keys {
		g.Go(func() error {
			pushed, err := client.Push(gctx, k)
			outs[i] = outcome{pushed, err}
			if err != nil && !errors.Is(err, cache.ErrMiss) {
				return err // the remote cannot be used: stop
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("pushing to %s: %w", client, err)
	}
	failed := 0
	for i, k := range keys {
		switch o := outs[i]; {
		case o.err != nil:
			failed++
			fmt.Fprintf(e.stdout, "  %-8s %s %s: %s\n", "failed", cache.Printable(entries[k]), k.Short(), cache.Printable(o.err.Error()))
		case o.pushed:
			fmt.Fprintf(e.stdout, "  %-8s %s %s\n", "pushed", cache.Printable(entries[k]), k.Short())
		default:
			fmt.Fprintf(e.stdout, "  %-8s %s %s\n", "present", cache.Printable(entries[k]), k.Short())
		}
	}
	s := client.Stats()
	fmt.Fprintf(e.stdout, "pushed %d of %d stage runs to %s: %d blobs (%s) uploaded\n", s.Pushed, len(keys), client, s.BlobsUp, humanize.Bytes(s.BytesUp))
	if err := pushRuns(ctx, e, f, client.Remote(), file); err != nil {
		return fmt.Errorf("pushing the run log to %s: %w", client, err)
	}
	if failed > 0 {
		return withCode(exitFailure, fmt.Errorf("%d stage run%s could not be pushed ('dragonx cache verify' checks the local cache)", failed, plural(failed)))
	}
	return nil
}

// matchesTargets reports whether the stage address s is one of targets (an
// unkeyed target matches every instance); no targets match everything.
func matchesTargets(s string, targets []stages.Addr) bool {
	if len(targets) == 0 {
		return true
	}
	a, err := stages.ParseAddr(s)
	if err != nil {
		return false
	}
	for _, t := range targets {
		if t == a || (!t.Keyed && t.Name == a.Name) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[cache.Key]string) []cache.Key {
	keys := make([]cache.Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] < m[keys[j]]
		}
		return keys[i].String() < keys[j].String()
	})
	return keys
}

func cachePull(ctx context.Context, e *env, fs *flag.FlagSet, f *expFlags, args []string) error {
	var rf remoteFlags
	var stageNames stringList
	cacheRemoteFlags(fs, &rf, &stageNames)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want the experiment file (a remote cache cannot list its entries: the experiment says which to pull)")
	}
	targets, err := parseTargets(stageNames)
	if err != nil {
		return err
	}
	store, client, cfg, err := openForRemote(ctx, e, f, &rf, pos[0], true)
	if err != nil {
		return err
	}
	defer store.Close()
	f.outDir = "-"
	eng := newEngine(e, f, cfg, store, "", nil)
	eng.Remote = client
	eng.Warn = warner(e, nil)
	rep, err := eng.Plan(ctx, cfg, targets)
	if err != nil {
		return err
	}
	if rep.RemoteErr != nil {
		return fmt.Errorf("the remote cache %s became unusable: %w", client, rep.RemoteErr)
	}
	var pull []*stages.Result
	for _, r := range rep.Results {
		if r.Status == stages.StatusCached && r.Remote {
			pull = append(pull, r)
		}
	}
	errs := make([]error, len(pull))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, r := range pull {
		g.Go(func() error {
			_, err := client.Fetch(gctx, r.Key)
			errs[i] = err
			if err != nil && !errors.Is(err, cache.ErrMiss) {
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("pulling from %s: %w", client, err)
	}
	failed := map[string]error{}
	for i, r := range pull {
		if errs[i] != nil {
			failed[r.Addr.String()] = errs[i]
		}
	}
	missing := 0
	for _, r := range rep.Results {
		name := r.Addr.Short()
		switch {
		case failed[r.Addr.String()] != nil:
			fmt.Fprintf(e.stdout, "  %-8s %s: %v\n", "failed", name, failed[r.Addr.String()])
		case r.Status == stages.StatusCached && r.Remote:
			fmt.Fprintf(e.stdout, "  %-8s %s %s\n", "pulled", name, r.Key.Short())
		case r.Status == stages.StatusCached:
			fmt.Fprintf(e.stdout, "  %-8s %s %s (already in the local cache)\n", "local", name, r.Key.Short())
		case r.Status == stages.StatusRun:
			missing++
			fmt.Fprintf(e.stdout, "  %-8s %s: not on the remote (it would run)\n", "missing", name)
		case r.Status == stages.StatusMaybe:
			missing++
			fmt.Fprintf(e.stdout, "  %-8s %s: an upstream stage is in neither cache (it would run after it)\n", "missing", name)
		default:
			fmt.Fprintf(e.stdout, "  %-8s %s: %s\n", r.Status, name, termtext.Clean(errText(r.Err)))
		}
	}
	s := client.Stats()
	fmt.Fprintf(e.stdout, "pulled %d stage run%s from %s: %d blobs (%s) downloaded; %d stage%s on neither cache\n",
		s.Pulled, plural(s.Pulled), client, s.BlobsDown, humanize.Bytes(s.BytesDown), missing, plural(missing))
	n, err := runlog.Pull(ctx, client.Remote(), runlog.Dir(cacheDirFor(e, f.cacheDir, pos[0])), runWarner(e))
	if err != nil {
		return fmt.Errorf("pulling the run log from %s: %w", client, err)
	}
	fmt.Fprintf(e.stdout, "pulled %d recorded run%s ('dragonx runs' lists them)\n", n, plural(n))
	if len(failed) > 0 {
		return withCode(exitFailure, fmt.Errorf("%d stage run%s could not be pulled", len(failed), plural(len(failed))))
	}
	return nil
}

// cacheLsRemote lists what the remote holds for each stage of an experiment.
func cacheLsRemote(ctx context.Context, e *env, f *expFlags, rf *remoteFlags, files []string) error {
	if len(files) != 1 {
		return usagef("cache ls -remote wants one experiment file (a remote cache cannot list its entries)")
	}
	store, client, cfg, err := openForRemote(ctx, e, f, rf, files[0], false)
	if err != nil {
		return err
	}
	defer store.Close()
	f.outDir = "-"
	eng := newEngine(e, f, cfg, store, "", nil)
	eng.Remote = client
	eng.Warn = warner(e, nil)
	rep, err := eng.Plan(ctx, cfg, nil)
	if err != nil {
		return err
	}
	if rep.RemoteErr != nil {
		return fmt.Errorf("the remote cache %s became unusable: %w", client, rep.RemoteErr)
	}
	type row struct {
		Stage   string `json:"stage"`
		Kind    string `json:"kind"`
		Key     string `json:"key,omitempty"`
		Remote  string `json:"remote"` // complete, incomplete, absent, unusable, unknown
		Detail  string `json:"detail,omitempty"`
		Local   bool   `json:"local"`
		Blobs   int    `json:"blobs"`
		Bytes   int64  `json:"bytes"`
		Missing int    `json:"missing_blobs"`
	}
	rows := make([]row, len(rep.Results))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, r := range rep.Results {
		rows[i] = row{Stage: r.Addr.Short(), Kind: r.Kind, Local: r.Status == stages.StatusCached && !r.Remote}
		if r.Key.IsZero() {
			rows[i].Remote = "unknown"
			rows[i].Detail = "an upstream stage is in neither cache, so this stage's key is not known"
			continue
		}
		rows[i].Key = r.Key.String()
		g.Go(func() error {
			en, err := client.Inspect(gctx, r.Key)
			var me *cache.MissError
			switch {
			case err == nil:
				rows[i].Blobs, rows[i].Bytes, rows[i].Missing = en.Blobs, en.Size, len(en.Missing)
				rows[i].Remote = "complete"
				if !en.Complete() {
					rows[i].Remote = "incomplete"
					rows[i].Detail = fmt.Sprintf("%d blob%s missing", len(en.Missing), plural(len(en.Missing)))
				}
			case errors.As(err, &me) && me.Reason == nil:
				rows[i].Remote = "absent"
			case errors.As(err, &me):
				rows[i].Remote = "unusable"
				rows[i].Detail = fmt.Sprintf("%s: %v", me.What, me.Reason)
			default:
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("listing %s: %w", client, err)
	}
	if f.json {
		return writeJSON(e.stdout, rows)
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "STAGE\tKIND\tKEY\tREMOTE\tLOCAL\tSIZE\t")
	complete := 0
	for _, r := range rows {
		key, local, size := "-", "-", "-"
		if r.Key != "" {
			key = r.Key[:12]
		}
		if r.Local {
			local = "yes"
		}
		if r.Remote == "complete" || r.Remote == "incomplete" {
			size = humanize.Bytes(r.Bytes)
		}
		if r.Remote == "complete" {
			complete++
		}
		state := r.Remote
		if r.Detail != "" {
			state += " (" + r.Detail + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Stage, r.Kind, key, state, local, size)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%d of %d stages complete on %s\n", complete, len(rows), client)
	return nil
}

// pushRuns appends the recorded runs (those of file, if not "") that the
// remote's run log lacks, and says how many.
func pushRuns(ctx context.Context, e *env, f *expFlags, r remote.Remote, file string) error {
	var keep func(*runlog.Entry) bool
	if file != "" {
		var err error
		if keep, err = runlog.OfFile(file); err != nil {
			return err
		}
	}
	pushed, present, err := runlog.Push(ctx, r, runlog.Dir(cacheDirFor(e, f.cacheDir, file)), keep, runWarner(e))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "pushed %d recorded run%s (%d already on the remote)\n", pushed, plural(pushed), present)
	return nil
}

// runWarner prints a remote run log slot that cannot be used.
func runWarner(e *env) func(error) {
	return func(err error) {
		fmt.Fprintf(e.stderr, "dragonx: warning: %s (skipped)\n", cache.Printable(err.Error()))
	}
}
