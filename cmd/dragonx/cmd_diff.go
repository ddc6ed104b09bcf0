package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"dragonx/stages/runlog"
)

var cmdDiff = &command{
	name:  "diff",
	usage: "diff [flags] RUN_A RUN_B",
	short: "say what differs between two recorded runs: files, variables, parameters, results, metrics",
	long: `Diff compares two entries of the run log ('dragonx runs'). A run is named by
its id or a unique prefix of it, by last (the newest run) or by last~N (the Nth
run before it). The runs may be of different experiment files.

It prints, in this order: whether the experiment files differ (by the digest
of their bytes); the variables whose values differ; for each stage, the
parameters that differ, worded as 'dragonx plan' words them ("param
rl.reward.bonus_scale changed 1 -> 2"), and which of its outputs differ
(a stage with the same key in both runs has the same results); then the
analysis's metrics that changed, with the value in A, in B and the
difference B - A. -all lists every metric, changed or not.

With -json, the comparison goes to standard output as one JSON document:
  {"a", "b", "file", "vars": [...], "stages": [{"stage", "changes", "outputs",
   "same_results"}], "metrics": [{"stage", "table", "row", "column", "old",
   "new", "delta", "old_text", "new_text"}]}
`,
	run: runDiff,
}

func runDiff(ctx context.Context, e *env, args []string) error {
	var f expFlags
	fs := newFlagSet("diff")
	f.registerCache(fs)
	fs.BoolVar(&f.json, "json", false, "print the comparison as one JSON document")
	all := fs.Bool("all", false, "list every metric, also those that did not change")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("want two runs (an id or a prefix of one, last, last~N)")
	}
	l, _, err := openRunLog(e, &f, "")
	if err != nil {
		return err
	}
	a, err := l.Resolve(pos[0])
	if err != nil {
		return err
	}
	b, err := l.Resolve(pos[1])
	if err != nil {
		return err
	}
	d := runlog.Compare(a, b, *all)
	if f.json {
		return writeJSON(e.stdout, d)
	}
	printDiff(e.stdout, a, b, d, *all)
	return nil
}

// printDiff writes a comparison for people.
func printDiff(w io.Writer, a, b *runlog.Entry, d *runlog.Diff, all bool) {
	fmt.Fprintf(w, "A %s  %s  %s\n", a.Short(), a.Started.Local().Format("2006-01-02 15:04"), a.File)
	fmt.Fprintf(w, "B %s  %s  %s\n", b.Short(), b.Started.Local().Format("2006-01-02 15:04"), b.File)
	if d.File != "" {
		fmt.Fprintf(w, "\nexperiment file: %s\n", d.File)
	}
	if len(d.Vars) > 0 {
		fmt.Fprintln(w, "\nvariables:")
		for _, v := range d.Vars {
			fmt.Fprintf(w, "  %s\n", v)
		}
	}
	if len(d.Stages) > 0 {
		fmt.Fprintln(w, "\nstages:")
		for _, s := range d.Stages {
			fmt.Fprintf(w, "  %s\n", s.Stage)
			for _, c := range s.Changes {
				fmt.Fprintf(w, "    %s\n", c)
			}
			if len(s.Outputs) > 0 {
				fmt.Fprintf(w, "    results differ: %s\n", strings.Join(s.Outputs, ", "))
			}
		}
	}
	if d.File == "" && len(d.Vars) == 0 && len(d.Stages) == 0 {
		fmt.Fprintln(w, "\nsame experiment, variables, parameters and results")
	}
	if len(d.Metrics) == 0 {
		if len(a.Metrics)+len(b.Metrics) > 0 {
			fmt.Fprintln(w, "\nmetrics: none changed (-all lists them)")
		}
		return
	}
	title := "metrics that changed:"
	if all {
		title = "metrics:"
	}
	fmt.Fprintf(w, "\n%s\n", title)
	table := ""
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, m := range d.Metrics {
		if t := m.Stage + ": " + m.Table; t != table {
			tw.Flush()
			table = t
			fmt.Fprintf(w, "  %s\n", clipText(t, 100))
			fmt.Fprintln(tw, "    \tA\tB\tB - A")
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", clipText(m.Label(), 60), clipText(orDash(m.OldText), 24), clipText(orDash(m.NewText), 24), delta(m.Delta))
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// delta prints a difference with a sign, or "-" when there is none.
func delta(d *float64) string {
	if d == nil {
		return "-"
	}
	s := strconv.FormatFloat(*d, 'g', 4, 64)
	if *d > 0 {
		s = "+" + s
	}
	return s
}

// clipText shortens s to at most n runes.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
