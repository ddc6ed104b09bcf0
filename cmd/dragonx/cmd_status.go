package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"dragonx/internal/humanize"
	"dragonx/stages"
)

var cmdStatus = &command{
	name:  "status",
	usage: "status [flags] FILE.hcl",
	short: "show each stage's state in the cache: up to date, out of date, never run, failed",
	long: `Status lists every stage of the experiment with its state (up to date: cached
for the current configuration; out of date: it ran before, but something it
depends on changed; never run; failed: its last run failed), when it last ran,
how long it took and how many bytes of outputs it has. 'dragonx plan' says why
a stage would rerun.
`,
	run: runStatus,
}

func runStatus(ctx context.Context, e *env, args []string) error {
	var f expFlags
	fs := newFlagSet("status")
	f.registerLoad(fs)
	f.registerCache(fs)
	fs.BoolVar(&f.json, "json", false, "print the status as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want exactly one experiment file")
	}
	cfg, err := loadExperiment(e, &f, pos[0])
	if err != nil {
		return err
	}
	store, cacheDir, err := openCacheFor(ctx, e, &f, cfg.File)
	if err != nil {
		return err
	}
	defer store.Close()
	f.outDir = "-"
	eng := newEngine(e, &f, cfg, store, cacheDir, nil)
	rep, err := eng.Plan(ctx, cfg, nil)
	if err != nil {
		return err
	}
	type row struct {
		Stage      string `json:"stage"`
		Kind       string `json:"kind"`
		State      string `json:"state"`
		LastRun    string `json:"last_run,omitempty"`
		DurationMS int64  `json:"duration_ms"`
		OutBytes   int64  `json:"output_bytes"`
		Error      string `json:"error,omitempty"`
	}
	var rows []row
	for _, r := range rep.Results {
		info, err := eng.Info(ctx, r.Addr)
		if err != nil {
			return err
		}
		rw := row{Stage: r.Addr.Short(), Kind: r.Kind}
		switch {
		case r.Status == stages.StatusCached:
			rw.State = "up to date"
		case info.Failure != nil:
			rw.State = "failed"
			rw.Error = info.Failure.Error
		case info.LastKey != [32]byte{}:
			rw.State = "out of date"
		default:
			rw.State = "never run"
		}
		if m := info.Manifest; m != nil {
			rw.LastRun = m.Started.Local().Format(time.DateTime)
			rw.DurationMS = m.Duration.Milliseconds()
			for _, o := range m.Outputs {
				rw.OutBytes += o.Size
			}
		}
		if r.Status == stages.StatusCached {
			if m := eng.Manifest(ctx, r.Key); m != nil {
				rw.LastRun = m.Started.Local().Format(time.DateTime)
				rw.DurationMS = m.Duration.Milliseconds()
				rw.OutBytes = 0
				for _, o := range m.Outputs {
					rw.OutBytes += o.Size
				}
			}
		}
		rows = append(rows, rw)
	}
	if f.json {
		return writeJSON(e.stdout, rows)
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "STAGE\tKIND\tSTATE\tLAST RUN\tTOOK\tOUTPUTS")
	for _, r := range rows {
		took := "-"
		if r.LastRun != "" {
			took = (time.Duration(r.DurationMS) * time.Millisecond).String()
		}
		last := r.LastRun
		if last == "" {
			last = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Stage, r.Kind, r.State, last, took, humanize.Bytes(r.OutBytes))
	}
	return tw.Flush()
}
