package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"dragonx/cache"
	"dragonx/plots"
	"dragonx/reports"
	"dragonx/stages/runlog"
)

// Comparison report files, under the output directory.
const (
	compareMD      = "compare.md"
	compareHTML    = "compare.html"
	compareFigures = "compare_files"
)

// runCompareReport writes the page that sets the runs named in list
// ("A,B[,...]") side by side and returns the path of the HTML (format
// html) or Markdown file.
func runCompareReport(ctx context.Context, e *env, f *expFlags, list, format string) (string, error) {
	names := strings.Split(list, ",")
	if len(names) < 2 {
		return "", usagef("-compare %q: want two runs or more, separated by commas", list)
	}
	cacheDir := cacheDirFor(e, f.cacheDir, "")
	l, _, err := openRunLog(e, f, "")
	if err != nil {
		return "", err
	}
	var runs []*runlog.Entry
	for _, n := range names {
		r, err := l.Resolve(strings.TrimSpace(n))
		if err != nil {
			return "", err
		}
		runs = append(runs, r)
	}
	store, err := openCache(ctx, e, cacheDir, f.lockTimeout)
	if err != nil {
		return "", err
	}
	defer store.Close()
	c, err := comparison(ctx, store, runs)
	if err != nil {
		return "", err
	}
	out := f.outDir
	if out == "" {
		out = filepath.Join(projectRoot(""), "out")
	}
	return writeComparison(c, out, format)
}

// runLetter names the i-th run of a comparison: A, B, ..., Z, then R27...
func runLetter(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return fmt.Sprintf("R%d", i+1)
}

// comparison gathers what the page shows.
func comparison(ctx context.Context, store cache.Store, runs []*runlog.Entry) (*reports.Comparison, error) {
	c := &reports.Comparison{}
	labels := make([]string, len(runs))
	for i, r := range runs {
		labels[i] = runLetter(i) + " " + r.Short()
		status := "ok"
		if res := runResult(r); strings.HasPrefix(res, "failed") {
			status = res
		}
		c.Runs = append(c.Runs, reports.RunInfo{
			Label: runLetter(i), ID: r.Short(), File: r.File, Started: r.Started.Local().Format("2006-01-02 15:04"),
			Vars: setVars(r), Status: status,
		})
	}
	for i, r := range runs[1:] {
		d := runlog.Compare(runs[0], r, false)
		ch := reports.RunChanges{Run: labels[i+1], Against: labels[0]}
		if d.File != "" {
			ch.Changes = append(ch.Changes, reports.KV{Key: "experiment file", Value: d.File})
		}
		for _, v := range d.Vars {
			ch.Changes = append(ch.Changes, reports.KV{Key: "variables", Value: v})
		}
		for _, s := range d.Stages {
			for _, line := range s.Changes {
				ch.Changes = append(ch.Changes, reports.KV{Key: s.Stage, Value: line})
			}
			if len(s.Outputs) > 0 {
				ch.Changes = append(ch.Changes, reports.KV{Key: s.Stage, Value: "results differ: " + strings.Join(s.Outputs, ", ")})
			}
		}
		c.Changes = append(c.Changes, ch)
	}
	c.Metrics = runlog.SideBySide(runs, labels)
	figs, notes, err := runlog.Figures(ctx, store, runs, labels, plots.DefaultStyle())
	if err != nil {
		return nil, err
	}
	for _, f := range figs {
		c.Figures = append(c.Figures, reports.FigureRef{Name: f.Name, Caption: f.Caption, SVG: f.SVG, PNG: f.PNG})
	}
	c.Notes = notes
	c.Sources = figureSources(runs)
	return c, nil
}

// figureSources are the latency sources the runs' metrics name (a
// "latency source" column), for the page's latency line.
func figureSources(runs []*runlog.Entry) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		for _, m := range r.Metrics {
			if m.Column != "latency source" {
				continue
			}
			s, _, _ := strings.Cut(m.Text, " ")
			if (strings.HasPrefix(s, "model:") || strings.HasPrefix(s, "measured:")) && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// writeComparison writes compare.html, compare.md and its figures into
// dir and returns the path of the one format names.
func writeComparison(c *reports.Comparison, dir, format string) (string, error) {
	md, err := reports.CompareMarkdown(c, compareFigures)
	if err != nil {
		return "", err
	}
	html, err := reports.CompareHTML(c)
	if err != nil {
		return "", err
	}
	figs := filepath.Join(dir, compareFigures)
	if err := os.RemoveAll(figs); err != nil {
		return "", err
	}
	if err := os.MkdirAll(figs, 0o755); err != nil {
		return "", err
	}
	for _, f := range c.Figures {
		for ext, b := range map[string][]byte{".svg": f.SVG, ".png": f.PNG} {
			if err := os.WriteFile(filepath.Join(figs, f.Name+ext), b, 0o644); err != nil {
				return "", err
			}
		}
	}
	mdPath, htmlPath := filepath.Join(dir, compareMD), filepath.Join(dir, compareHTML)
	if err := writeFileAtomic(mdPath, md); err != nil {
		return "", err
	}
	if err := writeFileAtomic(htmlPath, html); err != nil {
		return "", err
	}
	if format == "md" {
		return mdPath, nil
	}
	return htmlPath, nil
}
