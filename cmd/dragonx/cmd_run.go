package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2"

	"dragonx/cache/remote"
	"dragonx/internal/progress"
	"dragonx/internal/redact"
	"dragonx/stages"
)

var cmdRun = &command{
	name:  "run",
	usage: "run [flags] [-remote URL] [-push] FILE.hcl [STAGE...]",
	short: "run an experiment: every stage whose inputs changed, in parallel",
	long: `Run loads the experiment FILE.hcl, computes each stage's key from its kind,
kind version, parameters and the content digests of its inputs, and runs only
the stages whose key has no complete entry in the cache. Independent stages run
in parallel (-j). A failed stage stops its dependents, which are reported as
skipped. Ctrl-C stops cleanly: running commands are interrupted, nothing partial
enters the cache, and the next run starts from what completed.

With STAGE arguments (gen, stage.gen, rl["log"]), only those stages and the
stages they depend on are considered.

Every stage's outputs are copied to OUT/<stage>/<path> (default out/ at the
experiment's repository root; -out - disables it). Each stage's log is stored in
the cache; 'dragonx show STAGE' replays it, also for cached stages.

After the run, the notebook report is written to OUT/report.html (one
self-contained page) and OUT/report.md, and its path printed: a cell per stage
(status ran, cached, failed or skipped; key; duration; parameters; outputs; the
tail of its log), then the results of the analysis stages ('dragonx help
report'; 'dragonx report FILE.hcl' writes it again from the cache). -out -
writes no report; with -json the path is not printed.

Every run, a no-op rerun and a failed run included, is recorded in the cache's
run log (the file and its digest, the variables, each stage's key, status,
parameters and outputs, the analysis's metrics; docs/runs.md) and its id
printed: 'dragonx runs' lists the runs, 'dragonx diff last~1 last' says what
changed, 'dragonx report -compare last~1,last' sets them side by side.

With -json, one JSON document goes to standard output:
  {"ok": bool, "stages": [{"name", "kind", "key", "status": "ran|cached|failed|skipped",
   "reasons": [...], "outputs": {NAME: "sha256:..."}, "duration_ms", "error", "cause"}]}

With a remote cache (-remote URL, $DRAGONX_REMOTE or the experiment's cache
block), a stage missing from the local cache is looked up on the remote; a
complete entry is downloaded, verified, into the local cache and the stage is
"cached" (pulled). With -push, every stage's result is also written through to
the remote: the outputs and log of each stage that ran, then its manifest, and
the entries of cached stages that the remote lacks. Stages cached locally do
not contact the remote unless pushing. A remote that is down, slow or refusing
never fails a run: one warning, and the run continues with the local cache. A
corrupt or incomplete entry on the remote is reported and the stage runs here.

DRAGONX_DEBUG=cachehash=1 prints every key's input lines; cacheverify=1 reruns
every stage and fails one whose outputs differ from the cached ones (see
'dragonx help cache').

` + remoteHelp,
	run: runRun,
}

func runRun(ctx context.Context, e *env, args []string) error {
	var f expFlags
	fs := newFlagSet("run")
	f.registerLoad(fs)
	f.registerCache(fs)
	fs.IntVar(&f.jobs, "j", 0, "run up to `N` stages at once (default: the number of CPUs)")
	fs.StringVar(&f.outDir, "out", "", "copy stage outputs under `DIR`/<stage>/ (default out/ at the repository root; - for none)")
	fs.BoolVar(&f.json, "json", false, "print the result as one JSON document on standard output")
	fs.BoolVar(&f.verbose, "v", false, "stream every stage's log as it runs")
	var rf remoteFlags
	rf.register(fs, true)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	cfg, targets, err := loadWithTargets(e, &f, pos)
	if err != nil {
		return err
	}
	push, err := pushWanted(e, &rf)
	if err != nil {
		return usagef("%v", err)
	}
	url, from := remoteURL(e, &rf, cfg)
	if push && url == "" {
		if rf.push.set {
			return usagef("-push needs a remote cache (-remote URL, $DRAGONX_REMOTE or the experiment's cache block)")
		}
		push = false // $DRAGONX_REMOTE_PUSH, for the experiments that have a remote
	}
	store, cacheDir, err := openCacheFor(ctx, e, &f, cfg.File)
	if err != nil {
		return err
	}
	defer store.Close()
	var ui stages.UI
	var tui *textUI
	if !f.json {
		tui = newTextUI(e.stderr, e.isTerminal, f.verbose)
		ui = tui
	}
	eng := newEngine(e, &f, cfg, store, cacheDir, ui)
	eng.Warn = warner(e, tui)
	var client *remote.Client
	if url != "" {
		var p progress.Reporter
		if tui != nil {
			p = tui
		}
		client, err = openRemote(e, url, store, p)
		if err != nil {
			return fmt.Errorf("%w (the remote is set by %s)", err, from)
		}
		eng.Remote, eng.Push = client, push
	}
	started := time.Now()
	rep, err := eng.Run(ctx, cfg, targets)
	if err != nil && rep == nil {
		return err
	}
	if ent := recordRun(ctx, e, eng, cfg, rep, cacheDir, pos[1:], started); ent != nil && !f.json {
		fmt.Fprintf(e.stderr, "run: %s recorded in the run log (dragonx runs)\n", ent.Short())
	}
	if client != nil && !f.json {
		if s := client.Stats(); s.Pulled > 0 || s.Pushed > 0 || push {
			fmt.Fprintln(e.stderr, remoteSummary(client, push))
		}
	}
	if f.json {
		if jerr := writeJSON(e.stdout, toReportJSON(rep)); jerr != nil {
			return jerr
		}
	}
	if ctx.Err() != nil {
		return withCode(exitInterrupted, errors.New("interrupted; completed stages are cached"))
	}
	if d := inputDiags(rep); len(d) > 0 && !f.json {
		printDiags(e, false, cfg, d)
	}
	reportOK := true
	if eng.OutDir != "" {
		reportOK = runReportAfter(ctx, e, eng, cfg, rep, f.json)
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return withCode(exitStageFailed, nil)
	}
	if !reportOK {
		return withCode(exitFailure, nil) // the error is printed
	}
	return nil
}

// inputDiags turns input errors (a missing local file) into diagnostics
// that point at the inputs attribute.
func inputDiags(rep *stages.Report) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, r := range rep.Results {
		var ie *stages.InputError
		if errors.As(r.Err, &ie) {
			rng := ie.Input.Range
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing input",
				Detail:   fmt.Sprintf("%s: %v. Create it, or fix the path in the stage's inputs.", r.Addr, ie.Err),
				Subject:  &rng,
			})
		}
	}
	return diags
}

// runReportAfter writes the notebook report of a finished run into the
// output directory and prints its path (not under -json, whose standard
// output is one document); it prints why it could not and returns false.
func runReportAfter(ctx context.Context, e *env, eng *stages.Engine, cfg *stages.Config, rep *stages.Report, asJSON bool) bool {
	nb, err := buildNotebook(ctx, eng, cfg, rep.Results)
	if err == nil {
		if err = os.MkdirAll(eng.OutDir, 0o755); err == nil {
			var htmlPath string
			_, htmlPath, err = writeReport(nb, eng.OutDir)
			if err == nil && !asJSON {
				fmt.Fprintf(e.stderr, "report: %s\n", htmlPath)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "dragonx run: writing the report: %s\n", redact.Text(err.Error()))
		return false
	}
	return true
}
