package analysis

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"dragonx/kernels/dataset"
	"dragonx/stages/bench"
	"dragonx/stages/netbench"
)

// The bench's files are read into its own types (package stages/bench).
type (
	benchSummary = bench.Summary
	benchGroup   = bench.Group
	benchPolicy  = bench.PolicySummary
	comparison   = bench.Comparison
)

// group returns the policy's group of a task kind, nil when the policy
// or the group's tasks are missing.
func group(p *benchPolicy, task string) *benchGroup {
	if p == nil {
		return nil
	}
	g := &p.Refinement
	if task == "construction" {
		g = &p.Construction
	}
	if g.Tasks == 0 && g.Attempts == 0 {
		return nil
	}
	return g
}

// TaskRow is one line of a bench's per_task.csv; MedianUS is +Inf when the
// policy has no correct attempt on the task.
type TaskRow struct {
	// Decoding is the row's decoding mode ("" for a baseline that
	// decodes nothing, or a bench from before the modes).
	Policy, Decoding, Task, Hash, Family string
	Index                                int
	Attempts, Correct                    int
	MedianUS                             float64
}

// benchData is one bench's files.
type benchData struct {
	name     string
	summary  *benchSummary
	attempts []bench.Attempt
	perTask  []TaskRow
}

// Curve is a CSV of numbered steps (sft's loss.csv, rl's curves.csv): each
// column by name, NaN where a cell is empty.
type Curve struct {
	Steps []float64
	Cols  map[string][]float64
}

// sftData is sft's loss curve and metrics.json (kept as raw JSON where
// only a few numbers are read).
type sftData struct {
	loss    *Curve
	metrics map[string]any
}

// rlData is one rl stage's curves and metrics.
type rlData struct {
	name    string
	curves  *Curve
	metrics map[string]any
}

// harvestData is harvest's statistics and the distributions behind the
// dataset figure.
type harvestData struct {
	stats          dataset.Stats
	traceLens      []float64
	refineSpeedups []float64
}

// inputs is everything an analysis reads.
type inputs struct {
	benches []*benchData
	sft     *sftData
	rl      []*rlData
	harvest *harvestData
	// networks are the netbench results, by group name.
	networks []netData
}

// netData is one netbench stage's results.
type netData struct {
	name string
	res  *netbench.Results
}

// load reads the placed inputs under dir.
func load(ctx context.Context, dir string, sp Spec) (*inputs, error) {
	in := &inputs{}
	p := func(parts ...string) string { return filepath.Join(append([]string{dir}, parts...)...) }
	for _, name := range sp.Benches {
		b := &benchData{name: name}
		if err := readJSON(p("bench", name, "summary.json"), &b.summary); err != nil {
			return nil, err
		}
		if b.summary == nil {
			return nil, fmt.Errorf("bench %s: summary.json is null", name)
		}
		var err error
		if b.attempts, err = readAttempts(p("bench", name, "attempts.jsonl")); err != nil {
			return nil, err
		}
		if b.perTask, err = readPerTask(p("bench", name, "per_task.csv")); err != nil {
			return nil, err
		}
		in.benches = append(in.benches, b)
	}
	if sp.SFT {
		d := &sftData{}
		var err error
		if d.loss, err = readCurve(p("sft", "loss.csv")); err != nil {
			return nil, err
		}
		if err := readJSON(p("sft", "metrics.json"), &d.metrics); err != nil {
			return nil, err
		}
		in.sft = d
	}
	for _, name := range sp.RL {
		d := &rlData{name: name}
		var err error
		if d.curves, err = readCurve(p("rl", name, "curves.csv")); err != nil {
			return nil, err
		}
		if err := readJSON(p("rl", name, "metrics.json"), &d.metrics); err != nil {
			return nil, err
		}
		in.rl = append(in.rl, d)
	}
	for _, name := range sp.Networks {
		d := netData{name: name}
		if err := readJSON(p("netbench", name, "networks.json"), &d.res); err != nil {
			return nil, err
		}
		if d.res == nil || d.res.Source == "" {
			return nil, fmt.Errorf("netbench %s: networks.json is null or names no latency source", name)
		}
		in.networks = append(in.networks, d)
	}
	if sp.Harvest {
		h, err := readHarvest(ctx, p("harvest"))
		if err != nil {
			return nil, err
		}
		in.harvest = h
	}
	return in, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readAttempts reads attempts.jsonl, checking what the analysis relies on:
// a speedup exactly on correct attempts, and every latency labelled.
func readAttempts(path string) ([]bench.Attempt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []bench.Attempt
	br := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, fmt.Errorf("%s: %w", path, rerr)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var a bench.Attempt
			if err := json.Unmarshal(t, &a); err != nil {
				return nil, fmt.Errorf("%s: line %d: %w", path, n, err)
			}
			switch {
			case a.Task != "construction" && a.Task != "refinement":
				return nil, fmt.Errorf("%s: line %d: task %q: want construction or refinement", path, n, a.Task)
			case a.Policy == "":
				return nil, fmt.Errorf("%s: line %d: no policy", path, n)
			case a.OK && (a.Speedup == nil || !(*a.Speedup > 0) || math.IsInf(*a.Speedup, 0)):
				return nil, fmt.Errorf("%s: line %d: a correct attempt without a positive finite speedup", path, n)
			case a.LatencyUS != nil && a.Source == "":
				return nil, fmt.Errorf("%s: line %d: a latency without its source", path, n)
			}
			out = append(out, a)
		}
		if rerr != nil {
			return out, nil
		}
	}
}

// readPerTask reads per_task.csv by its header's column names.
func readPerTask(path string) ([]TaskRow, error) {
	rows, col, err := readCSV(path, "policy", "task", "index", "hash", "family", "attempts", "correct", "median_us")
	if err != nil {
		return nil, err
	}
	var out []TaskRow
	for i, r := range rows {
		tr := TaskRow{Policy: r[col["policy"]], Task: r[col["task"]], Hash: r[col["hash"]], Family: r[col["family"]], MedianUS: math.Inf(1)}
		var e1, e2, e3 error
		tr.Index, e1 = strconv.Atoi(r[col["index"]])
		tr.Attempts, e2 = strconv.Atoi(r[col["attempts"]])
		tr.Correct, e3 = strconv.Atoi(r[col["correct"]])
		if err := errors.Join(e1, e2, e3); err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", path, i+2, err)
		}
		if j, ok := col["decoding"]; ok {
			tr.Decoding = r[j]
		}
		if m := r[col["median_us"]]; m != "" {
			v, err := strconv.ParseFloat(m, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: row %d: median_us %q: want a positive number or empty", path, i+2, m)
			}
			tr.MedianUS = v
		}
		out = append(out, tr)
	}
	return out, nil
}

// readCSV reads a CSV with a header, returning the data rows and the
// index of each wanted column (an error names a missing one).
func readCSV(path string, want ...string) ([][]string, map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	rows, err := r.ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("%s: empty (no header)", path)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimSpace(h)] = i
	}
	for _, w := range want {
		if _, ok := col[w]; !ok {
			return nil, nil, fmt.Errorf("%s: no column %q in the header %v", path, w, rows[0])
		}
	}
	return rows[1:], col, nil
}

// readCurve reads the curve file at path (ParseCurve).
func readCurve(path string) (*Curve, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseCurve(f, path)
}

// ParseCurve reads a CSV whose first row names the columns, one of them
// "step": every column as numbers, NaN where a cell is empty. name is what
// its errors call it.
func ParseCurve(r io.Reader, name string) (*Curve, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: empty (no header)", name)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimSpace(h)] = i
	}
	if _, ok := col["step"]; !ok {
		return nil, fmt.Errorf("%s: no column %q in the header %v", name, "step", rows[0])
	}
	c := &Curve{Cols: map[string][]float64{}}
	for h := range col {
		if h != "step" {
			c.Cols[h] = make([]float64, 0, len(rows)-1)
		}
	}
	for i, r := range rows[1:] {
		for h, j := range col {
			v := math.NaN()
			if j < len(r) && r[j] != "" {
				x, err := strconv.ParseFloat(r[j], 64)
				if err != nil {
					return nil, fmt.Errorf("%s: row %d, %s: %w", name, i+2, h, err)
				}
				v = x
			}
			if h == "step" {
				if math.IsNaN(v) {
					return nil, fmt.Errorf("%s: row %d: no step", name, i+2)
				}
				c.Steps = append(c.Steps, v)
			} else {
				c.Cols[h] = append(c.Cols[h], v)
			}
		}
	}
	return c, nil
}

// readHarvest reads stats.json and the two training sets' distributions:
// the construction examples' trace lengths (as harvest's stats count them)
// and the refinement pairs' speedups.
func readHarvest(ctx context.Context, dir string) (*harvestData, error) {
	h := &harvestData{}
	if err := readJSON(filepath.Join(dir, "stats.json"), &h.stats); err != nil {
		return nil, err
	}
	scan := func(name string, fn func(r io.Reader) error) error {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := fn(f); err != nil {
			return fmt.Errorf("harvest %s: %w", name, err)
		}
		return nil
	}
	err := scan("construction.jsonl", func(r io.Reader) error {
		return dataset.Scan(r, func(e dataset.Entry[dataset.Construction]) error {
			if n, ok := dataset.TraceLength(e.Value); ok {
				h.traceLens = append(h.traceLens, float64(n))
			}
			return ctx.Err()
		})
	})
	if err != nil {
		return nil, err
	}
	err = scan("refinement.jsonl", func(r io.Reader) error {
		return dataset.Scan(r, func(e dataset.Entry[dataset.Refinement]) error {
			h.refineSpeedups = append(h.refineSpeedups, e.Value.Speedup)
			return ctx.Err()
		})
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}
