package reports

import (
	"strings"
)

// A notebook leads with its results: a summary at the top holds the main
// table (the first table of the results), the paper's numbers beside ours
// (the first other table whose caption speaks of the paper beside or side
// by side with ours), the headline figures (the speedup CDFs, else the
// first figure) and a provenance line; the stage cells follow, and the
// rest of the results after them. The choice reads captions and names
// only, so an analysis that adds tables or columns keeps its summary.

// maxSummaryFigures bounds the figures of the summary: two keep the main
// table and the figures within about two screens.
const maxSummaryFigures = 2

// summary is the part of the results shown first.
type summary struct {
	Main, Paper *Table
	Figures     []FigureRef
	// Rest is the results without what the summary shows.
	Rest *Results
}

// summarize splits r into its summary and the rest; nil for no results.
func summarize(r *Results) *summary {
	if r == nil {
		return nil
	}
	s := &summary{}
	type pos struct{ sec, idx int }
	taken := map[pos]bool{}
	takenFig := map[string]bool{}
	for i, sec := range r.Sections {
		for j := range sec.Tables {
			t := &r.Sections[i].Tables[j]
			switch {
			case s.Main == nil:
				s.Main = t
				taken[pos{i, j}] = true
			case s.Paper == nil && isPaperTable(t.Caption):
				s.Paper = t
				taken[pos{i, j}] = true
			}
		}
	}
	for _, sec := range r.Sections {
		for _, f := range sec.Figures {
			if strings.Contains(f.Name, "speedup_cdf") && len(s.Figures) < maxSummaryFigures {
				s.Figures = append(s.Figures, f)
				takenFig[f.Name] = true
			}
		}
	}
	if len(s.Figures) == 0 {
		for _, sec := range r.Sections {
			if len(sec.Figures) > 0 {
				s.Figures = append(s.Figures, sec.Figures[0])
				takenFig[sec.Figures[0].Name] = true
				break
			}
		}
	}
	rest := &Results{Scale: r.Scale, Sources: r.Sources}
	for i, sec := range r.Sections {
		c := Section{Title: sec.Title, Text: sec.Text}
		for j, t := range sec.Tables {
			if !taken[pos{i, j}] {
				c.Tables = append(c.Tables, t)
			}
		}
		for _, f := range sec.Figures {
			if !takenFig[f.Name] {
				c.Figures = append(c.Figures, f)
			}
		}
		if c.Text != "" || len(c.Tables)+len(c.Figures) > 0 {
			rest.Sections = append(rest.Sections, c)
		}
	}
	s.Rest = rest
	return s
}

// isPaperTable reports whether a caption is that of a table setting the
// paper's numbers beside ours.
func isPaperTable(caption string) bool {
	c := strings.ToLower(caption)
	return strings.Contains(c, "paper") && (strings.Contains(c, "beside") || strings.Contains(c, "side by side") || strings.Contains(c, " vs"))
}

// provenance is the summary's first line: where the latencies come from,
// the scale, and how the policies decoded.
func provenance(nb *Notebook) string {
	var src []string
	if nb.Results != nil {
		for _, s := range nb.Results.Sources {
			if strings.HasPrefix(s, "measured:") {
				src = append(src, s+" (measured)")
			} else {
				src = append(src, s+" (simulated)")
			}
		}
	}
	lat := "none reported"
	if len(src) > 0 {
		lat = strings.Join(src, ", ")
	}
	dec := nb.Decoding
	if dec == "" {
		dec = "not recorded"
	}
	return "Latency source: " + lat + " · scale: " + scaleText(nb.Scale) + " · decoding: " + dec
}
