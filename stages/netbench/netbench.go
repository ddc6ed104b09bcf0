// Package netbench is the `netbench` stage kind, the network bench of issue
// 31: for each held-out network of kernels/corpus's layer tables, at one
// variant, its distinct subgraphs (workloads de-duplicated by structural
// hash) with their counts; per subgraph the evolutionary search's best at
// N measured trials, and, with a nested bench block, each policy's best of
// its first k attempts (sampled and judged by the bench kind itself, on
// the subgraphs' construction tasks only); the network's latency is the
// sum of count x latency, and the compile cost is the measured trials and
// the wall time.
//
//	stage "netbench" {
//	  kind          = "netbench"
//	  networks      = ["resnet-18", "bert-tiny"]     # counted networks of the layer tables
//	  variant       = { batch = 1, r = 224, seq = 128 } # default: each variable's first value
//	  search_trials = [64, 256, 1000]   # the search runs once, to the largest, read at each
//	  k             = [1, 4, 8]         # best of the first k attempts of each policy
//	  target = "h100-model"  numeric = true  seed = 1
//	  threads = 2                       # searches at once (not in the key)
//	  bench {                           # optional: a bench block (kind bench's attributes)
//	    construction_tasks = stage.harvest.out.test_construction # must hold every subgraph
//	    refinement_prompts = stage.harvest.out.test_refinement   # not benched here
//	    heldout = stage.encode.out.heldout  vocab = stage.encode.out.vocab
//	    policy "rl" { checkpoint = stage.rl.out.checkpoint }
//	    baselines = ["unscheduled"]  attempts = 8  greedy = false  tasks = 0
//	  }
//	}
//
// Outputs (docs/pipeline.md ## netbench): networks.json (everything),
// networks.csv (one row per network, entry and budget), table.md (latency
// ratio to the search's best and trials saved) and figures/ (network
// latency against measured trials, one SVG and PNG per network). Every
// latency carries its source: a model's ("model:h100") is simulated.
package netbench

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"dragonx/kernels/corpus"
	"dragonx/kernels/gpumodel"
	"dragonx/stages"
	"dragonx/stages/bench"
)

// Version is the kind's version; bump it when the same parameters would
// give other outputs.
const Version = "1"

// Output files.
const (
	ResultsFile = "networks.json"
	CSVFile     = "networks.csv"
	TableFile   = "table.md"
	FiguresDir  = "figures"
)

// Kind is the netbench stage kind.
type Kind struct{}

func init() { stages.Register(Kind{}) }

// Name returns "netbench".
func (Kind) Name() string { return "netbench" }

// Version returns the kind version: Version and the bench kind's, whose
// outputs the bench block's entries are ("1+bench4").
func (Kind) Version() string { return Version + "+bench" + bench.Version }

var schema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "networks", Required: true}, {Name: "variant"}, {Name: "search_trials"}, {Name: "k"},
		{Name: "target"}, {Name: "numeric"}, {Name: "seed"}, {Name: "threads"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "bench"}},
}

// Params are the parameters that decide the outputs.
type Params struct {
	Networks     []string         `json:"networks"`
	Variant      map[string]int64 `json:"variant"`
	SearchTrials []int            `json:"search_trials"`
	K            []int            `json:"k"`
	Target       string           `json:"target"`
	Numeric      bool             `json:"numeric"`
	Seed         int64            `json:"seed"`
}

// Stage is a decoded netbench stage.
type Stage struct {
	p       Params
	threads int
	bench   *bench.Stage // nil without a bench block
	params  []stages.Param
}

// Defaults.
var (
	defaultSearchTrials = []int{64, 256, 1000}
	defaultK            = []int{1, 4, 8}
)

const (
	defaultTarget  = "h100-model"
	defaultThreads = 2
)

func diag(summary, detail string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
}

// Decode decodes a netbench stage body.
func (Kind) Decode(body hcl.Body, dc *stages.DecodeContext) (stages.Stage, hcl.Diagnostics) {
	content, diags := body.Content(schema)
	if content == nil {
		return nil, diags
	}
	s := &Stage{threads: defaultThreads, p: Params{Variant: map[string]int64{}, SearchTrials: defaultSearchTrials, K: defaultK, Target: defaultTarget, Numeric: true, Seed: 1}}
	value := func(name string, want cty.Type) (*hcl.Attribute, cty.Value, bool) {
		a, v, d, ok := stages.AttrValue(content, name, want, dc.Eval)
		diags = append(diags, d...)
		return a, v, ok
	}
	ints := func(name string, lo, hi int64, v cty.Value, rng hcl.Range) []int {
		var out []int
		for _, e := range v.AsValueSlice() {
			n, ok := stages.WholeNumber(e)
			if !ok || n < lo || n > hi {
				diags = append(diags, diag("Invalid "+name, fmt.Sprintf("%s must list whole numbers from %d to %d.", name, lo, hi), rng))
				return nil
			}
			out = append(out, int(n))
		}
		if len(out) == 0 || !slices.IsSorted(out) || len(slices.Compact(slices.Clone(out))) != len(out) {
			diags = append(diags, diag("Invalid "+name, fmt.Sprintf("%s must list at least one number, in increasing order, each once.", name), rng))
			return nil
		}
		return out
	}

	var nets []*corpus.Network
	if a, v, ok := value("networks", cty.List(cty.String)); ok {
		for _, e := range v.AsValueSlice() {
			name := ""
			if !e.IsNull() {
				name = e.AsString()
			}
			n, err := corpus.NetworkByName(name)
			switch {
			case err != nil:
				diags = append(diags, diag("Unknown network", err.Error()+".", a.Expr.Range()))
			case !n.Counted:
				diags = append(diags, diag("Network without counts", fmt.Sprintf("network %q: its layer table gives no counts, so its latency cannot be summed; counted networks: %s.", name, strings.Join(corpus.CountedNetworks(), ", ")), a.Expr.Range()))
			case slices.Contains(s.p.Networks, name):
				diags = append(diags, diag("Invalid networks", fmt.Sprintf("network %q is listed twice.", name), a.Expr.Range()))
			default:
				s.p.Networks = append(s.p.Networks, name)
				nets = append(nets, n)
			}
		}
		if len(v.AsValueSlice()) == 0 {
			diags = append(diags, diag("Invalid networks", "networks is empty; want at least one network of the layer tables.", a.Expr.Range()))
		}
	}
	if a, v, ok := value("variant", cty.Map(cty.Number)); ok {
		for name, e := range v.AsValueMap() {
			n, ok := stages.WholeNumber(e)
			if !ok {
				diags = append(diags, diag("Invalid variant", fmt.Sprintf("variant %s must be a whole number.", name), a.Expr.Range()))
				continue
			}
			s.p.Variant[name] = n
		}
		for name := range s.p.Variant {
			used := false
			for _, n := range nets {
				_, has := n.Vars[name]
				used = used || has
			}
			if !used && len(nets) > 0 {
				diags = append(diags, diag("Invalid variant", fmt.Sprintf("variant names %q, a variable of none of the networks.", name), a.Expr.Range()))
			}
		}
		for _, n := range nets {
			if _, _, err := n.Variant(s.p.Variant); err != nil {
				diags = append(diags, diag("Invalid variant", err.Error()+".", a.Expr.Range()))
			}
		}
	}
	if a, v, ok := value("search_trials", cty.List(cty.Number)); ok {
		s.p.SearchTrials = ints("search_trials", 1, 100_000, v, a.Expr.Range())
	}
	if a, v, ok := value("k", cty.List(cty.Number)); ok {
		s.p.K = ints("k", 1, 1024, v, a.Expr.Range())
	}
	if a, v, ok := value("target", cty.String); ok {
		s.p.Target = v.AsString()
		if !slices.Contains(gpumodel.Targets(), s.p.Target) {
			diags = append(diags, diag("Invalid target", fmt.Sprintf("unknown target %q; want one of %s (models: their latencies are estimates).", s.p.Target, strings.Join(gpumodel.Targets(), ", ")), a.Expr.Range()))
		}
	}
	if _, v, ok := value("numeric", cty.Bool); ok {
		s.p.Numeric = v.True()
	}
	if a, v, ok := value("seed", cty.Number); ok {
		if n, isInt := stages.WholeNumber(v); isInt {
			s.p.Seed = n
		} else {
			diags = append(diags, diag("Invalid seed", "seed must be a whole number.", a.Expr.Range()))
		}
	}
	if a, v, ok := value("threads", cty.Number); ok {
		n, isInt := stages.WholeNumber(v)
		if !isInt || n < 1 || n > 256 {
			diags = append(diags, diag("Invalid threads", "threads must be 1 to 256 searches at once (not in the key).", a.Expr.Range()))
		} else {
			s.threads = int(n)
		}
	}
	for i, b := range content.Blocks {
		if i > 0 {
			diags = append(diags, diag("Duplicate bench block", fmt.Sprintf("a netbench stage has at most one bench block; the first is at %s.", content.Blocks[0].DefRange), b.DefRange))
			continue
		}
		bdc := *dc
		bdc.DeclRange = b.DefRange
		st, d := bench.Kind{}.Decode(b.Body, &bdc)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		bs := st.(*bench.Stage)
		switch sp := bs.Spec(); {
		case sp.Tasks != 0:
			diags = append(diags, diag("Invalid bench block", fmt.Sprintf("the bench block's tasks is %d; want 0: netbench keeps the subgraphs' construction tasks, and the bench must run them all.", sp.Tasks), b.DefRange))
		case sp.Target != s.p.Target:
			diags = append(diags, diag("Invalid bench block", fmt.Sprintf("the bench block's target %q is not the stage's %q: the network's latencies would mix sources.", sp.Target, s.p.Target), b.DefRange))
		case len(sp.Policies) > 0 && s.p.K[len(s.p.K)-1] > benchRows(sp):
			diags = append(diags, diag("Invalid k", fmt.Sprintf("k goes to %d, and the bench block gives each policy %d attempts a task.", s.p.K[len(s.p.K)-1], benchRows(sp)), b.DefRange))
		}
		s.bench = bs
	}
	if diags.HasErrors() {
		return nil, diags
	}
	variant := map[string]int64{}
	for k, v := range s.p.Variant {
		variant[k] = v
	}
	for _, p := range []struct {
		name string
		v    any
	}{
		{"networks", s.p.Networks}, {"variant", variant}, {"search_trials", s.p.SearchTrials}, {"k", s.p.K},
		{"target", s.p.Target}, {"numeric", s.p.Numeric}, {"seed", s.p.Seed},
	} {
		prm, err := stages.GoParam(p.name, p.v)
		if err != nil {
			return nil, append(diags, diag("Invalid "+p.name, err.Error()+".", dc.DeclRange))
		}
		s.params = append(s.params, prm)
	}
	if s.bench != nil {
		for _, p := range s.bench.Params() {
			s.params = append(s.params, stages.Param{Name: "bench." + p.Name, Value: p.Value})
		}
	}
	return s, diags
}

// benchRows is the number of attempts each policy makes at a task.
func benchRows(sp bench.Spec) int {
	n := sp.Attempts
	if sp.Greedy {
		n++
	}
	return n
}

// Params returns networks, variant, search_trials, k, target, numeric and
// seed, then the bench block's parameters prefixed with "bench.".
func (s *Stage) Params() []stages.Param { return s.params }

// Inputs returns the bench block's inputs (none without one): the layer
// tables are part of the binary.
func (s *Stage) Inputs() []stages.Input {
	if s.bench == nil {
		return nil
	}
	return s.bench.Inputs()
}

// Outputs returns figures, results (networks.json), csv and table.
func (s *Stage) Outputs() []stages.OutputDecl {
	return []stages.OutputDecl{
		{Name: "csv", Path: CSVFile},
		{Name: "figures", Path: FiguresDir},
		{Name: "results", Path: ResultsFile},
		{Name: "table", Path: TableFile},
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
