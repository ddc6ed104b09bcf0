package netbench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"dragonx/plots"
)

// unsafeName matches what a figure's file name does not keep of a
// network's name.
var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// FigureOf draws a network's latency against its trials in style st: the
// search's points that have a latency, and each entry's (nil when the
// search has none: there is no curve to draw). The analysis draws it too.
func FigureOf(n NetworkResult, source string, st plots.Style) (*plots.Figure, error) {
	search := plots.Series{Name: "search"}
	var entries []plots.Series
	at := map[string]int{}
	for _, p := range n.Points {
		if p.LatencyUS == nil || p.Trials == 0 {
			continue
		}
		if p.Entry == "search" {
			search.X, search.Y = append(search.X, float64(p.Trials)), append(search.Y, *p.LatencyUS)
			continue
		}
		i, ok := at[p.Entry]
		if !ok {
			i = len(entries)
			at[p.Entry] = i
			entries = append(entries, plots.Series{Name: p.Entry})
		}
		entries[i].X, entries[i].Y = append(entries[i].X, float64(p.Trials)), append(entries[i].Y, *p.LatencyUS)
	}
	if len(search.X) == 0 {
		return nil, nil
	}
	return plots.NetworkLatency(fmt.Sprintf("%s (%s)", n.Network, n.Variant), search, entries, source, st)
}

// writeFigures writes each network's figure into dir as
// network_latency_NETWORK.svg and .png.
func writeFigures(dir string, res *Results) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range res.Networks {
		f, err := FigureOf(n, res.Source, plots.DefaultStyle())
		if err != nil {
			return fmt.Errorf("the figure of %s: %w", n.Network, err)
		}
		if f == nil {
			continue
		}
		stem := f.Name + "_" + unsafeName.ReplaceAllString(n.Network, "_")
		for ext, b := range map[string][]byte{".svg": f.SVG, ".png": f.PNG} {
			if err := os.WriteFile(filepath.Join(dir, stem+ext), b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
