package netbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"dragonx/internal/progress"
	"dragonx/internal/safeio"
	"dragonx/kernels/corpus"
	"dragonx/stages"
	"dragonx/stages/bench"
	"dragonx/stages/sft"
)

// Results is networks.json.
type Results struct {
	Target string `json:"target"`
	// Source labels every latency ("model:h100": the analytic model's
	// estimate, simulated; "measured" only from a GPU).
	Source       string          `json:"source"`
	SearchTrials []int           `json:"search_trials"`
	K            []int           `json:"k"`
	Numeric      bool            `json:"numeric"`
	BenchWallS   *float64        `json:"bench_wall_s"` // the bench block's wall time (null without one)
	Networks     []NetworkResult `json:"networks"`
}

// NetworkResult is one network at its variant.
type NetworkResult struct {
	Network   string           `json:"network"`
	Variant   string           `json:"variant"` // e.g. "batch=1,r=224"
	Subgraphs []SubgraphResult `json:"subgraphs"`
	// Points are the network's latencies: the search at each budget, then
	// each bench entry at each k.
	Points []NetPoint `json:"points"`
}

// SubgraphResult is one distinct workload of the network.
type SubgraphResult struct {
	Hash    string          `json:"hash"` // structural hash, 16 hex digits
	Family  string          `json:"family"`
	Spec    json.RawMessage `json:"spec"`
	Count   int64           `json:"count"`  // runs in one forward pass
	Layers  []string        `json:"layers"` // the table's layers it stands for
	Search  []SearchPoint   `json:"search"`
	Entries []EntryPoint    `json:"entries"`
}

// EntryPoint is a bench entry's best of its first K attempts at a subgraph.
type EntryPoint struct {
	Entry     string   `json:"entry"` // "rl (grammar+gpu_limits)", "baseline:unscheduled"
	K         int      `json:"k"`
	Attempts  int      `json:"attempts"` // attempts among the first K (fewer if it made fewer)
	Correct   int      `json:"correct"`  // of those, passed the judge and measured
	LatencyUS *float64 `json:"latency_us"`
	Source    string   `json:"source,omitempty"`
}

// NetPoint is the network's latency from one entry at one budget.
type NetPoint struct {
	// Entry is "search" or a bench entry; Budget the search's trials per
	// subgraph or the entry's attempts per subgraph (k).
	Entry  string `json:"entry"`
	Budget int    `json:"budget"`
	// LatencyUS is the sum over the subgraphs of count x latency, null
	// unless every subgraph has one (Covered of Subgraphs do).
	LatencyUS *float64 `json:"latency_us"`
	Covered   int      `json:"covered"`
	Subgraphs int      `json:"subgraphs"`
	// Trials is the compile cost in candidates over all subgraphs: the
	// search's measured trials, an entry's attempts (k per subgraph; each
	// is compiled and checked, the correct ones measured: Correct). WallS
	// is the search's wall time summed over the subgraphs (null for an
	// entry: the bench block's time is BenchWallS).
	Trials  int      `json:"trials"`
	Correct int      `json:"correct,omitempty"`
	WallS   *float64 `json:"wall_s"`
	// RatioToSearch is LatencyUS over the search's at its largest budget,
	// TrialsSaved that search's Trials over Trials (null when either is
	// missing).
	RatioToSearch *float64 `json:"ratio_to_search"`
	TrialsSaved   *float64 `json:"trials_saved"`
}

// Run computes the subgraphs, searches each, runs the bench block on them
// and writes the outputs.
func (s *Stage) Run(ctx context.Context, rc *stages.RunContext) error {
	start := time.Now()
	logw := rc.Log
	if logw == nil {
		logw = io.Discard
	}
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "netbench: "+format+"\n", args...) }
	rep := rc.Progress
	if rep == nil {
		rep = progress.Nop{}
	}
	nets, err := s.subgraphs()
	if err != nil {
		return fmt.Errorf("netbench: %w", err)
	}
	var distinct []corpus.Subgraph
	seen := map[string]bool{}
	for _, n := range nets {
		total := int64(0)
		for _, sg := range n.subgraphs {
			total += sg.Count
			if !seen[sg.Hash] {
				seen[sg.Hash] = true
				distinct = append(distinct, sg)
			}
		}
		logf("%s (%s): %d distinct subgraphs, %d layer runs", n.name, n.variant, len(n.subgraphs), total)
	}

	gateDir := ""
	if rc.StateDir != "" {
		gateDir = filepath.Join(rc.StateDir, "gate")
	} else {
		if gateDir, err = os.MkdirTemp("", "dragonx-netbench-gate-"); err != nil {
			return fmt.Errorf("netbench: %w", err)
		}
		defer os.RemoveAll(gateDir)
	}
	jopts, err := sft.JudgeOptions(sft.EvalSpec{Numeric: s.p.Numeric, Target: s.p.Target, MaxNew: 1}, nil, s.p.Seed, gateDir)
	if err != nil {
		return fmt.Errorf("netbench: %w", err)
	}
	source := ""
	if l, ok := jopts.Latency.(interface{ Label() string }); ok {
		source = l.Label()
	}

	// The searches, one per distinct subgraph.
	searches := make([][]SearchPoint, len(distinct))
	var mu sync.Mutex
	done := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.threads)
	for i, sg := range distinct {
		g.Go(func() error {
			pts, err := searchSubgraph(gctx, sg, s.p.SearchTrials, s.p.Seed, jopts.Latency, jopts)
			if err != nil {
				return fmt.Errorf("%s (%s): %w", sg.Layers[0], sg.Spec.Label(), err)
			}
			searches[i] = pts
			mu.Lock()
			done++
			rep.Report(progress.Event{Done: int64(done), Total: int64(len(distinct)), Unit: "subgraphs", Note: "search"})
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("netbench: %w", err)
	}
	byHash := map[string][]SearchPoint{}
	for i, sg := range distinct {
		byHash[sg.Hash] = searches[i]
	}
	logf("searched %d subgraphs to %d trials in %.1f s", len(distinct), s.p.SearchTrials[len(s.p.SearchTrials)-1], time.Since(start).Seconds())

	var br *benchResult
	if s.bench != nil {
		if br, err = s.runBench(ctx, rc, nets); err != nil {
			return fmt.Errorf("netbench: the bench block: %w", err)
		}
		logf("the bench block: %.1f s", br.wall.Seconds())
	}
	res, err := s.assemble(nets, byHash, br, source)
	if err != nil {
		return fmt.Errorf("netbench: %w", err)
	}
	if err := writeOutputs(rc.Dir, res); err != nil {
		return fmt.Errorf("netbench: %w", err)
	}
	for _, n := range res.Networks {
		for _, p := range n.Points {
			logf("%s %s @%d: %s (%s), %d trials, ratio to the search's best %s", n.Network, p.Entry, p.Budget, fmtUS(p.LatencyUS), res.Source, p.Trials, fmtPtr(p.RatioToSearch))
		}
	}
	logf("done in %.1f s", time.Since(start).Seconds())
	return nil
}

// subgraphs returns each network's subgraphs at the stage's variant.
func (s *Stage) subgraphs() ([]netSubgraphs, error) {
	var out []netSubgraphs
	for _, name := range s.p.Networks {
		n, err := corpus.NetworkByName(name)
		if err != nil {
			return nil, err
		}
		vars, label, err := n.Variant(s.p.Variant)
		if err != nil {
			return nil, err
		}
		subs, err := n.Subgraphs(vars)
		if err != nil {
			return nil, err
		}
		out = append(out, netSubgraphs{name: name, variant: label, subgraphs: subs})
	}
	return out, nil
}

// entryName names a bench entry: the policy (or baseline:NAME), and its
// decoding mode in parentheses when it has one.
func entryName(a *bench.Attempt) string {
	if a.Decoding == "" {
		return a.Policy
	}
	return a.Policy + " (" + a.Decoding + ")"
}

// bestOfK returns the best latency among the attempts numbered below k,
// with the number of those attempts and of the correct ones.
func bestOfK(atts []*bench.Attempt, k int) (best *float64, n, correct int, source string) {
	for _, a := range atts {
		if a.Attempt >= k {
			continue
		}
		n++
		if !a.OK || a.LatencyUS == nil {
			continue
		}
		correct++
		if best == nil || *a.LatencyUS < *best {
			v := *a.LatencyUS
			best, source = &v, a.Source
		}
	}
	return best, n, correct, source
}

// networkLatency sums count x latency over the subgraphs (lat gives each
// one's, nil when it has none); the sum is nil unless every one has one.
func networkLatency(subs []corpus.Subgraph, lat func(i int) *float64) (*float64, int) {
	sum, covered := 0.0, 0
	for i, sg := range subs {
		if l := lat(i); l != nil {
			sum += float64(sg.Count) * *l
			covered++
		}
	}
	if covered < len(subs) {
		return nil, covered
	}
	return &sum, covered
}

// assemble builds the results from the searches and the bench's attempts.
func (s *Stage) assemble(nets []netSubgraphs, searches map[string][]SearchPoint, br *benchResult, source string) (*Results, error) {
	res := &Results{Target: s.p.Target, Source: source, SearchTrials: s.p.SearchTrials, K: s.p.K, Numeric: s.p.Numeric}
	var entries []string // in the order of the bench's attempts
	if br != nil {
		w := br.wall.Seconds()
		res.BenchWallS = &w
		seen := map[string]bool{}
		for _, n := range nets {
			for _, sg := range n.subgraphs {
				for _, a := range br.attempts[sg.Hash] {
					if e := entryName(a); !seen[e] {
						seen[e] = true
						entries = append(entries, e)
					}
				}
			}
		}
	}
	for _, n := range nets {
		nr := NetworkResult{Network: n.name, Variant: n.variant}
		perEntry := map[string]map[string][]*bench.Attempt{} // entry -> hash -> attempts
		for _, sg := range n.subgraphs {
			spec, err := json.Marshal(sg.Spec)
			if err != nil {
				return nil, err
			}
			sr := SubgraphResult{Hash: sg.Hash, Family: sg.Spec.Family(), Spec: spec, Count: sg.Count, Layers: sg.Layers, Search: searches[sg.Hash]}
			if br != nil {
				for _, a := range br.attempts[sg.Hash] {
					e := entryName(a)
					if perEntry[e] == nil {
						perEntry[e] = map[string][]*bench.Attempt{}
					}
					perEntry[e][sg.Hash] = append(perEntry[e][sg.Hash], a)
				}
			}
			nr.Subgraphs = append(nr.Subgraphs, sr)
		}
		// The search at each budget.
		for bi, budget := range s.p.SearchTrials {
			lat, covered := networkLatency(n.subgraphs, func(i int) *float64 { return nr.Subgraphs[i].Search[bi].LatencyUS })
			p := NetPoint{Entry: "search", Budget: budget, LatencyUS: lat, Covered: covered, Subgraphs: len(n.subgraphs)}
			wall := 0.0
			for i := range nr.Subgraphs {
				p.Trials += nr.Subgraphs[i].Search[bi].Measured
				wall += nr.Subgraphs[i].Search[bi].WallS
			}
			p.WallS = &wall
			nr.Points = append(nr.Points, p)
		}
		ref := nr.Points[len(s.p.SearchTrials)-1]
		// Each bench entry at each k it reaches.
		for _, e := range entries {
			most := 0
			for _, atts := range perEntry[e] {
				for _, a := range atts {
					most = max(most, a.Attempt+1)
				}
			}
			for _, k := range s.p.K {
				if k > most && k != s.p.K[0] {
					break // the entry makes fewer attempts (a baseline's one)
				}
				p := NetPoint{Entry: e, Budget: k, Subgraphs: len(n.subgraphs)}
				lats := make([]*float64, len(n.subgraphs))
				for i, sg := range n.subgraphs {
					best, nAtt, correct, src := bestOfK(perEntry[e][sg.Hash], k)
					lats[i] = best
					p.Trials += nAtt
					p.Correct += correct
					nr.Subgraphs[i].Entries = append(nr.Subgraphs[i].Entries, EntryPoint{Entry: e, K: k, Attempts: nAtt, Correct: correct, LatencyUS: best, Source: src})
				}
				p.LatencyUS, p.Covered = networkLatency(n.subgraphs, func(i int) *float64 { return lats[i] })
				nr.Points = append(nr.Points, p)
			}
		}
		for i := range nr.Points {
			p := &nr.Points[i]
			if p.LatencyUS != nil && ref.LatencyUS != nil && *ref.LatencyUS > 0 {
				r := *p.LatencyUS / *ref.LatencyUS
				p.RatioToSearch = &r
			}
			if p.Trials > 0 {
				t := float64(ref.Trials) / float64(p.Trials)
				p.TrialsSaved = &t
			}
		}
		res.Networks = append(res.Networks, nr)
	}
	return res, nil
}

// writeOutputs writes networks.json, networks.csv, table.md and the
// figures.
func writeOutputs(dir string, res *Results) error {
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	files := []struct {
		name string
		b    []byte
	}{{ResultsFile, append(js, '\n')}, {CSVFile, csvOf(res)}, {TableFile, tableOf(res)}}
	for _, f := range files {
		if err := safeio.WriteAtomic(filepath.Join(dir, f.name), func(w io.Writer) error { _, err := w.Write(f.b); return err }); err != nil {
			return err
		}
	}
	return writeFigures(filepath.Join(dir, FiguresDir), res)
}

// csvOf is networks.csv: one row per network and point.
func csvOf(res *Results) []byte {
	var b strings.Builder
	b.WriteString("network,variant,entry,budget,latency_us,source,covered,subgraphs,trials,correct,wall_s,ratio_to_search,trials_saved\n")
	for _, n := range res.Networks {
		for _, p := range n.Points {
			fmt.Fprintf(&b, "%s,%s,%s,%d,%s,%s,%d,%d,%d,%d,%s,%s,%s\n", n.Network, csvQuote(n.Variant), csvQuote(p.Entry), p.Budget,
				csvFloat(p.LatencyUS), res.Source, p.Covered, p.Subgraphs, p.Trials, p.Correct, csvFloat(p.WallS), csvFloat(p.RatioToSearch), csvFloat(p.TrialsSaved))
		}
	}
	return []byte(b.String())
}

func csvQuote(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

func csvFloat(p *float64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatFloat(*p, 'g', 6, 64)
}

// tableOf is table.md: per network, each point's latency, its ratio to the
// search's best at the largest budget, and the trials saved.
func tableOf(res *Results) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Network latency (sum of count x latency over the distinct subgraphs; %s%s), against the search at %d trials per subgraph.\n\n",
		res.Source, simulatedNote(res.Source), res.SearchTrials[len(res.SearchTrials)-1])
	b.WriteString("| network | entry | budget | latency µs | subgraphs correct | ratio to search's best | trials | trials saved |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, n := range res.Networks {
		for _, p := range n.Points {
			budget := fmt.Sprintf("%d trials", p.Budget)
			if p.Entry != "search" {
				budget = fmt.Sprintf("best of %d", p.Budget)
			}
			fmt.Fprintf(&b, "| %s (%s) | %s | %s | %s | %d/%d | %s | %d | %s |\n", n.Network, n.Variant, p.Entry, budget,
				fmtUS(p.LatencyUS), p.Covered, p.Subgraphs, fmtRatio(p.RatioToSearch), p.Trials, fmtRatio(p.TrialsSaved))
		}
	}
	return []byte(b.String())
}

// simulatedNote says that a model's latencies are simulated.
func simulatedNote(source string) string {
	if strings.HasPrefix(source, "model:") {
		return ", simulated"
	}
	return ""
}

func fmtUS(p *float64) string {
	if p == nil {
		return "—"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64)
}

func fmtRatio(p *float64) string {
	if p == nil || math.IsInf(*p, 0) {
		return "—"
	}
	return strconv.FormatFloat(*p, 'f', 2, 64) + "x"
}

func fmtPtr(p *float64) string { return fmtRatio(p) }

// sortedStrings returns xs sorted.
func sortedStrings(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}
