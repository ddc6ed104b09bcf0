package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"dragonx/cache"
	"dragonx/internal/humanize"
	"dragonx/internal/termtext"
	"dragonx/stages"
)

var cmdShow = &command{
	name:  "show",
	usage: "show [flags] [FILE.hcl] STAGE",
	short: "replay a stage's stored log and show its outputs, even when it was cached",
	long: `Show prints what the cache holds for STAGE (gen, stage.gen, rl["log"]): its key,
when it ran, how long it took, its outputs with their digests and sizes, and then
its stored log as the stage wrote it, less the control sequences a terminal would
act on (colours, window titles, clear screen, carriage returns). If the stage's
last run failed, show prints that run's error and log.

With FILE.hcl, show describes the stage as the experiment is configured now (and
says if the cached result is out of date); without it, the stage's last run in
the cache (chosen by --cache, $DRAGONX_CACHE, or .dragonx/cache at the current
repository's root).
`,
	run: runShow,
}

func runShow(ctx context.Context, e *env, args []string) error {
	var f expFlags
	var logOnly bool
	fs := newFlagSet("show")
	f.registerLoad(fs)
	f.registerCache(fs)
	fs.BoolVar(&logOnly, "log", false, "print only the log")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	var file string
	switch {
	case len(pos) == 2:
		file = pos[0]
		pos = pos[1:]
	case len(pos) != 1:
		return usagef("want [FILE.hcl] STAGE")
	}
	addr, err := stages.ParseAddr(pos[0])
	if err != nil {
		return usagef("%v", err)
	}
	var cfg *stages.Config
	if file != "" {
		if cfg, err = loadExperiment(e, &f, file); err != nil {
			return err
		}
		if cfg.Instance(addr) == nil {
			return fmt.Errorf("%s has no stage %s", file, addr)
		}
	}
	cacheDir := cacheDirFor(e, f.cacheDir, file)
	store, err := openCache(ctx, e, cacheDir, f.lockTimeout)
	if err != nil {
		return err
	}
	defer store.Close()
	f.outDir = "-"
	eng := newEngine(e, &f, cfg, store, cacheDir, nil)
	info, err := eng.Info(ctx, addr)
	if err != nil {
		return err
	}
	m := info.Manifest
	note := ""
	if cfg != nil {
		rep, err := eng.Plan(ctx, cfg, []stages.Addr{addr})
		if err != nil {
			return err
		}
		for _, r := range rep.Results {
			if r.Addr != addr {
				continue
			}
			if r.Status == stages.StatusCached {
				m = eng.Manifest(ctx, r.Key)
			} else if m != nil {
				note = "out of date: " + strings.Join(r.Reasons, "; ")
			}
		}
	}
	if info.Failure != nil {
		if !logOnly {
			fmt.Fprintf(e.stdout, "stage   %s\nstatus  failed at %s\nerror   %s\n\n", addr, info.Failure.Time.Local().Format(time.DateTime), termtext.Clean(info.Failure.Error))
		}
		return copyLog(ctx, eng, info.Failure.Log, e.stdout)
	}
	if m == nil {
		return fmt.Errorf("the cache %s holds no run of %s", cacheDir, addr)
	}
	if !logOnly {
		fmt.Fprintf(e.stdout, "stage    %s (%s, version %s)\n", addr, cache.Printable(m.Kind), cache.Printable(m.KindVersion))
		fmt.Fprintf(e.stdout, "key      %s\n", m.Key)
		fmt.Fprintf(e.stdout, "ran      %s on %s with %s, took %s\n", m.Started.Local().Format(time.DateTime), cache.Printable(m.Host), cache.Printable(m.Tool), m.Duration.Round(time.Millisecond))
		if note != "" {
			fmt.Fprintf(e.stdout, "note     %s\n", note)
		}
		names := make([]string, 0, len(m.Outputs))
		for n := range m.Outputs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			o := m.Outputs[n]
			kind := "file"
			if o.Tree {
				kind = "dir"
			}
			fmt.Fprintf(e.stdout, "output   %s = %s (%s, %s)\n", cache.Printable(n), o.Digest, kind, humanize.Bytes(o.Size))
		}
		fmt.Fprintln(e.stdout, "--- log ---")
	}
	return copyLog(ctx, eng, m.Log, e.stdout)
}

// copyLog writes a stored log (local, or pulled from a remote) to w
// without its control sequences (termtext): a log is the stage's output,
// not text dragonx wrote, and must not rewrite the terminal.
func copyLog(ctx context.Context, eng *stages.Engine, log cache.Digest, w io.Writer) error {
	tw := termtext.NewWriter(w)
	if err := eng.CopyBlob(ctx, log, tw); err != nil {
		return err
	}
	return tw.Flush()
}
