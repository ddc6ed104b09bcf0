package reports

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Comparison is the page of `dragonx report -compare`: several recorded
// runs side by side. The runs are A, B, C, ... in the order given; every
// other run is compared with the first.
type Comparison struct {
	// Title heads the page; empty means "dragonx compare: <ids>".
	Title string
	// Runs are the runs compared; at least two.
	Runs []RunInfo
	// Changes says how each run after the first differs from it.
	Changes []RunChanges
	// Metrics are the results' metrics side by side, a table per results
	// table.
	Metrics []Table
	// Figures overlay the runs (loss, RL curves, speedup CDFs).
	Figures []FigureRef
	// Notes are shown under the figures (what some runs lack).
	Notes []string
	// Sources are the latency sources of the figures and metrics, for the
	// latency line ("model:h100": simulated).
	Sources []string
}

// RunInfo is one run of a comparison.
type RunInfo struct {
	// Label names the run in tables and legends ("A 3f2a91c04e1b").
	Label, ID, File, Started, Vars, Status string
}

// RunChanges is how one run differs from the first: a line per change,
// with where it is (the experiment file, the variables, a stage).
type RunChanges struct {
	Run, Against string
	Changes      []KV // Key: where; Value: the change in words
}

func (c *Comparison) validate() error {
	if c == nil {
		return errors.New("reports: nil comparison")
	}
	if len(c.Runs) < 2 {
		return fmt.Errorf("reports: a comparison needs two runs or more, got %d", len(c.Runs))
	}
	for _, t := range c.Metrics {
		for i, row := range t.Rows {
			if len(row) != len(t.Header) {
				return fmt.Errorf("reports: metrics table %q: row %d has %d cells for %d columns", t.Caption, i, len(row), len(t.Header))
			}
		}
	}
	for _, f := range c.Figures {
		if err := (&Results{Sections: []Section{{Title: "Figures", Figures: []FigureRef{f}}}}).validate(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Comparison) title() string {
	if c.Title != "" {
		return c.Title
	}
	ids := make([]string, len(c.Runs))
	for i, r := range c.Runs {
		ids[i] = r.Label
	}
	return "dragonx compare: " + strings.Join(ids, ", ")
}

func (c *Comparison) latency() string {
	return latencyLine(&Results{Sources: c.Sources})
}

// CompareHTML renders a comparison as one self-contained HTML page, as
// HTML renders a notebook.
func CompareHTML(c *Comparison) ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	v := compareView{Title: c.title(), Latency: c.latency(), Runs: c.Runs, Changes: c.Changes, Notes: c.Notes}
	for i, t := range c.Metrics {
		check := ""
		if i == 0 {
			check = "metrics-table"
		}
		v.Metrics = append(v.Metrics, newTableView(t, check))
	}
	for _, f := range c.Figures {
		v.Figures = append(v.Figures, newFigureView(f))
	}
	return execute("compare", v)
}

type compareView struct {
	Title, Latency string
	Runs           []RunInfo
	Changes        []RunChanges
	Metrics        []tableView
	Figures        []figureView
	Notes          []string
}

// CompareMarkdown renders a comparison as Markdown; figures are linked
// under figDir, as Markdown links a notebook's.
func CompareMarkdown(c *Comparison, figDir string) ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", mdText(c.title()))
	fmt.Fprintf(&b, "%s\n\n", mdText(c.latency()))
	b.WriteString("## Runs\n\n")
	rows := make([][]string, len(c.Runs))
	for i, r := range c.Runs {
		rows[i] = []string{mdText(r.Label), mdCode(r.ID, true), mdCode(r.File, true), mdText(r.Started), mdCode(r.Vars, true), mdText(r.Status)}
	}
	mdTable(&b, []string{"run", "id", "file", "started", "variables set", "status"}, rows, nil)
	b.WriteString("\n## What differs\n\n")
	for _, ch := range c.Changes {
		fmt.Fprintf(&b, "**%s against %s**\n\n", mdText(ch.Run), mdText(ch.Against))
		if len(ch.Changes) == 0 {
			b.WriteString("Nothing: the same experiment, variables, parameters and results.\n\n")
			continue
		}
		rows := make([][]string, len(ch.Changes))
		for i, kv := range ch.Changes {
			rows[i] = []string{mdCode(kv.Key, true), mdCode(kv.Value, true)}
		}
		mdTable(&b, []string{"where", "change"}, rows, nil)
		b.WriteString("\n")
	}
	b.WriteString("## Metrics\n\n")
	if len(c.Metrics) == 0 {
		b.WriteString("No metric differs, and the runs have no headline metrics.\n\n")
	}
	for _, t := range c.Metrics {
		mdResultTable(&b, t)
	}
	if len(c.Figures)+len(c.Notes) > 0 {
		b.WriteString("## Figures\n\n")
		for _, f := range c.Figures {
			mdFigure(&b, f, figDir)
		}
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "- %s\n", mdText(n))
		}
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n'), nil
}
