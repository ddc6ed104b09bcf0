package analysis

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"dragonx/plots"
	"dragonx/reports"
)

// Policy names the paper's comparison reads from every bench: the policy
// after supervised fine-tuning and the one after reinforcement learning.
const (
	SFTPolicy = "sft"
	RLPolicy  = "rl"
)

var taskKinds = []string{"construction", "refinement"}

// table is one table of the results and its file name (tables/NAME.csv,
// tables/NAME.md).
type table struct {
	name string
	t    reports.Table
}

// result is everything an analysis writes.
type result struct {
	tables  []table
	figures []*plots.Figure
	results *reports.Results
}

// analyse computes the tables and figures from the inputs.
func analyse(in *inputs, sp Spec) (*result, error) {
	a := &analyser{in: in, sp: sp, res: &result{results: &reports.Results{Scale: sp.Scale}}}
	sources := map[string]bool{}
	for _, b := range in.benches {
		if b.summary.Source != "" {
			sources[b.summary.Source] = true
		}
		for _, at := range b.attempts {
			if at.Source != "" {
				sources[at.Source] = true
			}
		}
	}
	for _, n := range in.networks {
		sources[n.res.Source] = true
	}
	a.res.results.Sources = sortedSet(sources)
	steps := []func() error{a.mainSection, a.figureSection, a.networkSection, a.trainingSection, a.datasetSection, a.quotedSection}
	for _, f := range steps {
		if err := f(); err != nil {
			return nil, err
		}
	}
	return a.res, nil
}

type analyser struct {
	in  *inputs
	sp  Spec
	res *result
}

func (a *analyser) scale() string {
	if a.sp.Scale == "" {
		return "(not given)"
	}
	return a.sp.Scale
}

// addTable records a table under name and returns it for a section.
func (a *analyser) addTable(name string, t reports.Table) reports.Table {
	a.res.tables = append(a.res.tables, table{name: name, t: t})
	return t
}

// addFigure records a figure under name (its file name) and returns its
// reference for a section.
func (a *analyser) addFigure(name string, f *plots.Figure) reports.FigureRef {
	f.Name = name
	a.res.figures = append(a.res.figures, f)
	return reports.FigureRef{Name: name, Caption: caption(f), SVG: f.SVG, PNG: f.PNG}
}

func caption(f *plots.Figure) string {
	switch {
	case f.Caption != "" && f.Title != "":
		return f.Title + ". " + f.Caption
	case f.Caption != "":
		return f.Caption
	}
	return f.Title
}

// sourceLabel labels a latency source for people: simulated unless it is a
// measurement.
func sourceLabel(source string, measured bool) string {
	if source == "" {
		return "unknown source"
	}
	if measured && strings.HasPrefix(source, "measured:") {
		return source
	}
	return source + " (simulated)"
}

func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) + "%" }

func optPct(x *float64) string {
	if x == nil {
		return "–"
	}
	return pct(*x)
}

func num(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }

func optNum(x *float64, prec int) string {
	if x == nil {
		return "–"
	}
	return num(*x, prec)
}

// sortedKeys returns the union of the maps' keys in numeric order (pass@k's
// k, fast_p's p).
func sortedKeys(ms ...map[string]float64) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		x, ex := strconv.ParseFloat(keys[i], 64)
		y, ey := strconv.ParseFloat(keys[j], 64)
		if ex != nil || ey != nil || x == y {
			return keys[i] < keys[j]
		}
		return x < y
	})
	return keys
}

// mainSection: per-attempt correctness, pass@k, fast_p and speedups of every
// policy and baseline; RL faster than SFT; the shapes side by side; the
// paper's numbers beside ours.
func (a *analyser) mainSection() error {
	sec := reports.Section{Title: "Main results"}
	var text []string
	text = append(text, fmt.Sprintf("Our numbers are from a run at scale %q; the paper's are quoted from its abstract (Source \"paper\") and were obtained at the paper's scale with an 8-billion-parameter model.", a.scale()))
	if len(a.in.benches) == 0 {
		text = append(text, "The experiment has no bench stage: there are no per-attempt results to show.")
	}
	var passK, fastP []map[string]float64
	for _, b := range a.in.benches {
		for _, p := range b.summary.Policies {
			for _, task := range taskKinds {
				if g := group(&p, task); g != nil {
					passK = append(passK, g.PassAtK)
					fastP = append(fastP, g.FastP)
				}
			}
		}
	}
	ks, ps := sortedKeys(passK...), sortedKeys(fastP...)
	if len(a.in.benches) > 0 {
		header := []string{"bench", "policy", "kind", "decoding", "task", "tasks", "attempts", "per-attempt correct", "lift (points)", "greedy correct"}
		for _, k := range ks {
			header = append(header, "pass@"+k)
		}
		for _, p := range ps {
			header = append(header, "fast_"+p)
		}
		header = append(header, "geomean speedup", "latency source")
		t := reports.Table{Caption: "Per-attempt correctness, pass@k, fast_p and speedup over the baseline, per policy and task kind", Header: header}
		notes := map[string]bool{}
		for _, b := range a.in.benches {
			s := b.summary
			for _, p := range s.Policies {
				for _, task := range taskKinds {
					g := group(&p, task)
					if g == nil {
						continue
					}
					row := []string{b.name, p.Name, p.Kind, modeLabel(p.Decoding), task, strconv.Itoa(g.Tasks), strconv.Itoa(g.Attempts),
						pct(g.CorrectRate) + " (" + strconv.Itoa(g.Correct) + ")", b.liftCell(&p, task), optPct(g.GreedyCorrectRate)}
					for _, k := range ks {
						if v, ok := g.PassAtK[k]; ok {
							row = append(row, num(v, 3))
						} else {
							row = append(row, "–")
						}
					}
					for _, fp := range ps {
						if v, ok := g.FastP[fp]; ok {
							row = append(row, pct(v))
						} else {
							row = append(row, "–")
						}
					}
					row = append(row, optNum(g.GeomeanSpeedup, 3), sourceLabel(s.Source, s.Measured))
					t.Rows = append(t.Rows, row)
				}
			}
			n := fmt.Sprintf("bench %s: %d attempts per task at temperature %s", b.name, s.Attempts, num(s.Temperature, 2))
			if s.Greedy {
				n += " and one greedy attempt"
			}
			n += ", " + decodingsText(s.Decoding)
			n += "; correct means " + b.correctness()
			n += "; speedups are over the unscheduled kernel with a default thread binding (construction) or the prompt's own script (refinement)."
			notes[n] = true
		}
		t.Notes = append(sortedSet(notes),
			"decoding: the mask a policy sampled under (unconstrained: any token, bounded by max_new; grammar: the workload's script grammar; grammar+gpu_limits: the grammar that also keeps the GPU's thread limits), and the one random_walk walked under; – for a baseline that decodes nothing.",
			"lift: the policy's per-attempt correctness minus that of the uniform random walk under the same mask (random_walk, same mode, same attempts per task), in percentage points, with both counts; a policy decoded unconstrained is compared with random (design-space samples drawn without a mask: the walk without a grammar). A lift near 0 means the mask, not the policy, made the scripts correct; – where the bench has no such baseline.",
			"pass@k: the unbiased estimator 1 - C(n-c,k)/C(n,k) averaged over tasks (n attempts, c correct); fast_p: the share of attempts that are correct and more than p times faster than the baseline; the geometric mean is over correct attempts.",
			"Latencies labelled (simulated) come from the analytic GPU model, not from a GPU.")
		sec.Tables = append(sec.Tables, a.addTable("main", t))

		sec.Tables = append(sec.Tables, a.addTable("families", familySplitTable(a.in.benches)))
		sec.Tables = append(sec.Tables, a.addTable("peak_fraction", peakTable(a.in.benches)))
		if t, ok := outsideTable(a.in.benches); ok {
			sec.Tables = append(sec.Tables, a.addTable("outside", t))
		}

		ct := reports.Table{Caption: "Tasks on which one policy produces faster kernels than another", Header: []string{"bench", "a", "b", "decoding", "task", "tasks", "a faster", "b faster", "ties", "latency source"}}
		defs := map[string]bool{}
		for _, b := range a.in.benches {
			for _, c := range b.summary.Comparisons {
				ct.Rows = append(ct.Rows, []string{b.name, c.A, c.B, modeLabel(c.Decoding), c.Task, strconv.Itoa(c.Tasks), strconv.Itoa(c.AFaster), strconv.Itoa(c.BFaster), strconv.Itoa(c.Ties), sourceLabel(b.summary.Source, b.summary.Measured)})
			}
			if d := b.summary.FasterDefinition; d != "" {
				defs[d] = true
			}
		}
		ct.Notes = sortedSet(defs)
		sec.Tables = append(sec.Tables, a.addTable("faster", ct))
		if pt := pairedTable(a.in.benches); len(pt.Rows) > 0 {
			sec.Tables = append(sec.Tables, a.addTable("paired", pt))
		}
		sec.Tables = append(sec.Tables, a.addTable("side_by_side", a.sideBySide()))
	}
	sec.Tables = append(sec.Tables, a.addTable("paper", a.paperTable()))
	sec.Text = strings.Join(text, " ")
	a.res.results.Sections = append(a.res.results.Sections, sec)
	return nil
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// comparison returns the bench's comparison of x against y under decoding
// mode on task, or nil. The bench compares each policy with the ones
// declared before it, so the pair may be stored the other way round: it is
// then turned around.
func (b *benchData) comparison(x, y, mode, task string) *comparison {
	for i := range b.summary.Comparisons {
		c := b.summary.Comparisons[i]
		switch {
		case c.Task != task || c.Decoding != mode:
		case c.A == x && c.B == y:
			return &c
		case c.A == y && c.B == x:
			return &comparison{A: x, B: y, Decoding: mode, Task: task, Tasks: c.Tasks, AFaster: c.BFaster, BFaster: c.AFaster, Ties: c.Ties}
		}
	}
	return nil
}

// sideBySide is one row per bench and decoding mode: the RL policy's
// headline figures, so that benches of different reward shapes compare at
// a glance.
func (a *analyser) sideBySide() reports.Table {
	t := reports.Table{
		Caption: "The RL policy of each bench side by side",
		Header: []string{"bench", "correct (construction)", "correct (refinement)", "geomean speedup (construction)", "geomean speedup (refinement)",
			"RL faster than SFT (construction)", "RL faster than SFT (refinement)", "decoding", "lift (construction)", "lift (refinement)", "latency source"},
	}
	for _, b := range a.in.benches {
		for i := range b.summary.Policies {
			if p := &b.summary.Policies[i]; p.Name == RLPolicy && p.Kind == "policy" {
				t.Rows = append(t.Rows, b.sideBySideRow(p))
			}
		}
	}
	t.Notes = []string{fmt.Sprintf("The policy named %q of each bench that has one, under each decoding mode it was benched under; RL faster than SFT compares it with the policy named %q under the same mode; lift is over the uniform random walk under the same mask (random for unconstrained), in percentage points.", RLPolicy, SFTPolicy)}
	return t
}

// sideBySideRow is the side-by-side row of the bench's RL policy p.
func (b *benchData) sideBySideRow(p *benchPolicy) []string {
	{
		row := []string{b.name}
		for _, task := range taskKinds {
			if g := group(p, task); g != nil {
				row = append(row, pct(g.CorrectRate))
			} else {
				row = append(row, "–")
			}
		}
		for _, task := range taskKinds {
			if g := group(p, task); g != nil {
				row = append(row, optNum(g.GeomeanSpeedup, 3))
			} else {
				row = append(row, "–")
			}
		}
		for _, task := range taskKinds {
			if c := b.comparison(RLPolicy, SFTPolicy, p.Decoding, task); c != nil {
				row = append(row, fmt.Sprintf("%d of %d", c.AFaster, c.Tasks))
			} else {
				row = append(row, "–")
			}
		}
		row = append(row, modeLabel(p.Decoding))
		for _, task := range taskKinds {
			row = append(row, b.liftCell(p, task))
		}
		return append(row, sourceLabel(b.summary.Source, b.summary.Measured))
	}
}

// quoted returns the paper's figure with the given key (reports.Quoted.Key).
func quoted(key string) (reports.Quoted, bool) {
	for _, q := range reports.PaperFigures() {
		if q.Key == key {
			return q, true
		}
	}
	return reports.Quoted{}, false
}

// paperTable puts each of the paper's headline numbers beside ours, each
// with its source and scale.
func (a *analyser) paperTable() reports.Table {
	t := reports.Table{
		Caption: "The paper's numbers beside ours",
		Header:  []string{"metric", "value", "source", "scale"},
	}
	add := func(metric string, key string, ours [][2]string) {
		if q, ok := quoted(key); ok {
			t.Rows = append(t.Rows, []string{metric, q.Value, q.Source, "paper"})
		}
		for _, o := range ours {
			t.Rows = append(t.Rows, []string{metric, o[0], o[1], a.scale()})
		}
	}
	var h *harvestData = a.in.harvest
	count := func(f func(*harvestData) int) [][2]string {
		if h == nil {
			return nil
		}
		return [][2]string{{strconv.Itoa(f(h)), "ours: harvest (count)"}}
	}
	add("distinct workloads", "dataset.workloads", count(func(h *harvestData) int { return h.stats.Workloads }))
	add("construction examples", "dataset.construction", count(func(h *harvestData) int { return h.stats.Construction }))
	add("refinement examples", "dataset.refinement", count(func(h *harvestData) int { return h.stats.Refinement }))
	for _, task := range taskKinds {
		var ours [][2]string
		for _, b := range a.in.benches {
			p := b.paperMode(RLPolicy)
			if g := group(p, task); g != nil {
				gate := "numeric gate"
				if !b.gated() {
					gate = "static verdict only, no numerical gate"
				}
				ours = append(ours, [2]string{pct(g.CorrectRate), fmt.Sprintf("ours: bench %s, policy %s (%s; %s%s)", b.name, RLPolicy, gate, decodingText(p.Decoding), paperModeNote(p.Decoding))})
			}
		}
		add("per-attempt correctness, "+task, "correctness."+task, ours)
	}
	for _, task := range taskKinds {
		var ours [][2]string
		for _, b := range a.in.benches {
			p := b.paperMode(RLPolicy)
			if p == nil {
				continue
			}
			if c := b.comparison(RLPolicy, SFTPolicy, p.Decoding, task); c != nil {
				ours = append(ours, [2]string{fmt.Sprintf("%d of %d", c.AFaster, c.Tasks), fmt.Sprintf("ours: bench %s; %s; %s", b.name, decodingText(p.Decoding), sourceLabel(b.summary.Source, b.summary.Measured))})
			}
		}
		add("RL faster than SFT, "+task, "rl_faster."+task, ours)
	}
	judged := "Our correctness is judged by the numerical gate (the kernel run as C with a GPU's semantics, compared with a float64 reference)"
	for _, b := range a.in.benches {
		if !b.gated() {
			judged = "Our correctness is judged by the numerical gate (the kernel run as C with a GPU's semantics, compared with a float64 reference) where the source says so; \"static verdict only\" means the kernel passed the postprocessors and VerifyGPUCode and was never run"
			break
		}
	}
	t.Notes = []string{
		"Source \"paper\": quoted from the paper's abstract. " + judged + "; our latencies are labelled with their source, and (simulated) means the analytic GPU model, not a measurement.",
		"The paper's model decodes without a mask, so ours beside it is the RL policy's least constrained mode of each bench: unconstrained when the bench has it, else the grammar alone, else the grammar with the GPU's thread limits; each row says which.",
	}
	return t
}

// gated reports whether the bench judged its attempts with the numerical
// gate: its groups count the attempts that passed each of the judge's
// phases, numeric among them only when the gate ran.
func (b *benchData) gated() bool {
	for _, p := range b.summary.Policies {
		for _, g := range []benchGroup{p.Construction, p.Refinement} {
			if _, ok := g.Phases["numeric"]; ok {
				return true
			}
		}
	}
	return false
}

// correctness says what a correct attempt of the bench passed.
func (b *benchData) correctness() string {
	if b.gated() {
		return "the numerical gate passed (the kernel run as C with a GPU's semantics matched a float64 reference)"
	}
	return "the static verdict passed (postprocessors and VerifyGPUCode; the kernel was not run: no numerical gate)"
}

// figureSection: speedup CDFs, per-family correctness and the RL-vs-SFT
// latency scatter of every bench and task kind.
func (a *analyser) figureSection() error {
	if len(a.in.benches) == 0 {
		return nil
	}
	sec := reports.Section{Title: "Benchmark figures"}
	var notes []string
	st := a.sp.Style
	for _, b := range a.in.benches {
		src := b.summary.Source // the plots label it simulated or measured
		mode := b.figureMode()
		if len(b.summary.Decoding) > 1 {
			notes = append(notes, fmt.Sprintf("bench %s: the speedup CDFs and latency scatters show the policies and random_walk decoded under %s (the per-family figures and tables show every mode).", b.name, mode))
		}
		for _, task := range taskKinds {
			tag := b.name + "_" + task
			// Speedup CDF: the speedups of every correct attempt, per
			// policy (under the figures' mode) and baseline.
			var series []plots.Series
			for _, p := range b.summary.Policies {
				if p.Decoding != "" && p.Decoding != mode {
					continue
				}
				var xs []float64
				for _, at := range b.attempts {
					if at.Policy == p.Name && at.Decoding == p.Decoding && at.Task == task && at.OK {
						xs = append(xs, *at.Speedup)
					}
				}
				if len(xs) > 0 {
					series = append(series, plots.Series{Name: seriesName(p.Name, p.Decoding), X: xs})
				}
			}
			if len(series) > 0 {
				f, err := plots.SpeedupCDF(series, src, st)
				if err != nil {
					return fmt.Errorf("bench %s %s: %w", b.name, task, err)
				}
				sec.Figures = append(sec.Figures, a.addFigure("speedup_cdf_"+tag, f))
			} else {
				notes = append(notes, fmt.Sprintf("bench %s, %s: no policy has a correct attempt, so there is no speedup CDF.", b.name, task))
			}

			// Per-family correctness.
			bars := familyBars(b, task)
			if len(bars) > 0 {
				f, err := plots.FamilyCorrectness(bars, st)
				if err != nil {
					return fmt.Errorf("bench %s %s: %w", b.name, task, err)
				}
				sec.Figures = append(sec.Figures, a.addFigure("family_correctness_"+tag, f))
				sec.Tables = append(sec.Tables, a.addTable("family_"+tag, familyTable(b.name, task, familyCounts(b, task))))
			}

			// RL vs SFT latency per task.
			pairs, finite := latencyPairs(b, task, mode)
			switch {
			case len(pairs) == 0:
				notes = append(notes, fmt.Sprintf("bench %s, %s: the bench has no %q and %q policies to compare.", b.name, task, SFTPolicy, RLPolicy))
			case !finite:
				notes = append(notes, fmt.Sprintf("bench %s, %s: neither %s nor %s has a correct attempt on any task, so there is no latency scatter.", b.name, task, SFTPolicy, RLPolicy))
			default:
				f, err := plots.LatencyScatter(pairs, SFTPolicy, RLPolicy, src, st)
				if err != nil {
					return fmt.Errorf("bench %s %s: %w", b.name, task, err)
				}
				sec.Figures = append(sec.Figures, a.addFigure("latency_scatter_"+tag, f))
			}
		}
	}
	sec.Text = strings.Join(notes, " ")
	a.res.results.Sections = append(a.res.results.Sections, sec)
	return nil
}

// familyBars is the correct rate of each policy (under each mode) on each
// workload family, over every attempt (temperature and greedy); the
// decision-free families come last.
func familyBars(b *benchData, task string) []plots.Bar {
	var bars []plots.Bar
	for _, fc := range familyCounts(b, task) {
		group := fc.family
		if decisionFree(fc.family) {
			group += "*"
		}
		bars = append(bars, plots.Bar{Group: group, Series: seriesName(fc.policy, fc.mode), Value: float64(fc.correct) / float64(fc.attempts), N: fc.attempts})
	}
	return bars
}

func familyTable(benchName, task string, counts []familyCount) reports.Table {
	t := reports.Table{
		Caption: fmt.Sprintf("Per-attempt correctness per workload family (bench %s, %s)", benchName, task),
		Header:  []string{"family", "decision-free", "policy", "decoding", "attempts", "correct rate"},
	}
	for _, c := range counts {
		free := "no"
		if decisionFree(c.family) {
			free = "yes"
		}
		t.Rows = append(t.Rows, []string{c.family, free, c.policy, modeLabel(c.mode), strconv.Itoa(c.attempts), countCell(c.correct, c.attempts)})
	}
	t.Notes = []string{"Decision-free families (marked * in the figure, listed last) pass the static verdict whatever is decided: see the table of families in the main results."}
	return t
}

// latencyPairs pairs the median latency of SFT's and RL's correct attempts
// under decoding mode on each task (+Inf: none correct); finite says
// whether any is finite.
func latencyPairs(b *benchData, task, mode string) ([]plots.Pair, bool) {
	type key struct {
		index int
		hash  string
	}
	sft, rl := map[key]TaskRow{}, map[key]TaskRow{}
	var order []key
	for _, r := range b.perTask {
		if r.Task != task || r.Decoding != mode {
			continue
		}
		k := key{r.Index, r.Hash}
		switch r.Policy {
		case SFTPolicy:
			sft[k] = r
			order = append(order, k)
		case RLPolicy:
			rl[k] = r
		}
	}
	var pairs []plots.Pair
	finite := false
	for _, k := range order {
		s, ok := rl[k]
		if !ok {
			continue
		}
		f := sft[k]
		pairs = append(pairs, plots.Pair{Label: fmt.Sprintf("%s/%d", f.Family, k.index), A: f.MedianUS, B: s.MedianUS})
		if !math.IsInf(f.MedianUS, 1) || !math.IsInf(s.MedianUS, 1) {
			finite = true
		}
	}
	return pairs, finite
}

// trainingSection: SFT's loss curves and each RL run's curves, with a
// table of their final figures.
func (a *analyser) trainingSection() error {
	if a.in.sft == nil && len(a.in.rl) == 0 {
		return nil
	}
	sec := reports.Section{Title: "Training"}
	st := a.sp.Style
	t := reports.Table{Caption: "Training at a glance", Header: []string{"stage", "figure", "value"}}
	if d := a.in.sft; d != nil {
		loss := d.loss.Cols["loss"]
		if loss == nil {
			return fmt.Errorf("sft loss.csv has no loss column")
		}
		train := plots.Series{Name: "train"}
		val := plots.Series{Name: "validation"}
		for i, s := range d.loss.Steps {
			if !math.IsNaN(loss[i]) {
				train.X, train.Y = append(train.X, s), append(train.Y, loss[i])
			}
			if ev := d.loss.Cols["eval_loss"]; ev != nil && !math.IsNaN(ev[i]) {
				val.X, val.Y = append(val.X, s), append(val.Y, ev[i])
			}
		}
		var vs []plots.Series
		if len(val.X) > 0 {
			vs = []plots.Series{val}
		}
		if len(train.X) > 0 {
			f, err := plots.LossCurves([]plots.Series{train}, vs, st)
			if err != nil {
				return fmt.Errorf("sft: %w", err)
			}
			sec.Figures = append(sec.Figures, a.addFigure("sft_loss", f))
		}
		for _, r := range []struct{ label, path string }{
			{"parameters", "training.params"}, {"steps", "training.steps"}, {"training tokens", "training.tokens"},
			{"final training loss (nats/token)", "training.final_loss"}, {"validation loss (nats/token)", "validation.loss"},
			{"training examples", "examples.train"},
		} {
			if v, ok := lookup(d.metrics, r.path); ok {
				t.Rows = append(t.Rows, []string{"sft", r.label, v})
			}
		}
	}
	for _, d := range a.in.rl {
		c := d.curves
		cols := []string{"reward_mean", "reward_std", "correct_rate", "kl"}
		ok := len(c.Steps) > 0
		for _, n := range cols {
			if c.Cols[n] == nil {
				return fmt.Errorf("rl %s: curves.csv has no %s column", d.name, n)
			}
		}
		if ok {
			f, err := plots.RLCurves(c.Steps, c.Cols["reward_mean"], c.Cols["reward_std"], c.Cols["correct_rate"], c.Cols["kl"], st)
			if err != nil {
				return fmt.Errorf("rl %s: %w", d.name, err)
			}
			sec.Figures = append(sec.Figures, a.addFigure("rl_curves_"+d.name, f))
		}
		for _, r := range []struct{ label, path string }{
			{"steps", "training.steps"}, {"samples", "training.samples"}, {"correct rate of the training samples", "training.correct_rate"},
			{"first step's mean reward", "training.first_reward_mean"}, {"last step's mean reward", "training.last_reward_mean"},
		} {
			if v, ok := lookup(d.metrics, r.path); ok {
				t.Rows = append(t.Rows, []string{"rl " + d.name, r.label, v})
			}
		}
	}
	sec.Tables = append(sec.Tables, a.addTable("training", t))
	a.res.results.Sections = append(a.res.results.Sections, sec)
	return nil
}

// lookup returns the number or string at a dotted path of a JSON object,
// formatted for a table.
func lookup(m map[string]any, path string) (string, bool) {
	var cur any = m
	for _, p := range strings.Split(path, ".") {
		o, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = o[p]; !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return strconv.FormatInt(int64(v), 10), true
		}
		return strconv.FormatFloat(v, 'g', 6, 64), true
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

// datasetSection: the dataset sizes ours vs the paper's, and the figure of
// trace lengths and refinement speedups.
func (a *analyser) datasetSection() error {
	h := a.in.harvest
	if h == nil {
		return nil
	}
	sec := reports.Section{Title: "Datasets"}
	t := reports.Table{
		Caption: fmt.Sprintf("Dataset sizes: ours (scale %s) and the paper's", a.scale()),
		Header:  []string{"set", "ours", "paper", "ours / paper"},
	}
	for _, r := range []struct {
		label, key string
		ours       int
	}{
		{"distinct workloads", "dataset.workloads", h.stats.Workloads},
		{"construction examples", "dataset.construction", h.stats.Construction},
		{"refinement examples", "dataset.refinement", h.stats.Refinement},
		{"held-out construction tasks", "rl_faster.construction", h.stats.TestConstruction},
		{"held-out refinement prompts", "rl_faster.refinement", h.stats.TestRefinement},
	} {
		paper, ratio := "–", "–"
		if q, ok := quoted(r.key); ok {
			// "88 of 102": the held-out set is the number after "of".
			v := q.Value
			if _, after, found := strings.Cut(v, " of "); found {
				v = after
			}
			paper = v
			if x, err := strconv.ParseFloat(strings.ReplaceAll(v, ",", ""), 64); err == nil && x > 0 {
				ratio = num(float64(r.ours)/x, 4)
			}
		}
		t.Rows = append(t.Rows, []string{r.label, strconv.Itoa(r.ours), paper, ratio})
	}
	t.Notes = []string{"Ours are harvest's counts (stats.json); the paper's are quoted from its abstract (the held-out sets' sizes from \"88 of 102 construction tasks\" and \"145 of 170 refinement prompts\")."}
	sec.Tables = append(sec.Tables, a.addTable("datasets", t))
	if len(h.traceLens) > 0 && len(h.refineSpeedups) > 0 {
		var srcs []string
		for s := range h.stats.LatencySources {
			srcs = append(srcs, s)
		}
		sort.Strings(srcs)
		f, err := plots.DatasetStatsOf(plots.Dataset{TraceLens: h.traceLens, TraceUnit: "instructions",
			RefineSpeedups: h.refineSpeedups, Source: strings.Join(srcs, ", ")}, a.sp.Style)
		if err != nil {
			return fmt.Errorf("harvest: %w", err)
		}
		sec.Figures = append(sec.Figures, a.addFigure("dataset_stats", f))
	} else {
		sec.Text = "The datasets are empty: there is no distribution to plot."
	}
	a.res.results.Sections = append(a.res.results.Sections, sec)
	return nil
}

// quotedSection lists the paper's quoted figures verbatim.
func (a *analyser) quotedSection() error {
	t := reports.Table{Caption: "Quoted from the paper", Header: []string{"metric", "value", "source", "the abstract's words"}}
	for _, q := range reports.PaperFigures() {
		t.Rows = append(t.Rows, []string{q.Metric, q.Value, q.Source, q.Quote})
	}
	t.Notes = []string{"The paper's comparison with frontier LLMs is quoted, never reproduced: we have no numbers for it beyond what the paper states."}
	a.res.results.Sections = append(a.res.results.Sections, reports.Section{
		Title:  "Quoted from the paper",
		Tables: []reports.Table{a.addTable("quoted", t)},
	})
	return nil
}

// decodingText says in words how a bench's policies sampled (its
// summary's decoding): a constraint helps correctness, so every
// correctness figure says which one it had.
func decodingText(d string) string {
	switch d {
	case "grammar+gpu_limits":
		return "sampled under the script grammar that also keeps the GPU's thread limits"
	case "grammar":
		return "sampled under the script grammar"
	case "unconstrained", "free":
		return "sampled without constraint"
	}
	return "decoding not recorded"
}

// paperModeNote says why a mode other than unconstrained is set beside
// the paper's figure.
func paperModeNote(mode string) string {
	switch mode {
	case "unconstrained", "free":
		return ", as the paper's model decodes"
	case "":
		return ""
	}
	return "; the bench has no unconstrained run of it: the paper's model decodes without a mask"
}

// decodingsText says decodingText of each mode of a bench.
func decodingsText(modes []string) string {
	if len(modes) == 0 {
		return decodingText("")
	}
	out := make([]string, len(modes))
	for i, m := range modes {
		out[i] = decodingText(m)
	}
	return strings.Join(out, "; ")
}
