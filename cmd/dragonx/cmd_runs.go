package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"dragonx/stages/runlog"
)

var cmdRuns = &command{
	name:  "runs",
	usage: "runs [flags] [FILE.hcl]",
	short: "list the recorded runs, newest first: id, when, file, variables set, headline metrics",
	long: `Runs lists the run log: every 'dragonx run' records one entry in the cache
(the experiment file and its digest, the variables, each stage's key, status,
parameters and outputs, the tool, host, start and duration, and the analysis's
metrics; docs/runs.md). One line per run, newest first: its id (the first 12
hex digits; any unique prefix names it, and so do last and last~N), when it
started, the experiment file, the variables set to other values than their
defaults, whether a stage failed, and the headline metrics of the analysis
(pass@1 and geometric mean speedup of the policies in the main table).

With FILE.hcl, only the runs of that file (by its path) are listed, from the
cache that file uses. -n limits the count. With -json, the entries themselves
go to standard output as one JSON array, newest first.

'dragonx diff RUN_A RUN_B' compares two runs; 'dragonx report -compare
RUN_A,RUN_B' sets them side by side in one page.
`,
	run: runRuns,
}

func runRuns(ctx context.Context, e *env, args []string) error {
	var f expFlags
	fs := newFlagSet("runs")
	f.registerCache(fs)
	fs.BoolVar(&f.json, "json", false, "print the entries as one JSON array")
	limit := fs.Int("n", 0, "list at most `N` runs (0: all)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	file, err := optionalFile(pos)
	if err != nil {
		return err
	}
	l, _, err := openRunLog(e, &f, file)
	if err != nil {
		return err
	}
	ents := l.Entries
	if file != "" {
		of, err := runlog.OfFile(file)
		if err != nil {
			return err
		}
		var keep []*runlog.Entry
		for _, ent := range ents {
			if of(ent) {
				keep = append(keep, ent)
			}
		}
		ents = keep
	}
	if *limit > 0 && len(ents) > *limit {
		ents = ents[:*limit]
	}
	if f.json {
		if ents == nil {
			ents = []*runlog.Entry{}
		}
		type withID struct {
			ID string `json:"id"`
			*runlog.Entry
		}
		out := make([]withID, len(ents))
		for i, ent := range ents {
			out[i] = withID{ent.ID, ent}
		}
		return writeJSON(e.stdout, out)
	}
	if len(ents) == 0 {
		fmt.Fprintln(e.stdout, "no runs recorded yet ('dragonx run FILE.hcl' records one)")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTARTED\tFILE\tVARS\tRESULT")
	for _, ent := range ents {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ent.Short(), ent.Started.Local().Format("2006-01-02 15:04"),
			ent.File, setVars(ent), runResult(ent))
	}
	return tw.Flush()
}

// setVars is the variables of a run set to other values than their
// defaults: "scale=smoke seed=2", or "-".
func setVars(ent *runlog.Entry) string {
	var parts []string
	for _, v := range ent.Vars {
		if v.Set {
			parts = append(parts, v.Name+"="+plainJSON(v.Value))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// plainJSON shows a JSON string value without its quotes.
func plainJSON(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' && !strings.ContainsAny(s[1:len(s)-1], `"\ `) {
		return s[1 : len(s)-1]
	}
	return s
}

// runResult is a run's outcome: failed stages, else its headline metrics.
func runResult(ent *runlog.Entry) string {
	var failed []string
	for _, s := range ent.Stages {
		if s.Status == "failed" {
			failed = append(failed, strings.TrimPrefix(s.Stage, "stage."))
		}
	}
	if len(failed) > 0 {
		return "failed: " + strings.Join(failed, ", ")
	}
	hs := runlog.Headline(ent.Metrics, 4)
	if len(hs) == 0 {
		return fmt.Sprintf("ok (%d stage%s, %s)", len(ent.Stages), plural(len(ent.Stages)), ent.Duration.Round(time.Millisecond))
	}
	// Leave out the row cells every headline metric shares ("paper",
	// "policy"): "rl/construction pass@1=0.800".
	common := map[string]int{}
	for _, m := range hs {
		for _, c := range strings.Split(m.Row, " / ") {
			common[c]++
		}
	}
	parts := make([]string, len(hs))
	for i, m := range hs {
		var cells []string
		for _, c := range strings.Split(m.Row, " / ") {
			if len(hs) == 1 || common[c] < len(hs) {
				cells = append(cells, c)
			}
		}
		name := strings.Join(cells, "/")
		if m.Column != "value" {
			name += " " + m.Column
		}
		parts[i] = name + "=" + m.Text
	}
	return strings.Join(parts, "; ")
}
