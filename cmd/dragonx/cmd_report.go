package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"dragonx/stages"
)

var cmdReport = &command{
	name:  "report",
	usage: "report [flags] [-open] [-format md|html] FILE.hcl | -compare RUN_A,RUN_B[,...]",
	short: "write the notebook report of an experiment from the cache, running nothing",
	long: `Report writes the notebook report of the experiment FILE.hcl as it is
configured now (-var, -var-file), from what the cache holds, without running any
stage: a cell per stage with its status (cached; failed, when its last run with
this configuration failed; not run, with the reason it would run), key, duration,
parameters, outputs and the tail of its log, then the results of the
experiment's analysis stages (tables and figures). 'dragonx run' writes the same
report after every run.

The report goes to OUT/report.html (one self-contained page: figures inline, no
network) and OUT/report.md (its figures in OUT/report_files/), OUT being -out
(default out/ at the experiment's repository root). It prints the path of the
page (-format md: of the Markdown). With -open, it opens that file with
xdg-open, or says that xdg-open is missing.

The report leads with the results: a summary (the provenance line: latency
source, scale, decoding; the main table; the paper's numbers beside ours; the
headline figures), then the stage cells, then the rest of the results.

With -compare RUN_A,RUN_B[,...] (runs of the run log: an id, a unique prefix,
last or last~N; see 'dragonx runs'), it writes instead one page that sets the
runs side by side, OUT/compare.html and OUT/compare.md (figures in
OUT/compare_files/): the runs; what differs in each from the first (the
experiment file, the variables, each stage's parameters in plan's words, the
stages whose results differ); the metrics side by side (those that differ and
the headline ones, with the last run's value minus the first's); and the
figures overlaid: the loss curves, the RL curves and the speedup CDFs of every
run on one axis each. The runs may be of different experiment files.
`,
	run: runReport,
}

func runReport(ctx context.Context, e *env, args []string) error {
	var f expFlags
	var open bool
	format := "html"
	fs := newFlagSet("report")
	f.registerLoad(fs)
	f.registerCache(fs)
	fs.StringVar(&f.outDir, "out", "", "write the report into `DIR` (default out/ at the repository root)")
	fs.BoolVar(&open, "open", false, "open the report with xdg-open")
	fs.StringVar(&format, "format", "html", "the report to print and open: `md` or html (both are written)")
	compare := fs.String("compare", "", "set the runs `RUN_A,RUN_B[,...]` side by side (ids, prefixes, last, last~N) instead")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if format != "md" && format != "html" {
		return usagef("-format %q: want md or html", format)
	}
	if f.outDir == "-" {
		return usagef("-out -: the report needs a directory")
	}
	if *compare != "" {
		if len(pos) != 0 {
			return usagef("-compare takes runs, not an experiment file")
		}
		path, err := runCompareReport(ctx, e, &f, *compare, format)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "report: %s\n", path)
		if open {
			return openFile(e, path)
		}
		return nil
	}
	if len(pos) != 1 {
		return usagef("want one experiment file, FILE.hcl")
	}
	cfg, err := loadExperiment(e, &f, pos[0])
	if err != nil {
		return err
	}
	cacheDir := cacheDirFor(e, f.cacheDir, cfg.File)
	store, err := openCache(ctx, e, cacheDir, f.lockTimeout)
	if err != nil {
		return err
	}
	defer store.Close()
	eng := newEngine(e, &f, cfg, store, cacheDir, nil)
	results, err := cachedResults(ctx, eng, cfg)
	if err != nil {
		return err
	}
	nb, err := buildNotebook(ctx, eng, cfg, results)
	if err != nil {
		return fmt.Errorf("building the report: %w", err)
	}
	if err := os.MkdirAll(eng.OutDir, 0o755); err != nil {
		return err
	}
	mdPath, htmlPath, err := writeReport(nb, eng.OutDir)
	if err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	path := htmlPath
	if format == "md" {
		path = mdPath
	}
	fmt.Fprintf(e.stdout, "report: %s\n", path)
	if open {
		return openFile(e, path)
	}
	return nil
}

// cachedResults is each instance's state in the cache, as a run would
// report it without running: cached (with its outputs, log and duration),
// failed (the last run of this very key failed), or run/maybe (not run).
func cachedResults(ctx context.Context, eng *stages.Engine, cfg *stages.Config) ([]*stages.Result, error) {
	rep, err := eng.Plan(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range rep.Results {
		if r.Status == stages.StatusCached || r.Key.IsZero() {
			continue
		}
		info, err := eng.Info(ctx, r.Addr)
		if err != nil {
			return nil, err
		}
		if fl := info.Failure; fl != nil && fl.Key == r.Key {
			r.Status = stages.StatusFailed
			r.Log = fl.Log
			r.Err = errors.New(fl.Error)
		}
	}
	return rep.Results, nil
}

// openFile opens path with xdg-open when it is installed.
func openFile(e *env, path string) error {
	bin, err := exec.LookPath("xdg-open")
	if err != nil {
		fmt.Fprintf(e.stderr, "dragonx: xdg-open is not installed; open %s in a browser\n", path)
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, abs)
	cmd.Stdout, cmd.Stderr = e.stderr, e.stderr
	// xdg-open hands the file to a viewer and returns.
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("xdg-open %s: %w", abs, err)
	}
	return nil
}
