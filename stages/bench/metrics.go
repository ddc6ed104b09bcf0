package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"dragonx/kernels/verdict"
)

// Attempt is one line of attempts.jsonl: one attempt of a policy or a
// baseline at one held-out task, judged.
type Attempt struct {
	// Policy is a policy's name or "baseline:NAME".
	Policy string `json:"policy"`
	// Decoding is the mode a policy sampled (or random_walk walked)
	// under: unconstrained, grammar or grammar+gpu_limits; "" for the
	// baselines that decode nothing.
	Decoding string `json:"decoding,omitempty"`
	// Task is "construction" or "refinement"; Index its position in the
	// harvest's test file of that kind.
	Task   string `json:"task"`
	Index  int    `json:"index"`
	Hash   string `json:"hash"`
	Family string `json:"family"`
	// Attempt numbers the task's attempts from 0 (the greedy one first,
	// when there is one).
	Attempt int  `json:"attempt"`
	Greedy  bool `json:"greedy"`
	// Phase is the last judge phase reached; OK true when every phase
	// passed; Error why not.
	Phase string `json:"phase"`
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	// LatencyUS is the latency in µs (null unless OK), Source the latency
	// source's label ("model:h100": a model's estimate; "measured" only
	// from a GPU).
	LatencyUS *float64 `json:"latency_us"`
	Source    string   `json:"source"`
	// BaselineUS is the task's baseline latency (construction: the
	// unscheduled kernel with the default thread binding; refinement:
	// the prompt's own script), null when it has none; Speedup is
	// BaselineUS/LatencyUS for an OK attempt, null otherwise.
	BaselineUS *float64 `json:"baseline_us"`
	Speedup    *float64 `json:"speedup"`
	// PeakFraction is the workload's roofline time on the latency
	// source's device (kernels/roofline) over LatencyUS, for an OK
	// attempt with a latency from a modelled device (a model's figure,
	// as Source says); null otherwise, and when measured on the
	// machine's GPU (which the device table may not hold).
	PeakFraction *float64 `json:"peak_fraction"`
	// Tokens is the number of tokens the policy (or random_walk)
	// generated (0 for another baseline).
	Tokens int `json:"tokens"`
}

// less orders attempts by (policy, decoding, task, index, attempt).
func less(a, b *Attempt) int {
	if c := strings.Compare(a.Policy, b.Policy); c != 0 {
		return c
	}
	if c := modeOrder(a.Decoding) - modeOrder(b.Decoding); c != 0 {
		return c
	}
	if c := strings.Compare(a.Task, b.Task); c != 0 {
		return c
	}
	if a.Index != b.Index {
		return a.Index - b.Index
	}
	return a.Attempt - b.Attempt
}

// setSpeedup sets a.Speedup from the latency and the baseline.
func (a *Attempt) setSpeedup() {
	a.Speedup = nil
	if a.OK && a.LatencyUS != nil && a.BaselineUS != nil && *a.LatencyUS > 0 && *a.BaselineUS > 0 {
		x := *a.BaselineUS / *a.LatencyUS
		a.Speedup = &x
	}
}

// FastP are the thresholds of fast_p.
var FastP = []float64{0, 1, 1.5, 2}

// Group is the summary of one policy on one kind of task.
type Group struct {
	Tasks    int `json:"tasks"`
	Attempts int `json:"attempts"`
	Correct  int `json:"correct"`
	// CorrectRate is Correct/Attempts; GreedyCorrectRate the share of
	// the tasks whose greedy attempt is correct (null without greedy
	// attempts).
	CorrectRate       float64  `json:"correct_rate"`
	GreedyCorrectRate *float64 `json:"greedy_correct_rate"`
	// PassAt1 is PassAtK["1"]; PassAtK is the unbiased estimator
	// 1 - C(n-c,k)/C(n,k) averaged over the tasks, for k = 1, 2, 4, ...
	// up to n and n itself (n: a task's attempts).
	PassAt1 float64            `json:"pass_at_1"`
	PassAtK map[string]float64 `json:"pass_at_k"`
	// FastP is, for each threshold p, the share of attempts that are
	// correct and have a speedup above p.
	FastP map[string]float64 `json:"fast_p"`
	// GeomeanSpeedup is the geometric mean speedup of the correct
	// attempts that have one (null when none).
	GeomeanSpeedup *float64 `json:"geomean_speedup"`
	// Phases counts the attempts that passed each phase.
	Phases map[string]int `json:"phases"`
}

// PolicySummary is one policy's or baseline's figures under one decoding
// mode ("" for a baseline that decodes nothing).
type PolicySummary struct {
	Name         string `json:"name"`
	Kind         string `json:"kind"` // "policy" or "baseline"
	Decoding     string `json:"decoding,omitempty"`
	Construction Group  `json:"construction"`
	Refinement   Group  `json:"refinement"`
}

// Comparison counts the tasks of one kind on which a is faster than b,
// b faster than a, and the ties (FasterDefinition).
type Comparison struct {
	A string `json:"a"`
	B string `json:"b"`
	// Decoding is the mode of both (a baseline that decodes nothing is
	// compared with the policies of every mode).
	Decoding string `json:"decoding,omitempty"`
	Task     string `json:"task"`
	Tasks    int    `json:"tasks"`
	AFaster  int    `json:"a_faster"`
	BFaster  int    `json:"b_faster"`
	Ties     int    `json:"ties"`
}

// Summary is summary.json.
type Summary struct {
	Version     int     `json:"version"`
	Source      string  `json:"source"`
	Measured    bool    `json:"measured"`
	Attempts    int     `json:"attempts"`
	Temperature float64 `json:"temperature"`
	Greedy      bool    `json:"greedy"`
	// Outside names the outside task set the construction tasks are
	// from (kernels/taskset; absent for harvest's held-out tasks): task
	// i is the set's i-th covered task.
	Outside string `json:"outside,omitempty"`
	// SearchTrials is the search baseline's measured candidates per
	// task, with an outside set (absent otherwise): its fast_1 compares
	// with that search.
	SearchTrials int `json:"search_trials,omitempty"`
	// Decoding lists the modes the policies sampled under (each policy
	// summary says its own): "unconstrained" (any token), "grammar" (the
	// workload's script grammar) or "grammar+gpu_limits" (the grammar
	// that also keeps the GPU's thread limits).
	Decoding         []string        `json:"decoding"`
	FasterDefinition string          `json:"faster_definition"`
	Policies         []PolicySummary `json:"policies"`
	Comparisons      []Comparison    `json:"comparisons"`
}

// modeOrder orders decoding modes as AllDecodings ("" first).
func modeOrder(mode string) int { return slices.Index(AllDecodings, mode) }

// FasterDefinition is summary.json's faster_definition.
const FasterDefinition = "A policy is faster than another on a task when the median latency of its correct attempts (every sampled attempt and the greedy one) is lower; a task without a correct attempt counts as infinitely slow, and equal medians (both infinite included) are a tie."

// PassAtK is the unbiased estimator of pass@k for one task with n attempts
// of which c are correct: 1 - C(n-c, k)/C(n, k), computed as a product to
// stay exact for large n. It is NaN for k outside 1..n or c outside 0..n.
func PassAtK(n, c, k int) float64 {
	if k < 1 || k > n || c < 0 || c > n {
		return math.NaN()
	}
	if n-c < k {
		return 1
	}
	// C(n-c,k)/C(n,k) = prod_{i=n-c+1}^{n} (1 - k/i)
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

// passKs are the k of pass@k for n attempts per task: 1, 2, 4, ... below
// n, and n.
func passKs(n int) []int {
	var ks []int
	for k := 1; k < n; k *= 2 {
		ks = append(ks, k)
	}
	if n > 0 {
		ks = append(ks, n)
	}
	return ks
}

// Geomean is the geometric mean of xs (NaN when xs is empty).
func Geomean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}

// Median is the median of xs (the mean of the middle two for an even
// count; +Inf when xs is empty). xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.Inf(1)
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// Faster compares two tasks' median latencies (+Inf: no correct attempt):
// 1 when a is faster, -1 when b is, 0 for a tie.
func Faster(a, b float64) int {
	switch {
	case a < b:
		return 1
	case b < a:
		return -1
	}
	return 0
}

// taskKey identifies a task.
type taskKey struct {
	kind  string
	index int
}

// taskAttempts groups one policy's attempts at one task.
type taskAttempts struct {
	key      taskKey
	hash     string
	family   string
	attempts []*Attempt
}

// correctLatencies returns the latencies of the correct attempts.
func (t *taskAttempts) correctLatencies() []float64 {
	var out []float64
	for _, a := range t.attempts {
		if a.OK && a.LatencyUS != nil {
			out = append(out, *a.LatencyUS)
		}
	}
	return out
}

// byTask groups one policy's attempts (sorted) by task, in task order.
func byTask(atts []*Attempt) []*taskAttempts {
	var out []*taskAttempts
	for _, a := range atts {
		k := taskKey{a.Task, a.Index}
		if len(out) == 0 || out[len(out)-1].key != k {
			out = append(out, &taskAttempts{key: k, hash: a.Hash, family: a.Family})
		}
		t := out[len(out)-1]
		t.attempts = append(t.attempts, a)
	}
	return out
}

// group summarises the attempts of one policy at the tasks of one kind;
// phases are the judge's, in order.
func group(tasks []*taskAttempts, phases []verdict.Phase) Group {
	g := Group{PassAtK: map[string]float64{}, FastP: map[string]float64{}, Phases: map[string]int{}}
	for _, p := range phases {
		g.Phases[string(p)] = 0
	}
	for _, p := range FastP {
		g.FastP[fmtFloat(p)] = 0
	}
	var speedups []float64
	fast := make([]int, len(FastP))
	greedy, greedyOK := 0, 0
	passSum := map[int]float64{}
	// Every task of a policy has the same number of attempts; pass@k's k
	// follow the smallest, so that every task has n >= k.
	n := math.MaxInt
	for _, t := range tasks {
		n = min(n, len(t.attempts))
	}
	ks := []int(nil)
	if len(tasks) > 0 {
		ks = passKs(n)
	}
	for _, t := range tasks {
		g.Tasks++
		c := 0
		for _, a := range t.attempts {
			g.Attempts++
			if a.Greedy {
				greedy++
			}
			for i, p := range phases {
				if a.OK || phaseIndex(phases, verdict.Phase(a.Phase)) > i {
					g.Phases[string(p)]++
				}
			}
			if !a.OK {
				continue
			}
			c++
			if a.Greedy {
				greedyOK++
			}
			if a.Speedup != nil {
				speedups = append(speedups, *a.Speedup)
				for i, p := range FastP {
					if *a.Speedup > p {
						fast[i]++
					}
				}
			}
		}
		g.Correct += c
		for _, k := range ks {
			passSum[k] += PassAtK(len(t.attempts), c, k)
		}
	}
	if g.Attempts > 0 {
		g.CorrectRate = float64(g.Correct) / float64(g.Attempts)
		for i, p := range FastP {
			g.FastP[fmtFloat(p)] = float64(fast[i]) / float64(g.Attempts)
		}
	}
	if greedy > 0 {
		r := float64(greedyOK) / float64(greedy)
		g.GreedyCorrectRate = &r
	}
	for _, k := range ks {
		g.PassAtK[strconv.Itoa(k)] = passSum[k] / float64(g.Tasks)
	}
	g.PassAt1 = g.PassAtK["1"]
	if gm := Geomean(speedups); !math.IsNaN(gm) {
		g.GeomeanSpeedup = &gm
	}
	return g
}

// phaseIndex is p's position in phases; a phase not among them counts as
// the first (nothing passed).
func phaseIndex(phases []verdict.Phase, p verdict.Phase) int {
	if i := slices.Index(phases, p); i >= 0 {
		return i
	}
	return 0
}

// entry is a policy or a baseline under one decoding mode ("" for a
// baseline that decodes nothing) with its attempts (sorted).
type entry struct {
	name     string
	mode     string
	baseline bool
	attempts []*Attempt
}

// summarize builds summary.json from the entries (policies in their
// order, then the baselines) and the judge's phases.
func summarize(sp Spec, source string, entries []entry, phases []verdict.Phase) *Summary {
	s := &Summary{Version: 2, Source: source, Measured: strings.HasPrefix(source, "measured"), Attempts: sp.Attempts,
		Temperature: sp.Temperature, Greedy: sp.Greedy, Outside: sp.Outside, Decoding: sp.Modes(), FasterDefinition: FasterDefinition,
		Policies: []PolicySummary{}, Comparisons: []Comparison{}}
	if sp.Outside != "" && slices.Contains(sp.Baselines, BaselineSearch) {
		s.SearchTrials = sp.SearchTrials
	}
	medians := make([]map[taskKey]float64, len(entries))
	for i, e := range entries {
		kind := "policy"
		if e.baseline {
			kind = "baseline"
		}
		tasks := byTask(e.attempts)
		medians[i] = map[taskKey]float64{}
		var cons, refs []*taskAttempts
		for _, t := range tasks {
			medians[i][t.key] = Median(t.correctLatencies())
			if t.key.kind == KindConstruction {
				cons = append(cons, t)
			} else {
				refs = append(refs, t)
			}
		}
		s.Policies = append(s.Policies, PolicySummary{Name: e.name, Kind: kind, Decoding: e.mode, Construction: group(cons, phases), Refinement: group(refs, phases)})
	}
	// Each policy against the policies before it and every baseline, of
	// its decoding mode (or of none).
	for i, a := range entries {
		if a.baseline {
			continue
		}
		for j, b := range entries {
			if j == i || (!b.baseline && j > i) || (b.mode != "" && b.mode != a.mode) {
				continue
			}
			for _, kind := range []string{KindConstruction, KindRefinement} {
				c := Comparison{A: a.name, B: b.name, Decoding: a.mode, Task: kind}
				keys := make([]taskKey, 0, len(medians[i]))
				for k := range medians[i] {
					if _, ok := medians[j][k]; ok && k.kind == kind {
						keys = append(keys, k)
					}
				}
				for _, k := range keys {
					c.Tasks++
					switch Faster(medians[i][k], medians[j][k]) {
					case 1:
						c.AFaster++
					case -1:
						c.BFaster++
					default:
						c.Ties++
					}
				}
				s.Comparisons = append(s.Comparisons, c)
			}
		}
	}
	return s
}

// encodeAttempts writes attempts.jsonl: the attempts sorted by (policy,
// decoding, task, index, attempt), one JSON object a line.
func encodeAttempts(atts []*Attempt) ([]byte, error) {
	sorted := slices.Clone(atts)
	slices.SortStableFunc(sorted, less)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, a := range sorted {
		if err := enc.Encode(a); err != nil {
			return nil, fmt.Errorf("attempts.jsonl: %w", err)
		}
	}
	return buf.Bytes(), nil
}

// PerTaskHeader is per_task.csv's header.
var PerTaskHeader = []string{"policy", "decoding", "task", "index", "hash", "family", "attempts", "correct", "median_us", "best_us", "baseline_us"}

// encodePerTask writes per_task.csv: one row per policy and task, sorted as
// attempts.jsonl; median_us and best_us over the correct attempts (empty
// when none), baseline_us empty when the task has none.
func encodePerTask(atts []*Attempt) ([]byte, error) {
	sorted := slices.Clone(atts)
	slices.SortStableFunc(sorted, less)
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(PerTaskHeader); err != nil {
		return nil, err
	}
	var rows [][]*Attempt
	for _, a := range sorted {
		if n := len(rows); n > 0 && rows[n-1][0].Policy == a.Policy && rows[n-1][0].Decoding == a.Decoding && rows[n-1][0].Task == a.Task && rows[n-1][0].Index == a.Index {
			rows[n-1] = append(rows[n-1], a)
		} else {
			rows = append(rows, []*Attempt{a})
		}
	}
	for _, r := range rows {
		t := &taskAttempts{attempts: r}
		lats := t.correctLatencies()
		median, best, base := "", "", ""
		if len(lats) > 0 {
			median, best = fmtFloat(Median(lats)), fmtFloat(slices.Min(lats))
		}
		if b := r[0].BaselineUS; b != nil {
			base = fmtFloat(*b)
		}
		a := r[0]
		if err := w.Write([]string{a.Policy, a.Decoding, a.Task, strconv.Itoa(a.Index), a.Hash, a.Family, strconv.Itoa(len(r)), strconv.Itoa(len(lats)), median, best, base}); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
