package analysis

import (
	"fmt"
	"strconv"

	"dragonx/reports"
	"dragonx/stages/netbench"
)

// networkSection is the network bench's results (netbench stages): per
// network a table of its latency from each entry at each budget, with the
// ratio to the search's best and the trials saved, and its figure.
func (a *analyser) networkSection() error {
	if len(a.in.networks) == 0 {
		return nil
	}
	sec := reports.Section{Title: "Network bench",
		Text: "Each held-out network at one variant: the sum over its distinct subgraphs of count x latency, from the search at each budget of trials per subgraph and from each policy's best of its first k attempts per subgraph. Trials are the candidates over all subgraphs (an entry's: k a subgraph). A latency is given only when every subgraph has a correct kernel."}
	for _, g := range a.in.networks {
		for _, n := range g.res.Networks {
			tag := g.name + "_" + n.Network
			t := reports.Table{
				Caption: fmt.Sprintf("Network latency of %s (%s), %s; ratio to the search at %d trials per subgraph.", n.Network, n.Variant, sourceLabel(g.res.Source, false), g.res.SearchTrials[len(g.res.SearchTrials)-1]),
				Header:  []string{"entry", "budget", "latency (µs)", "subgraphs correct", "ratio to search's best", "trials", "trials saved", "search wall time (s)"},
				Notes:   []string{"latency source " + g.res.Source + " (scale " + a.scale() + ")"},
			}
			for _, p := range n.Points {
				budget := fmt.Sprintf("%d trials", p.Budget)
				if p.Entry != "search" {
					budget = fmt.Sprintf("best of %d", p.Budget)
				}
				t.Rows = append(t.Rows, []string{p.Entry, budget, optNum(p.LatencyUS, 1), fmt.Sprintf("%d/%d", p.Covered, p.Subgraphs),
					optRatio(p.RatioToSearch), strconv.Itoa(p.Trials), optRatio(p.TrialsSaved), optNum(p.WallS, 1)})
			}
			sec.Tables = append(sec.Tables, a.addTable("network_"+tag, t))
			f, err := netbench.FigureOf(n, g.res.Source, a.sp.Style)
			if err != nil {
				return fmt.Errorf("netbench %s, %s: %w", g.name, n.Network, err)
			}
			if f != nil {
				sec.Figures = append(sec.Figures, a.addFigure("network_latency_"+tag, f))
			}
		}
	}
	a.res.results.Sections = append(a.res.results.Sections, sec)
	return nil
}

// optRatio is a ratio as "1.23x", "—" without one.
func optRatio(x *float64) string {
	if x == nil {
		return "—"
	}
	return strconv.FormatFloat(*x, 'f', 2, 64) + "x"
}
