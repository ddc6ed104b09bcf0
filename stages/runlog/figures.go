package runlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"dragonx/cache"
	"dragonx/plots"
	"dragonx/stages/analysis"
	"dragonx/stages/bench"
)

// maxFigureInput bounds each output that Figures reads (a loss curve, RL
// curves, a bench's attempts).
const maxFigureInput = 256 << 20

// taskKinds are the bench's task kinds, one speedup CDF each.
var taskKinds = []string{"construction", "refinement"}

// Figures draws the figures that overlay several runs, read from their
// stages' outputs in the store: the loss curves of each run's sft stage
// (kind sft, else a stage with an output named "loss": step, loss,
// eval_loss columns), the RL curves of its rl stages (curves.csv:
// reward_mean, correct_rate), and, per task kind, the speedup CDFs of the
// policies of its bench stages (the correct attempts' speedups). labels
// name the runs in the legends. A figure that no run has data for is left
// out; notes say which runs lack what the others have.
func Figures(ctx context.Context, store cache.Store, runs []*Entry, labels []string, st plots.Style) ([]*plots.Figure, []string, error) {
	fr := figureReader{ctx: ctx, store: store}
	var figs []*plots.Figure
	var notes []string
	add := func(f *plots.Figure, name string, err error) error {
		if err != nil {
			return fmt.Errorf("runlog: figure %s: %w", name, err)
		}
		f.Name = name
		figs = append(figs, f)
		return nil
	}

	// Loss curves.
	var train, val []plots.Series
	var lacking []string
	for i, r := range runs {
		s := lossStage(r)
		if s == nil {
			lacking = append(lacking, labels[i])
			continue
		}
		c, err := fr.curve(s.Outputs["loss"], s.Stage+" loss")
		if err != nil {
			return nil, nil, err
		}
		t, v := series(c, labels[i], "loss"), series(c, labels[i], "eval_loss")
		if len(t.X) > 0 {
			train = append(train, t)
		}
		if len(v.X) > 0 {
			val = append(val, v)
		}
	}
	if len(train)+len(val) > 0 {
		f, err := plots.LossCurves(train, val, st)
		if err := add(f, "compare_loss", err); err != nil {
			return nil, nil, err
		}
		notes = append(notes, lacks(lacking, "sft stage with a loss curve")...)
	}

	// RL curves.
	var reward, correct []plots.Series
	lacking = nil
	for i, r := range runs {
		rls := stagesOf(r, "rl", "curves")
		if len(rls) == 0 {
			lacking = append(lacking, labels[i])
		}
		for _, s := range rls {
			name := labels[i]
			if len(rls) > 1 {
				name += " " + shortAddr(s.Stage)
			}
			c, err := fr.curve(s.Outputs["curves"], s.Stage+" curves")
			if err != nil {
				return nil, nil, err
			}
			rw, cr := series(c, name, "reward_mean"), series(c, name, "correct_rate")
			if len(rw.X) == 0 || len(cr.X) == 0 {
				return nil, nil, fmt.Errorf("runlog: %s curves: no reward_mean or correct_rate column", s.Stage)
			}
			reward, correct = append(reward, rw), append(correct, cr)
		}
	}
	if len(reward) > 0 {
		f, err := plots.RLRuns(reward, correct, st)
		if err := add(f, "compare_rl", err); err != nil {
			return nil, nil, err
		}
		notes = append(notes, lacks(lacking, "rl stage")...)
	}

	// Speedup CDFs, per task kind.
	speedups := map[string][]plots.Series{}
	sources := map[string]bool{}
	lacking = nil
	for i, r := range runs {
		bs := stagesOf(r, "bench", "attempts")
		if len(bs) == 0 {
			lacking = append(lacking, labels[i])
		}
		for _, s := range bs {
			atts, err := fr.attempts(s.Outputs["attempts"], s.Stage+" attempts")
			if err != nil {
				return nil, nil, err
			}
			prefix := labels[i]
			if len(bs) > 1 {
				prefix += " " + shortAddr(s.Stage)
			}
			for _, task := range taskKinds {
				by := map[string][]float64{}
				for _, a := range atts {
					if a.Task == task && a.OK && a.Speedup != nil && !strings.HasPrefix(a.Policy, "baseline:") {
						by[a.Policy] = append(by[a.Policy], *a.Speedup)
						sources[a.Source] = true
					}
				}
				for _, p := range sortedNames(by) {
					speedups[task] = append(speedups[task], plots.Series{Name: prefix + " " + p, X: by[p]})
				}
			}
		}
	}
	src := strings.Join(sortedNames(sources), ", ")
	for _, task := range taskKinds {
		if len(speedups[task]) == 0 {
			continue
		}
		f, err := plots.SpeedupCDF(speedups[task], src, st)
		if err := add(f, "compare_speedup_cdf_"+task, err); err != nil {
			return nil, nil, err
		}
		f.Caption = task + " tasks: " + f.Caption
	}
	switch {
	case len(speedups) > 0:
		notes = append(notes, lacks(lacking, "bench stage")...)
	case len(lacking) < len(runs):
		notes = append(notes, "No speedup CDF: no policy of any run has a correct attempt.")
	}
	return figs, notes, nil
}

func lacks(runs []string, what string) []string {
	if len(runs) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s: no %s", strings.Join(runs, ", "), what)}
}

// lossStage is the run's sft stage: of kind sft, else a stage with a loss
// output; nil if it has none (or it did not finish).
func lossStage(r *Entry) *Stage {
	if s := stagesOf(r, "sft", "loss"); len(s) > 0 {
		return s[0]
	}
	for i := range r.Stages {
		if _, ok := r.Stages[i].Outputs["loss"]; ok {
			return &r.Stages[i]
		}
	}
	return nil
}

// stagesOf returns the run's stages of a kind that have the output.
func stagesOf(r *Entry, kind, output string) []*Stage {
	var out []*Stage
	for i := range r.Stages {
		s := &r.Stages[i]
		if _, ok := s.Outputs[output]; ok && s.Kind == kind {
			out = append(out, s)
		}
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// figureReader reads stage outputs from the store.
type figureReader struct {
	ctx   context.Context
	store cache.Store
}

func (fr figureReader) read(d cache.Digest, what string) ([]byte, error) {
	r, _, err := fr.store.OpenBlob(fr.ctx, d)
	if err != nil {
		return nil, fmt.Errorf("runlog: %s: %w", what, err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxFigureInput+1))
	if err != nil {
		return nil, fmt.Errorf("runlog: %s: %w", what, err)
	}
	if len(b) > maxFigureInput {
		return nil, fmt.Errorf("runlog: %s is over %d bytes", what, maxFigureInput)
	}
	return b, nil
}

// series returns the column's finite values against the step, named name.
func series(c *analysis.Curve, name, col string) plots.Series {
	s := plots.Series{Name: name}
	for i, v := range c.Cols[col] {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			s.X, s.Y = append(s.X, c.Steps[i]), append(s.Y, v)
		}
	}
	return s
}

func (fr figureReader) curve(d cache.Digest, what string) (*analysis.Curve, error) {
	b, err := fr.read(d, what)
	if err != nil {
		return nil, err
	}
	return analysis.ParseCurve(bytes.NewReader(b), "runlog: "+what)
}

func (fr figureReader) attempts(d cache.Digest, what string) ([]bench.Attempt, error) {
	b, err := fr.read(d, what)
	if err != nil {
		return nil, err
	}
	var out []bench.Attempt
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var a bench.Attempt
		if err := json.Unmarshal(line, &a); err != nil {
			return nil, fmt.Errorf("runlog: %s: line %d: %w", what, n, err)
		}
		if a.OK && (a.Speedup == nil || !(*a.Speedup > 0) || math.IsInf(*a.Speedup, 0)) {
			return nil, fmt.Errorf("runlog: %s: line %d: a correct attempt without a positive finite speedup", what, n)
		}
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("runlog: %s: %w", what, err)
	}
	return out, nil
}
