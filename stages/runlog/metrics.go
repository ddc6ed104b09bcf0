package runlog

import (
	"math"
	"strconv"
	"strings"

	"dragonx/reports"
)

// Metric is one cell of an analysis's results table, read generically:
// the table's caption, the row's label (its leading text cells, joined by
// " / ") and the column's header name it. Value is the number the cell
// shows (a percentage as its percent: "80.00% (24)" is 80), nil for a
// text cell (a latency source).
type Metric struct {
	Stage  string   `json:"stage"` // the analysis stage's address
	Table  string   `json:"table"`
	Row    string   `json:"row"`
	Column string   `json:"column"`
	Value  *float64 `json:"value,omitempty"`
	Text   string   `json:"text"`
}

// Name is the metric's identity: stage, table, row and column.
func (m Metric) Name() string {
	return m.Stage + " | " + m.Table + " | " + m.Row + " | " + m.Column
}

// Label is the metric's row and column, for people.
func (m Metric) Label() string { return m.Row + " · " + m.Column }

// MetricsOf flattens the tables of an analysis's results into metrics. A
// row's label is its cells up to the first that holds a number; the other
// cells are metrics, numbers or text. Rows whose "source" column says
// "paper" are quotations of the paper, not results, and are left out. Cells that hold nothing ("", "–",
// "-") are left out. Tables are named by their caption, or by their
// section's title and position when they have none.
func MetricsOf(stage string, res *reports.Results) []Metric {
	var out []Metric
	for _, sec := range res.Sections {
		for ti, t := range sec.Tables {
			name := t.Caption
			if name == "" {
				name = sec.Title + " #" + strconv.Itoa(ti+1)
			}
			src := column(t.Header, "source")
			for _, row := range t.Rows {
				if src >= 0 && src < len(row) && strings.EqualFold(strings.TrimSpace(row[src]), "paper") {
					continue // a number quoted from the paper, not a result
				}
				lead := labelCells(row)
				label := strings.Join(row[:lead], " / ")
				for j := lead; j < len(row) && j < len(t.Header); j++ {
					text := strings.TrimSpace(row[j])
					if empty(text) {
						continue
					}
					m := Metric{Stage: stage, Table: name, Row: label, Column: t.Header[j], Text: text}
					if v, ok := Number(text); ok {
						m.Value = &v
					}
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// column returns the index of the header named name (any case), or -1.
func column(header []string, name string) int {
	for i, h := range header {
		if strings.EqualFold(strings.TrimSpace(h), name) {
			return i
		}
	}
	return -1
}

// labelCells is how many leading cells of row label it: those before the
// first number, at least one, and never all of them when the row has more
// than one cell.
func labelCells(row []string) int {
	n := 0
	for n < len(row) {
		if _, ok := Number(row[n]); ok {
			break
		}
		n++
	}
	if n == 0 && len(row) > 0 {
		n = 1
	}
	if n == len(row) && n > 1 {
		n--
	}
	return n
}

func empty(s string) bool { return s == "" || s == "–" || s == "-" || s == "—" }

// Number reads the number a table cell shows: "0.800", "17.331",
// "80.00% (24)" (80), "1,024", "2.5×". It reports false for text, and
// for NaN and infinities.
func Number(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(s, "×")
	s = strings.TrimSuffix(s, "%")
	s = strings.ReplaceAll(s, ",", "")
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false // NaN and ±Inf have no JSON number
	}
	return v, true
}

// headlineColumns are the columns `dragonx runs` shows of the first
// table, when it has them: the paper's two headline numbers.
var headlineColumns = []string{"pass@1", "geomean speedup"}

// Headline picks the few metrics `dragonx runs` prints on a run's line:
// of the first table, the headline columns of the rows whose label
// names a policy (a "policy" cell), else of its first two rows; without
// those columns, the first three numbers.
func Headline(ms []Metric, max int) []Metric {
	if len(ms) == 0 {
		return nil
	}
	first := ms[0].Table
	var table []Metric
	for _, m := range ms {
		if m.Table == first && m.Stage == ms[0].Stage && m.Value != nil {
			table = append(table, m)
		}
	}
	isHead := func(m Metric) bool {
		for _, c := range headlineColumns {
			if m.Column == c {
				return true
			}
		}
		return false
	}
	policy := func(m Metric) bool { return strings.Contains(" / "+m.Row+" / ", " / policy / ") }
	var out []Metric
	anyPolicy := false
	for _, m := range table {
		anyPolicy = anyPolicy || (isHead(m) && policy(m))
	}
	rows := map[string]bool{}
	for _, m := range table {
		if !isHead(m) || (anyPolicy && !policy(m)) {
			continue
		}
		if !anyPolicy && !rows[m.Row] && len(rows) == 2 {
			continue
		}
		rows[m.Row] = true
		out = append(out, m)
	}
	if len(out) == 0 {
		out = table
	}
	if len(out) > max {
		out = out[:max]
	}
	return out
}
