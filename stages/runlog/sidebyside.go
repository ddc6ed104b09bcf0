package runlog

import (
	"fmt"
	"strconv"

	"dragonx/reports"
)

// headlineCount is how many headline metrics SideBySide always shows.
const headlineCount = 8

// SideBySide sets the metrics of several runs side by side, one table per
// results table (in order of first appearance): a row per metric that
// differs between the runs, or is a headline metric of the first run
// (Headline), with each run's value and, for numbers, the last run's
// value minus the first's. A note under each table counts the metrics
// left out because every run has the same value.
func SideBySide(runs []*Entry, labels []string) []reports.Table {
	type group struct {
		stage, table string
		names        []string
		metric       map[string]Metric
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, r := range runs {
		for _, m := range r.Metrics {
			k := m.Stage + "\x00" + m.Table
			g := byKey[k]
			if g == nil {
				g = &group{stage: m.Stage, table: m.Table, metric: map[string]Metric{}}
				byKey[k] = g
				groups = append(groups, g)
			}
			if _, ok := g.metric[m.Name()]; !ok {
				g.metric[m.Name()] = m
				g.names = append(g.names, m.Name())
			}
		}
	}
	values := make([]map[string]Metric, len(runs))
	for i, r := range runs {
		values[i] = map[string]Metric{}
		for _, m := range r.Metrics {
			values[i][m.Name()] = m
		}
	}
	head := map[string]bool{}
	if len(runs) > 0 {
		for _, m := range Headline(runs[0].Metrics, headlineCount) {
			head[m.Name()] = true
		}
	}
	var out []reports.Table
	for _, g := range groups {
		t := reports.Table{Caption: g.table, Header: append(append([]string{"row", "column"}, labels...), "last − first")}
		same := 0
		for _, name := range g.names {
			m := g.metric[name]
			row := []string{m.Row, m.Column}
			changed := false
			for i := range runs {
				v, ok := values[i][name]
				text := "–"
				if ok {
					text = v.Text
				}
				if i > 0 && text != row[2] {
					changed = true
				}
				row = append(row, text)
			}
			if !changed && !head[name] {
				same++
				continue
			}
			row = append(row, lastMinusFirst(values[0][name], values[len(runs)-1][name]))
			t.Rows = append(t.Rows, row)
		}
		if len(t.Rows) == 0 {
			continue
		}
		if g.stage != "" {
			t.Notes = append(t.Notes, "from "+g.stage)
		}
		if same > 0 {
			verb := "are"
			if same == 1 {
				verb = "is"
			}
			t.Notes = append(t.Notes, fmt.Sprintf("%d other metric%s of this table %s the same in every run.", same, plural(same), verb))
		}
		out = append(out, t)
	}
	return out
}

func lastMinusFirst(a, b Metric) string {
	if a.Value == nil || b.Value == nil {
		return "–"
	}
	d := *b.Value - *a.Value
	s := strconv.FormatFloat(d, 'g', 4, 64)
	if d > 0 {
		s = "+" + s
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
