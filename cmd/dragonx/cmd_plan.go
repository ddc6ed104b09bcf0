package main

import (
	"context"
	"fmt"

	"dragonx/stages"
)

var cmdPlan = &command{
	name:  "plan",
	usage: "plan [flags] [-remote URL] FILE.hcl [STAGE...]",
	short: "say what run would do and why, without running anything",
	long: `Plan computes every stage's key like run and says, for each stage, whether it
is cached, would run ("run"), or may run ("maybe": an upstream stage runs first,
and this one reruns unless that stage's outputs come out identical). Each stage
that would run comes with the reasons, compared with its last run: a parameter
with its old and new values ("param square.command changed ... -> ..."), an input
whose content changed, a kind version, or no previous run.

With a remote cache (-remote URL, $DRAGONX_REMOTE or the experiment's cache
block), a stage missing from the local cache but complete on the remote is
"cached (on the remote cache)": run would pull it. Plan downloads nothing but the
manifests (and the small tree listings of directory outputs).

With -json, one JSON document goes to standard output, shaped like run's, with
status "cached", "run" or "maybe" (and "remote": true for a stage cached only on
the remote).

` + remoteHelp,
	run: runPlan,
}

func runPlan(ctx context.Context, e *env, args []string) error {
	var f expFlags
	fs := newFlagSet("plan")
	f.registerLoad(fs)
	f.registerCache(fs)
	fs.BoolVar(&f.json, "json", false, "print the plan as one JSON document on standard output")
	var rf remoteFlags
	rf.register(fs, false)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	cfg, targets, err := loadWithTargets(e, &f, pos)
	if err != nil {
		return err
	}
	store, cacheDir, err := openCacheFor(ctx, e, &f, cfg.File)
	if err != nil {
		return err
	}
	defer store.Close()
	var ui stages.UI
	var tui *textUI
	if !f.json {
		tui = newTextUI(e.stdout, false, false)
		ui = tui
	}
	f.outDir = "-"
	eng := newEngine(e, &f, cfg, store, cacheDir, ui)
	if url, from := remoteURL(e, &rf, cfg); url != "" {
		client, err := openRemote(e, url, store, nil)
		if err != nil {
			return fmt.Errorf("%w (the remote is set by %s)", err, from)
		}
		eng.Remote = client
		eng.Warn = warner(e, nil)
	}
	rep, err := eng.Plan(ctx, cfg, targets)
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(e.stdout, toReportJSON(rep))
	}
	if d := inputDiags(rep); len(d) > 0 {
		printDiags(e, false, cfg, d)
		return withCode(exitConfig, nil)
	}
	return nil
}
