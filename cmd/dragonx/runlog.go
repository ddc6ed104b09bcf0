package main

import (
	"context"
	"fmt"
	"time"

	"dragonx/internal/redact"
	"dragonx/stages"
	"dragonx/stages/runlog"
)

// recordRun writes the run log entry of a finished run into the cache
// directory's run log and returns it; a failure is printed as a warning,
// never fails the run.
func recordRun(ctx context.Context, e *env, eng *stages.Engine, cfg *stages.Config, rep *stages.Report, cacheDir string, targets []string, started time.Time) *runlog.Entry {
	ent, err := runlog.NewEntry(context.WithoutCancel(ctx), eng.Store, runlog.Run{
		Config:   cfg,
		Report:   rep,
		Root:     projectRoot(cfg.File),
		Targets:  targets,
		Tool:     eng.Tool,
		Host:     eng.Host,
		Started:  started,
		Duration: time.Since(started),
	})
	if err == nil {
		err = runlog.Write(runlog.Dir(cacheDir), ent)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "dragonx run: warning: the run was not recorded in the run log: %s\n", redact.Text(err.Error()))
		return nil
	}
	return ent
}

// openRunLog reads the run log of the cache that file (or, for "", the
// current directory's project) uses.
func openRunLog(e *env, f *expFlags, file string) (*runlog.Log, string, error) {
	dir := runlog.Dir(cacheDirFor(e, f.cacheDir, file))
	l, err := runlog.List(dir)
	if err != nil {
		return nil, dir, err
	}
	for _, s := range l.Skipped {
		fmt.Fprintf(e.stderr, "dragonx: warning: %v (skipped)\n", s)
	}
	return l, dir, nil
}
