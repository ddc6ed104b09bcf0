package reports

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Notebook is the report of one run of an experiment: a cell per stage,
// then the results.
type Notebook struct {
	// Title heads the report; empty means "dragonx report: <Experiment>".
	Title string
	// Experiment names the experiment (its file); required.
	Experiment string
	// Scale is the scale the experiment ran at (paper.hcl's var.scale).
	Scale string
	// Cells has one cell per stage, in plan order.
	Cells []Cell
	// Results may be nil (no analysis stage).
	Results *Results
	// Decoding says how the benchmarked policies sampled ("grammar+gpu_limits,
	// temperature 0.8, 2 attempts and a greedy one"), for the summary's
	// provenance line; empty when not known.
	Decoding string
}

// Cell is one stage of a notebook.
type Cell struct {
	// Stage is the stage's address; required.
	Stage string
	// Kind is the stage's kind.
	Kind string
	// Key is the stage's cache key (hex, may carry a "name:" prefix); the
	// report shows its first 12 digits and keeps the whole in a tooltip.
	Key string
	// Status is one of "ran", "cached" (or "cached/<where>", e.g.
	// "cached/remote"), "failed", "skipped" (an upstream stage failed) or
	// "not run".
	Status string
	// Duration is how long the stage ran (for a cached stage: the run that
	// made the entry); zero shows as "-".
	Duration time.Duration
	Params   []KV
	Outputs  []Output
	// LogTail is the end of the stage's log.
	LogTail string
}

// KV is one parameter of a stage, its value as text.
type KV struct{ Key, Value string }

// Output is one output of a stage: its name, the digest of its content and
// its size in bytes.
type Output struct {
	Name, Digest string
	Size         int64
}

// Results is what the analysis stage computed, in sections.
type Results struct {
	// Scale is the scale the numbers were computed at; shown with them.
	Scale string
	// Sources lists the latency sources of the numbers in these results
	// ("model:h100", "measured:cuda:0", ...). A "model:" source is
	// labelled simulated (the GPU model); only "measured:" sources are
	// called measured. Any other source is an error.
	Sources  []string
	Sections []Section
}

// Section is one part of the results: a title, paragraphs of plain text
// (separated by blank lines), tables and figures.
type Section struct {
	Title, Text string
	Tables      []Table
	Figures     []FigureRef
}

// Table is a table of text cells. Every row has as many cells as Header.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
	// Notes are shown under the table (sources, definitions).
	Notes []string
}

// FigureRef is a figure of the results. Name is its file name without
// extension (letters, digits, '.', '_', '-'): Markdown links
// figDir/Name.svg (Name.png when there is no SVG); HTML embeds the SVG (or
// the PNG) as a data: URI. At least one of SVG and PNG is required.
type FigureRef struct {
	Name, Caption string
	SVG, PNG      []byte
}

// nameRE is the shape of a figure's file name.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// pngMagic starts every PNG file.
var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// statusClass maps a cell's status to its badge's class (and validates it).
func statusClass(status string) (string, error) {
	switch {
	case status == "ran":
		return "ran", nil
	case status == "cached" || strings.HasPrefix(status, "cached/") && len(status) > len("cached/"):
		return "cached", nil
	case status == "failed":
		return "failed", nil
	case status == "skipped":
		return "skipped", nil
	case status == "not run":
		return "notrun", nil
	}
	return "", fmt.Errorf("unknown status %q (want ran, cached, cached/<where>, failed, skipped or not run)", status)
}

// sourceLabel says what a latency source is: simulated (model:*) or
// measured (measured:*).
func sourceLabel(src string) (string, error) {
	switch {
	case strings.HasPrefix(src, "model:") && len(src) > len("model:"):
		return "simulated by the GPU model", nil
	case strings.HasPrefix(src, "measured:") && len(src) > len("measured:"):
		return "measured", nil
	}
	return "", fmt.Errorf("unknown latency source %q (want model:<gpu> or measured:<device>)", src)
}

// validate checks a notebook before rendering; errors name the cell,
// section, table or figure.
func (nb *Notebook) validate() error {
	if nb == nil {
		return errors.New("reports: nil notebook")
	}
	if strings.TrimSpace(nb.Experiment) == "" {
		return errors.New("reports: notebook has no experiment name")
	}
	seen := make(map[string]bool, len(nb.Cells))
	for i, c := range nb.Cells {
		if strings.TrimSpace(c.Stage) == "" {
			return fmt.Errorf("reports: cell %d has no stage address", i)
		}
		if seen[c.Stage] {
			return fmt.Errorf("reports: stage %q has two cells", c.Stage)
		}
		seen[c.Stage] = true
		if _, err := statusClass(c.Status); err != nil {
			return fmt.Errorf("reports: stage %q: %w", c.Stage, err)
		}
		if c.Duration < 0 {
			return fmt.Errorf("reports: stage %q: negative duration %v", c.Stage, c.Duration)
		}
		for _, o := range c.Outputs {
			if o.Name == "" {
				return fmt.Errorf("reports: stage %q: an output has no name", c.Stage)
			}
			if o.Size < 0 {
				return fmt.Errorf("reports: stage %q: output %q has negative size %d", c.Stage, o.Name, o.Size)
			}
		}
	}
	if nb.Results != nil {
		if err := nb.Results.validate(); err != nil {
			return err
		}
	}
	return nil
}

func (r *Results) validate() error {
	if r == nil {
		return errors.New("reports: nil results")
	}
	for _, s := range r.Sources {
		if _, err := sourceLabel(s); err != nil {
			return fmt.Errorf("reports: results: %w", err)
		}
	}
	figs := make(map[string]bool)
	for i, s := range r.Sections {
		if strings.TrimSpace(s.Title) == "" {
			return fmt.Errorf("reports: results section %d has no title", i)
		}
		for j, t := range s.Tables {
			if err := t.validate(); err != nil {
				return fmt.Errorf("reports: section %q, table %d: %w", s.Title, j, err)
			}
		}
		for _, f := range s.Figures {
			if err := f.validate(); err != nil {
				return fmt.Errorf("reports: section %q: %w", s.Title, err)
			}
			if figs[f.Name] {
				return fmt.Errorf("reports: section %q: figure name %q used twice (the Markdown links would clash)", s.Title, f.Name)
			}
			figs[f.Name] = true
		}
	}
	return nil
}

func (t Table) validate() error {
	if len(t.Header) == 0 {
		return fmt.Errorf("table %q has no header", t.Caption)
	}
	for i, row := range t.Rows {
		if len(row) != len(t.Header) {
			return fmt.Errorf("table %q: row %d has %d cells, the header %d", t.Caption, i, len(row), len(t.Header))
		}
	}
	return nil
}

func (f FigureRef) validate() error {
	if !nameRE.MatchString(f.Name) {
		return fmt.Errorf("figure name %q is not a plain file name (letters, digits, '.', '_', '-')", f.Name)
	}
	if len(f.SVG) == 0 && len(f.PNG) == 0 {
		return fmt.Errorf("figure %q has no image bytes (neither SVG nor PNG)", f.Name)
	}
	if len(f.SVG) > 0 && !bytes.Contains(f.SVG, []byte("<svg")) {
		return fmt.Errorf("figure %q: its SVG bytes have no <svg element", f.Name)
	}
	if len(f.PNG) > 0 && !bytes.HasPrefix(f.PNG, pngMagic) {
		return fmt.Errorf("figure %q: its PNG bytes do not start with the PNG signature", f.Name)
	}
	return nil
}
