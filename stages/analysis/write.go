package analysis

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"dragonx/reports"
)

// Result files.
const (
	TablesDir   = "tables"
	FiguresDir  = "figures"
	ResultsFile = "results.json"
)

// write writes the tables, the figures and the results into dir.
func (r *result) write(dir string) error {
	for _, d := range []string{TablesDir, FiguresDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, t := range r.tables {
		if seen["t/"+t.name] {
			return fmt.Errorf("internal error: two tables named %s", t.name)
		}
		seen["t/"+t.name] = true
		c, err := tableCSV(t.t)
		if err != nil {
			return fmt.Errorf("table %s: %w", t.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, TablesDir, t.name+".csv"), c, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, TablesDir, t.name+".md"), tableMarkdown(t.t), 0o644); err != nil {
			return err
		}
	}
	for _, f := range r.figures {
		if seen["f/"+f.Name] {
			return fmt.Errorf("internal error: two figures named %s", f.Name)
		}
		seen["f/"+f.Name] = true
		if len(f.SVG) == 0 || len(f.PNG) == 0 {
			return fmt.Errorf("figure %s: the plot gave no SVG or no PNG", f.Name)
		}
		if err := os.WriteFile(filepath.Join(dir, FiguresDir, f.Name+".svg"), f.SVG, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, FiguresDir, f.Name+".png"), f.PNG, 0o644); err != nil {
			return err
		}
	}
	md, html, err := reports.RenderResults(r.results)
	if err != nil {
		return fmt.Errorf("rendering the results: %w", err)
	}
	js, err := json.MarshalIndent(StripFigures(r.results), "", "  ")
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{ResultsFile: append(js, '\n'), "results.md": md, "results.html": html} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// StripFigures returns a copy of res without the figures' bytes: what
// results.json holds (the bytes are in figures/NAME.svg and NAME.png).
func StripFigures(res *reports.Results) *reports.Results {
	out := &reports.Results{Scale: res.Scale, Sources: append([]string(nil), res.Sources...)}
	for _, s := range res.Sections {
		c := s
		c.Figures = nil
		for _, f := range s.Figures {
			f.SVG, f.PNG = nil, nil
			c.Figures = append(c.Figures, f)
		}
		out.Sections = append(out.Sections, c)
	}
	return out
}

// ReadResults reads an analysis's results.json and puts back each figure's
// bytes from figDir (the analysis's figures output).
func ReadResults(resultsPath, figDir string) (*reports.Results, error) {
	b, err := os.ReadFile(resultsPath)
	if err != nil {
		return nil, err
	}
	var res reports.Results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", resultsPath, err)
	}
	for i := range res.Sections {
		for j := range res.Sections[i].Figures {
			f := &res.Sections[i].Figures[j]
			if f.Name == "" || strings.ContainsAny(f.Name, `/\`) || strings.HasPrefix(f.Name, ".") {
				return nil, fmt.Errorf("%s: figure name %q is not a file name", resultsPath, f.Name)
			}
			if f.SVG, err = os.ReadFile(filepath.Join(figDir, f.Name+".svg")); err != nil {
				return nil, fmt.Errorf("figure %s: %w", f.Name, err)
			}
			if f.PNG, err = os.ReadFile(filepath.Join(figDir, f.Name+".png")); err != nil {
				return nil, fmt.Errorf("figure %s: %w", f.Name, err)
			}
		}
	}
	return &res, nil
}

// tableCSV writes a table as CSV: the header, then the rows.
func tableCSV(t reports.Table) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(t.Header); err != nil {
		return nil, err
	}
	if err := w.WriteAll(t.Rows); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tableMarkdown writes a table as a GitHub-flavoured Markdown table with
// its caption above and its notes below.
func tableMarkdown(t reports.Table) []byte {
	var b bytes.Buffer
	cell := func(s string) string {
		s = strings.ReplaceAll(s, `\`, `\\`)
		s = strings.ReplaceAll(s, "|", `\|`)
		return strings.ReplaceAll(s, "\n", " ")
	}
	if t.Caption != "" {
		fmt.Fprintf(&b, "**%s**\n\n", cell(t.Caption))
	}
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + cell(c) + " |")
		}
		b.WriteString("\n")
	}
	row(t.Header)
	sep := make([]string, len(t.Header))
	for i := range sep {
		sep[i] = "---"
	}
	row(sep)
	for _, r := range t.Rows {
		row(r)
	}
	for _, n := range t.Notes {
		fmt.Fprintf(&b, "\n%s\n", cell(n))
	}
	return b.Bytes()
}
