// Package bench is the `bench` stage kind, the paper's GPU benchmark: every
// policy (a trained model: sft's or rl's checkpoint) samples attempts for
// each held-out construction task and refinement prompt, and the baselines
// (the unscheduled kernel, random design-space samples, uniform random walks
// under the policies' decoding mask, the evolutionary search, the dataset's
// best script) are judged on the same tasks with the same judge
// (kernels/judge: every phase, then the latency on the target).
//
//	stage "bench" {
//	  kind               = "bench"
//	  heldout            = stage.encode.out.heldout
//	  vocab              = stage.encode.out.vocab
//	  construction_tasks = stage.harvest.out.test_construction
//	  refinement_prompts = stage.harvest.out.test_refinement
//	  db                 = stage.harvest.out.db          # for the dataset_best baseline
//	  policy "sft" { checkpoint = stage.sft.out.checkpoint }
//	  policy "rl"  { checkpoint = stage.rl.out.checkpoint }
//	  baselines   = ["unscheduled", "random", "random_walk", "search", "dataset_best"]
//	  attempts    = 4    temperature = 0.8  top_k = 0  greedy = true  max_new = 512
//	  constrained = true # sample under the workload's script grammar
//	  gpu_limits  = true # ... that also keeps the GPU's thread limits (needs constrained)
//	  # or, instead of constrained and gpu_limits, every mode to bench the policies under:
//	  # decoding  = ["unconstrained", "grammar", "grammar+gpu_limits"]
//	  tasks       = 0    # per task kind; 0 = all
//	  search_trials = 32  target = "h100-model"  numeric = true  seed = 1
//	  threads = 2  batch = 8  shards = 1             # not in the key
//	}
//
// Sampling needs libtorch, which dragonx does not link: with policies, Run
// hands the work to dragonx-torch through package stages/job; with
// baselines only, it runs in this process. The outputs (attempts.jsonl,
// summary.json, per_task.csv) are described in docs/pipeline.md (## bench).
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"

	"dragonx/dragon"
	"dragonx/internal/torchbin"
	"dragonx/kernels/cudabench"
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/taskset"
	"dragonx/stages"
	"dragonx/stages/job"
	"dragonx/stages/sft"
)

// Version is the kind's version; bump it when the same parameters would give
// different outputs.
const Version = "5" // 2: summary.json says how the policies decoded; 3: GPU model version 2 (issue 28), attempts and summaries carry their decoding mode, random_walk (issue 27); 4: local buffers compacted per vthread (static verdict); 5: attempts carry peak_fraction, outside task sets (issue 31)

// Kind is the bench stage kind.
type Kind struct{}

func init() { stages.Register(Kind{}) }

// Name returns "bench".
func (Kind) Name() string { return "bench" }

// Version returns the kind version.
func (Kind) Version() string { return Version }

// The baselines.
const (
	BaselineUnscheduled = "unscheduled" // the workload with only the default thread binding
	// BaselineRandom draws from the design space (kernels/sample) without
	// any decoding mask: the unconstrained counterpart of random_walk.
	BaselineRandom = "random"
	// BaselineRandomWalk picks, token by token, uniformly among the tokens
	// the policies' decoding mask allows (the script grammar, with or
	// without the GPU's thread limits): a policy that has learned nothing
	// beyond the mask. It runs under each grammar mode of decoding.
	BaselineRandomWalk  = "random_walk"
	BaselineSearch      = "search"       // the evolutionary search's best (kernels/search)
	BaselineDatasetBest = "dataset_best" // the best valid script of harvest's db
)

// AllBaselines are the baselines, in their canonical order.
var AllBaselines = []string{BaselineUnscheduled, BaselineRandom, BaselineRandomWalk, BaselineSearch, BaselineDatasetBest}

// defaultBaselines are the baselines of a stage that does not list them:
// every one but random_walk, which needs the vocabulary and a grammar mode
// (and was added after the others: the default key stays as it was).
var defaultBaselines = []string{BaselineUnscheduled, BaselineRandom, BaselineSearch, BaselineDatasetBest}

// The decoding modes: how a policy samples (and random_walk walks).
const (
	// DecodeUnconstrained: any token of the vocabulary (the paper's model
	// decodes so); bounded by max_new like every mode.
	DecodeUnconstrained = "unconstrained"
	// DecodeGrammar: the workload's script grammar (kernels/grammar).
	DecodeGrammar = "grammar"
	// DecodeGPULimits: the grammar that also keeps the GPU's thread
	// limits (grammar.WithThreadLimits).
	DecodeGPULimits = "grammar+gpu_limits"
)

// AllDecodings are the decoding modes, in their canonical order.
var AllDecodings = []string{DecodeUnconstrained, DecodeGrammar, DecodeGPULimits}

// DecodingOf is the mode of the constrained and gpu_limits attributes.
func DecodingOf(constrained, gpuLimits bool) string {
	switch {
	case constrained && gpuLimits:
		return DecodeGPULimits
	case constrained:
		return DecodeGrammar
	}
	return DecodeUnconstrained
}

// decodingFlags are the constrained and gpu_limits of a mode.
func decodingFlags(mode string) (constrained, gpuLimits bool) {
	return mode != DecodeUnconstrained, mode == DecodeGPULimits
}

// BaselinePrefix starts a baseline's name in the outputs
// ("baseline:search").
const BaselinePrefix = "baseline:"

// TargetCUDA measures on the machine's GPU (kernels/cudabench); the other
// targets are kernels/gpumodel's models.
const TargetCUDA = "cuda"

// The input files, placed in the working directory under inputDir.
const inputDir = "in"

var inputFiles = map[string]string{
	"heldout": "heldout.jsonl", "vocab": "vocab.txt", "construction_tasks": "test_construction.jsonl",
	"refinement_prompts": "test_refinement.jsonl", "db": "db",
}

var inputNames = []string{"heldout", "vocab", "construction_tasks", "refinement_prompts", "db"}

// upstreamOf names the usual upstream output of each input.
var upstreamOf = map[string]string{
	"heldout": "stage.encode.out.heldout", "vocab": "stage.encode.out.vocab",
	"construction_tasks": "stage.harvest.out.test_construction", "refinement_prompts": "stage.harvest.out.test_refinement",
	"db": "stage.harvest.out.db", "checkpoint": "stage.sft.out.checkpoint",
}

// The outputs.
const (
	AttemptsFile = "attempts.jsonl"
	SummaryFile  = "summary.json"
	PerTaskFile  = "per_task.csv"
)

var outputs = []stages.OutputDecl{
	{Name: "attempts", Path: AttemptsFile},
	{Name: "per_task", Path: PerTaskFile},
	{Name: "summary", Path: SummaryFile},
}

// Policy is a policy block: a model checkpoint to sample from, named by the
// block's label.
type Policy struct {
	Name string `json:"name"`
	// Checkpoint is the checkpoint file, relative to the job's directory.
	Checkpoint string `json:"checkpoint"`
}

// Params are the parameters that decide the outputs (the key), as the job
// receives them.
type Params struct {
	Baselines   []string `json:"baselines"`
	Attempts    int      `json:"attempts"`
	Temperature float64  `json:"temperature"`
	TopK        int      `json:"top_k"`
	Greedy      bool     `json:"greedy"`
	MaxNew      int      `json:"max_new"`
	Constrained bool     `json:"constrained"`
	// GPULimits makes the grammar also keep the samples within the GPU's
	// thread limits (grammar.WithThreadLimits); it needs Constrained.
	GPULimits bool `json:"gpu_limits"`
	// Decoding lists the modes the policies are benched under when there
	// are more than one (AllDecodings' order; Constrained and GPULimits
	// are then false); nil means the one mode of Constrained and
	// GPULimits. See Modes.
	Decoding []string `json:"decoding,omitempty"`
	// Tasks is the number of tasks per kind (the first of each file, or
	// spread over it with TaskPick "spread"); 0 means all.
	Tasks int `json:"tasks"`
	// TaskPick is how Tasks chooses among a file's tasks: "" (the
	// first) or TaskPickSpread (evenly spaced through the file, so that
	// a few tasks cover the families of a file sorted by family).
	TaskPick string `json:"task_pick,omitempty"`
	// Format is the prompt format of an outside set's tasks (stages/sft's
	// formats): "" for script, "decisions" for the policies of an encode
	// stage with format = "decisions". Held-out tasks' format is read
	// from heldout.jsonl.
	Format       string `json:"format,omitempty"`
	SearchTrials int    `json:"search_trials"`
	// SearchCheck is how the search baseline checks its candidates:
	// SearchStatic or SearchNumeric; "" when search is not a baseline
	// (then it is in neither the key nor the state).
	SearchCheck string `json:"search_check,omitempty"`
	// Outside names an outside task set (kernels/taskset: its covered
	// tasks are the bench's construction tasks, in place of harvest's
	// test files); "" for the held-out tasks (then it is in neither the
	// key nor the spec).
	Outside string `json:"outside,omitempty"`
	Target  string `json:"target"`
	Numeric bool   `json:"numeric"`
	Seed    int64  `json:"seed"`
}

// Spec is everything the job needs: the parameters, the policies, the
// knobs that do not change the outputs and the input files. It is the job's
// spec (JSON).
type Spec struct {
	Params
	Policies []Policy `json:"policies"`
	// Threads are libtorch's intra-op threads and the judging workers;
	// Batch the rows sampled together. Neither changes the outputs.
	Threads int `json:"threads"`
	Batch   int `json:"batch"`
	// Files are the input files by input name, relative to the job's
	// directory ("" for an input not given).
	Files map[string]string `json:"files"`
}

// Defaults.
const (
	defaultAttempts     = 4
	defaultTemperature  = 0.8
	defaultMaxNew       = 768
	defaultSearchTrials = 32
	defaultSearchCheck  = SearchStatic
	defaultTarget       = "h100-model"
	defaultSeed         = 1
	defaultBatch        = 8
)

// How the search baseline checks its candidates (search_check).
const (
	// SearchStatic: as harvest's search, each measured candidate passes
	// the static verdict (postprocessors, VerifyGPUCode) before its
	// latency; the search's best is then judged like every attempt, the
	// numerical gate included (with numeric).
	SearchStatic = "static"
	// SearchNumeric: each measured candidate also passes the numerical
	// gate (with numeric), so the best is one that passed it. On the CPU
	// this costs a full-size run of every candidate.
	SearchNumeric = "numeric"
)

// interruptGrace is how long an interrupted job gets to finish the batch it
// samples and save its state before it is killed.
const interruptGrace = 2 * time.Minute

// Stage is a decoded bench stage.
type Stage struct {
	spec   Spec
	shards int
	inputs []stages.Input
	params []stages.Param
}

var schema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "heldout"}, {Name: "vocab"},
		{Name: "construction_tasks"}, {Name: "refinement_prompts"}, {Name: "outside"}, {Name: "format"}, {Name: "task_pick"},
		{Name: "db"},
		{Name: "baselines"}, {Name: "attempts"}, {Name: "temperature"}, {Name: "top_k"}, {Name: "greedy"},
		{Name: "max_new"}, {Name: "constrained"}, {Name: "gpu_limits"}, {Name: "decoding"}, {Name: "tasks"}, {Name: "search_trials"}, {Name: "search_check"}, {Name: "target"},
		{Name: "numeric"}, {Name: "seed"}, {Name: "threads"}, {Name: "batch"}, {Name: "shards"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "policy", LabelNames: []string{"name"}}},
}

var policySchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "checkpoint", Required: true}}}

// policyName is what a policy's label may be: it names the policy in the
// outputs, so it must not look like a baseline's name.
var policyName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

func diag(summary, detail string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
}

// Targets returns the targets: the models of kernels/gpumodel and cuda.
func Targets() []string { return append(gpumodel.Targets(), TargetCUDA) }

// DefaultParams returns the parameters' defaults: every baseline but
// random_walk, 4 attempts at temperature 0.8 and a greedy one,
// unconstrained, all tasks, 32 search trials checked statically, on the
// h100 model with the numerical gate.
func DefaultParams() Params {
	return Params{Baselines: slices.Clone(defaultBaselines), Attempts: defaultAttempts, Temperature: defaultTemperature,
		Greedy: true, MaxNew: defaultMaxNew, SearchTrials: defaultSearchTrials, SearchCheck: defaultSearchCheck, Target: defaultTarget, Numeric: true, Seed: defaultSeed}
}

// Modes returns the decoding modes the policies are benched under.
func (p Params) Modes() []string {
	if len(p.Decoding) > 0 {
		return p.Decoding
	}
	return []string{DecodingOf(p.Constrained, p.GPULimits)}
}

// walkModes returns the modes random_walk walks under: the grammar modes
// of Modes (a walk without a grammar is the random baseline).
func (p Params) walkModes() []string {
	var out []string
	for _, m := range p.Modes() {
		if m != DecodeUnconstrained {
			out = append(out, m)
		}
	}
	return out
}

// Decode decodes a bench stage body.
func (Kind) Decode(body hcl.Body, dc *stages.DecodeContext) (stages.Stage, hcl.Diagnostics) {
	content, diags := body.Content(schema)
	if content == nil {
		return nil, diags
	}
	sp := Spec{Params: DefaultParams(), Threads: dragon.DefaultThreads, Batch: defaultBatch, Files: map[string]string{}}
	s := &Stage{shards: 1}
	addInput := func(name, attr string, expr hcl.Expression, upstream string) bool {
		v, d := expr.Value(dc.Eval)
		diags = append(diags, d...)
		if d.HasErrors() {
			return false
		}
		in := stages.Input{Name: name, Range: expr.Range()}
		if ref, ok := stages.AsArtifact(v); ok {
			in.Ref = &ref
		} else if !v.IsNull() && v.Type() == cty.String && v.AsString() != "" {
			in.Local = v.AsString()
		} else {
			diags = append(diags, diag("Invalid "+attr, fmt.Sprintf("%s must be an upstream output (%s) or a local path string.", attr, upstream), expr.Range()))
			return false
		}
		s.inputs = append(s.inputs, in)
		return true
	}
	for _, name := range inputNames {
		if a, ok := content.Attributes[name]; ok && addInput(name, name, a.Expr, upstreamOf[name]) {
			sp.Files[name] = inputDir + "/" + inputFiles[name]
		}
	}

	decodeAttr := func(name string, target any, check func() string) {
		a, ok := content.Attributes[name]
		if !ok {
			return
		}
		d := gohcl.DecodeExpression(a.Expr, dc.Eval, target)
		diags = append(diags, d...)
		if !d.HasErrors() && check != nil {
			if msg := check(); msg != "" {
				diags = append(diags, diag("Invalid "+name, msg, a.Expr.Range()))
			}
		}
	}
	decodeAttr("baselines", &sp.Baselines, func() string {
		// The canonical order, whatever the order written: the outputs
		// list the baselines in it.
		var msg string
		sp.Baselines, msg = canonical("baseline", sp.Baselines, AllBaselines)
		return msg
	})
	decodeAttr("attempts", &sp.Attempts, func() string {
		if sp.Attempts < 0 || sp.Attempts > 1000 {
			return fmt.Sprintf("attempts is %d; want 0 to 1000 samples at the temperature per task (besides the greedy one).", sp.Attempts)
		}
		return ""
	})
	decodeAttr("temperature", &sp.Temperature, func() string {
		if !(sp.Temperature > 0) || sp.Temperature > 100 {
			return fmt.Sprintf("temperature is %v; want a positive temperature for the sampled attempts (the greedy attempt is greedy = true).", sp.Temperature)
		}
		return ""
	})
	decodeAttr("top_k", &sp.TopK, func() string {
		if sp.TopK < 0 {
			return fmt.Sprintf("top_k is %d; want 0 (all tokens) or the number of most likely tokens kept.", sp.TopK)
		}
		return ""
	})
	decodeAttr("greedy", &sp.Greedy, nil)
	decodeAttr("max_new", &sp.MaxNew, func() string {
		if sp.MaxNew < 1 {
			return fmt.Sprintf("max_new is %d; want the most tokens generated per attempt (positive).", sp.MaxNew)
		}
		return ""
	})
	decodeAttr("constrained", &sp.Constrained, nil)
	decodeAttr("gpu_limits", &sp.GPULimits, func() string {
		if sp.GPULimits && !sp.Constrained {
			return sft.GPULimitsWithoutGrammar
		}
		return ""
	})
	var modes []string
	decodeAttr("decoding", &modes, func() string {
		if len(modes) == 0 {
			return fmt.Sprintf("decoding is empty; want some of %s.", strings.Join(AllDecodings, ", "))
		}
		for _, name := range []string{"constrained", "gpu_limits"} {
			if _, ok := content.Attributes[name]; ok {
				return fmt.Sprintf("decoding replaces constrained and gpu_limits; %s is set too (at %s). Keep one of the two spellings.", name, content.Attributes[name].Range)
			}
		}
		canon, msg := canonical("decoding mode", modes, AllDecodings)
		if msg != "" {
			return msg
		}
		// One mode is spelled as constrained and gpu_limits, so that
		// its key is that of the older spelling.
		if len(canon) == 1 {
			sp.Constrained, sp.GPULimits = decodingFlags(canon[0])
		} else {
			sp.Decoding = canon
		}
		return ""
	})
	decodeAttr("tasks", &sp.Tasks, func() string {
		if sp.Tasks < 0 {
			return fmt.Sprintf("tasks is %d; want the number of tasks per kind (the first of each file), or 0 for all.", sp.Tasks)
		}
		return ""
	})
	taskPick := TaskPickFirst
	decodeAttr("task_pick", &taskPick, func() string {
		if taskPick != TaskPickFirst && taskPick != TaskPickSpread {
			return fmt.Sprintf("task_pick is %q; want %q (the first tasks of each file) or %q (tasks evenly spaced through each file).", taskPick, TaskPickFirst, TaskPickSpread)
		}
		return ""
	})
	if taskPick == TaskPickSpread {
		sp.TaskPick = TaskPickSpread
	}
	decodeAttr("search_trials", &sp.SearchTrials, func() string {
		if sp.SearchTrials < 1 || sp.SearchTrials > 1_000_000 {
			return fmt.Sprintf("search_trials is %d; want the search baseline's measured candidates per task (1 to 1000000).", sp.SearchTrials)
		}
		return ""
	})
	searchCheck := defaultSearchCheck
	decodeAttr("search_check", &searchCheck, func() string {
		if searchCheck != SearchStatic && searchCheck != SearchNumeric {
			return fmt.Sprintf("search_check is %q; want %q (each candidate passes the static verdict, as harvest's search; the best is then judged with the numerical gate) or %q (each candidate also passes the numerical gate: a full-size CPU run per candidate).", searchCheck, SearchStatic, SearchNumeric)
		}
		return ""
	})
	sp.SearchCheck = ""
	if slices.Contains(sp.Baselines, BaselineSearch) {
		sp.SearchCheck = searchCheck
	}
	decodeAttr("target", &sp.Target, func() string {
		if !slices.Contains(Targets(), sp.Target) {
			return fmt.Sprintf("unknown target %q; want one of %s (cuda measures on a GPU; the others are models: their latencies are estimates).", sp.Target, strings.Join(Targets(), ", "))
		}
		return ""
	})
	format := string(sft.FormatScript)
	decodeAttr("format", &format, func() string {
		if f, err := sft.ParseFormat(format); err != nil || f != sft.Format(format) {
			return fmt.Sprintf("format is %q; want %q, %q or %q (the prompt format of the outside tasks: encode's format).", format, sft.FormatScript, sft.FormatDecisions, sft.FormatDecisionsInner)
		}
		return ""
	})
	if sft.Format(format).Streams() {
		sp.Format = format
	}
	decodeAttr("outside", &sp.Outside, func() string {
		if !slices.Contains(taskset.Names(), sp.Outside) {
			return fmt.Sprintf("outside is %q; want an outside task set: %s (kernels/taskset).", sp.Outside, strings.Join(taskset.Names(), ", "))
		}
		return ""
	})
	diags = append(diags, checkTaskInputs(content, sp, dc.DeclRange)...)
	decodeAttr("numeric", &sp.Numeric, nil)
	decodeAttr("seed", &sp.Seed, nil)
	decodeAttr("threads", &sp.Threads, func() string {
		if sp.Threads < 1 || sp.Threads > 256 {
			return fmt.Sprintf("threads is %d; want 1 to 256 (libtorch's threads and the judging workers; not in the key).", sp.Threads)
		}
		return ""
	})
	decodeAttr("batch", &sp.Batch, func() string {
		if sp.Batch < 1 || sp.Batch > 4096 {
			return fmt.Sprintf("batch is %d; want 1 to 4096 rows sampled together (memory and speed only; not in the key).", sp.Batch)
		}
		return ""
	})

	decodeAttr("shards", &s.shards, func() string {
		if s.shards < 1 || s.shards > 256 {
			return fmt.Sprintf("shards is %d; want 1 to 256 jobs run at once, each on the tasks of its workloads (not in the key: the outputs are the same for any number).", s.shards)
		}
		return ""
	})

	// Policy blocks, labelled with the policy's name.
	seen := map[string]*hcl.Block{}
	for _, b := range content.Blocks {
		name := b.Labels[0]
		rng := b.LabelRanges[0]
		switch {
		case !policyName.MatchString(name):
			diags = append(diags, diag("Invalid policy name", fmt.Sprintf("The policy name %q names the policy in the outputs; want a lower-case letter, then up to 31 lower-case letters, digits, _ or -.", name), rng))
			continue
		case seen[name] != nil:
			diags = append(diags, diag("Duplicate policy block", fmt.Sprintf("Policy %q is declared twice; the first is at %s.", name, seen[name].DefRange), rng))
			continue
		}
		seen[name] = b
		pc, d := b.Body.Content(policySchema)
		diags = append(diags, d...)
		if pc == nil || d.HasErrors() {
			continue
		}
		in := "policy." + name
		if addInput(in, "checkpoint", pc.Attributes["checkpoint"].Expr, upstreamOf["checkpoint"]) {
			sp.Policies = append(sp.Policies, Policy{Name: name, Checkpoint: inputDir + "/policy-" + name + ".ckpt"})
		}
	}
	if slices.Contains(sp.Baselines, BaselineRandomWalk) {
		rng := dc.DeclRange
		if a, ok := content.Attributes["baselines"]; ok {
			rng = a.Expr.Range()
		}
		if _, ok := content.Attributes["vocab"]; !ok {
			diags = append(diags, diag("Missing vocab", "The random_walk baseline writes scripts token by token in the policies' vocabulary: set vocab = stage.encode.out.vocab.", rng))
		}
		if len(sp.walkModes()) == 0 {
			diags = append(diags, diag("No grammar to walk", "The random_walk baseline walks under the script grammar, and the policies decode unconstrained here: set constrained = true, or a grammar mode in decoding (the random baseline is the unconstrained one: design-space samples without a mask).", rng))
		}
	}
	if len(sp.Policies) > 0 {
		for _, name := range sp.promptInputs() {
			if _, ok := content.Attributes[name]; !ok {
				diags = append(diags, diag("Missing "+name, fmt.Sprintf("The policies sample from the held-out prompts: set %s (%s).", name, upstreamOf[name]), content.Blocks[0].DefRange))
			}
		}
	}
	if slices.Contains(sp.Baselines, BaselineDatasetBest) && sp.Outside == "" {
		if _, ok := content.Attributes["db"]; !ok {
			rng := dc.DeclRange
			if a, ok := content.Attributes["baselines"]; ok {
				rng = a.Expr.Range()
			}
			diags = append(diags, diag("Missing db", "The dataset_best baseline takes the best valid script of each workload from harvest's tuning database: set db = stage.harvest.out.db, or leave dataset_best out of baselines.", rng))
		}
	}
	if !sp.Greedy && sp.Attempts == 0 && len(sp.Policies) > 0 {
		rng := dc.DeclRange
		if a, ok := content.Attributes["attempts"]; ok {
			rng = a.Expr.Range()
		}
		diags = append(diags, diag("No attempts", "attempts is 0 and greedy is false: the policies would sample nothing. Set attempts or greedy = true.", rng))
	}
	if len(sp.Policies) == 0 && len(sp.Baselines) == 0 {
		diags = append(diags, diag("Nothing to benchmark", "The stage has no policy block and no baseline: add a policy block or a baseline.", dc.DeclRange))
	}
	if diags.HasErrors() {
		return nil, diags
	}
	s.spec = sp

	// Params, in a fixed order: everything but threads, batch and
	// shards, which cannot change the outputs. The checkpoints and the other inputs
	// enter the key through their digests; the policies' names here.
	names := make([]string, len(sp.Policies))
	for i, p := range sp.Policies {
		names[i] = p.Name
	}
	for _, p := range []struct {
		name string
		v    any
	}{
		{"policies", names}, {"baselines", sp.Baselines}, {"attempts", sp.Attempts}, {"temperature", sp.Temperature},
		{"top_k", sp.TopK}, {"greedy", sp.Greedy}, {"max_new", sp.MaxNew}, {"constrained", sp.Constrained},
		{"gpu_limits", sp.GPULimits}, {"decoding", sp.Decoding}, {"tasks", sp.Tasks}, {"task_pick", sp.TaskPick}, {"search_trials", sp.SearchTrials}, {"search_check", sp.SearchCheck}, {"outside", sp.Outside}, {"format", sp.Format}, {"target", sp.Target}, {"numeric", sp.Numeric}, {"seed", sp.Seed},
	} {
		if p.name == "search_check" && sp.SearchCheck == "" || p.name == "outside" && sp.Outside == "" || p.name == "task_pick" && sp.TaskPick == "" || p.name == "format" && sp.Format == "" {
			continue // no search baseline, no outside set: the keys of benches without them stay as they were
		}
		if (p.name == "decoding") != (sp.Decoding != nil) && (p.name == "decoding" || p.name == "constrained" || p.name == "gpu_limits") {
			continue // one mode: in constrained and gpu_limits, as before decoding existed; several: in decoding
		}
		prm, err := stages.GoParam(p.name, p.v)
		if err != nil {
			return nil, append(diags, diag("Invalid "+p.name, err.Error()+".", dc.DeclRange))
		}
		s.params = append(s.params, prm)
	}
	return s, diags
}

// Params returns policies (their names), baselines, attempts, temperature,
// top_k, greedy, max_new, constrained, gpu_limits, decoding (only with more
// than one mode), tasks, search_trials, search_check (only with the search
// baseline), target, numeric and seed.
func (s *Stage) Params() []stages.Param { return s.params }

// Inputs returns the input files given and the policies' checkpoints
// (policy.NAME).
func (s *Stage) Inputs() []stages.Input { return s.inputs }

// Outputs returns attempts (attempts.jsonl), per_task (per_task.csv) and
// summary (summary.json).
func (s *Stage) Outputs() []stages.OutputDecl { return append([]stages.OutputDecl(nil), outputs...) }

// Spec returns the decoded spec.
func (s *Stage) Spec() Spec { return s.spec }

// Shards returns the number of shards (not in the key).
func (s *Stage) Shards() int { return s.shards }

// Run places the inputs and runs the benchmark: in dragonx-torch when there
// are policies to sample, in this process otherwise.
func (s *Stage) Run(ctx context.Context, rc *stages.RunContext) error {
	if s.spec.Target == TargetCUDA {
		// Before any work: the measured target needs a GPU.
		dev, err := cudabench.CheckGPU(ctx, cudabench.Options{})
		if err != nil {
			return fmt.Errorf("bench: target cuda: %w", err)
		}
		fmt.Fprintf(rc.Log, "target cuda: measuring on %s\n", dev)
	}
	var bin string
	if len(s.spec.Policies) > 0 {
		var err error
		if bin, err = torchbin.Find(); err != nil {
			return fmt.Errorf("bench: sampling the policies needs libtorch, which runs in %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(rc.Dir, inputDir), 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for _, in := range s.inputs {
		dst := ""
		if name, ok := strings.CutPrefix(in.Name, "policy."); ok {
			for _, p := range s.spec.Policies {
				if p.Name == name {
					dst = p.Checkpoint
				}
			}
		} else {
			dst = s.spec.Files[in.Name]
		}
		if err := rc.Materialize(ctx, in.Name, filepath.Join(rc.Dir, filepath.FromSlash(dst))); err != nil {
			return fmt.Errorf("bench: placing input %s: %w", in.Name, err)
		}
	}
	spec, err := json.Marshal(s.spec)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if s.shards > 1 {
		fmt.Fprintf(rc.Log, "bench: %d shards\n", s.shards)
		if err := runShards(ctx, s.spec, spec, rc.Dir, rc.StateDir, bin, nil, s.shards, rc.Progress, rc.Log); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		return nil
	}
	j := &job.Job{Kind: "bench", Version: Version, Spec: spec, Dir: rc.Dir, StateDir: rc.StateDir, Shard: 0, Shards: 1}
	if bin == "" {
		// Baselines only: no libtorch needed, run here.
		if err := runJob(ctx, j, &job.Env{Progress: rc.Progress, Log: rc.Log}, nil); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		return nil
	}
	if err := job.Run(ctx, j, job.Options{Binary: bin, Env: torchbin.Env(os.Getenv), TmpDir: rc.Tmp, Progress: rc.Progress, Log: rc.Log, Grace: interruptGrace}); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// Validate checks a spec as the job receives it (Decode produces valid
// ones; a hand-written job file may not be).
func (sp Spec) Validate() error {
	var errs []error
	if len(sp.Policies) > 0 {
		for _, name := range sp.promptInputs() {
			if sp.Files[name] == "" {
				errs = append(errs, fmt.Errorf("policies but no %s file", name))
			}
		}
	}
	for _, name := range heldoutTaskInputs {
		if (sp.Files[name] == "") == (sp.Outside == "") {
			errs = append(errs, fmt.Errorf("outside set %q and %s file %q: want exactly one of the two", sp.Outside, name, sp.Files[name]))
		}
	}
	if sp.Outside != "" && !slices.Contains(taskset.Names(), sp.Outside) {
		errs = append(errs, fmt.Errorf("unknown outside task set %q", sp.Outside))
	}
	if slices.Contains(sp.Baselines, BaselineDatasetBest) && sp.Files["db"] == "" {
		errs = append(errs, errors.New("the dataset_best baseline but no db"))
	}
	for _, b := range sp.Baselines {
		if !slices.Contains(AllBaselines, b) {
			errs = append(errs, fmt.Errorf("unknown baseline %q", b))
		}
	}
	names := map[string]bool{}
	for _, p := range sp.Policies {
		if !policyName.MatchString(p.Name) || names[p.Name] {
			errs = append(errs, fmt.Errorf("policy name %q is invalid or repeated", p.Name))
		}
		names[p.Name] = true
		if p.Checkpoint == "" {
			errs = append(errs, fmt.Errorf("policy %s has no checkpoint", p.Name))
		}
	}
	if sp.Attempts < 0 || (!sp.Greedy && sp.Attempts == 0 && len(sp.Policies) > 0) {
		errs = append(errs, fmt.Errorf("attempts %d (greedy %v) samples nothing", sp.Attempts, sp.Greedy))
	}
	if !(sp.Temperature > 0) {
		errs = append(errs, fmt.Errorf("temperature %v is not positive", sp.Temperature))
	}
	if sp.TopK < 0 || sp.MaxNew < 1 || sp.Tasks < 0 || sp.SearchTrials < 1 {
		errs = append(errs, fmt.Errorf("top_k %d, max_new %d, tasks %d or search_trials %d out of range", sp.TopK, sp.MaxNew, sp.Tasks, sp.SearchTrials))
	}
	if !slices.Contains(Targets(), sp.Target) {
		errs = append(errs, fmt.Errorf("unknown target %q", sp.Target))
	}
	if known := sp.SearchCheck == SearchStatic || sp.SearchCheck == SearchNumeric; !known && (sp.SearchCheck != "" || slices.Contains(sp.Baselines, BaselineSearch)) {
		errs = append(errs, fmt.Errorf("search_check %q with baselines %v", sp.SearchCheck, sp.Baselines))
	}
	if sp.GPULimits && !sp.Constrained {
		errs = append(errs, errors.New("gpu_limits without constrained"))
	}
	if sp.Decoding != nil {
		if canon, msg := canonical("decoding mode", sp.Decoding, AllDecodings); msg != "" || len(canon) < 2 || !slices.Equal(canon, sp.Decoding) || sp.Constrained || sp.GPULimits {
			errs = append(errs, fmt.Errorf("decoding %v with constrained %v and gpu_limits %v: want two or more modes of %v in that order, and neither flag", sp.Decoding, sp.Constrained, sp.GPULimits, AllDecodings))
		}
	}
	if slices.Contains(sp.Baselines, BaselineRandomWalk) && (sp.Files["vocab"] == "" || len(sp.walkModes()) == 0) {
		errs = append(errs, fmt.Errorf("the random_walk baseline needs a vocabulary and a grammar mode (decoding %v)", sp.Modes()))
	}
	if sp.Threads < 1 || sp.Batch < 1 {
		errs = append(errs, fmt.Errorf("threads %d or batch %d is not positive", sp.Threads, sp.Batch))
	}
	return errors.Join(errs...)
}

// canonical returns the items of list (each one of all, at most once) in
// all's order, or a diagnostic's detail naming the first bad item.
func canonical(what string, list, all []string) ([]string, string) {
	seen := map[string]bool{}
	for _, x := range list {
		if !slices.Contains(all, x) {
			return nil, fmt.Sprintf("unknown %s %q; want some of %s.", what, x, strings.Join(all, ", "))
		}
		if seen[x] {
			return nil, fmt.Sprintf("%s %q is listed twice.", what, x)
		}
		seen[x] = true
	}
	out := []string{}
	for _, x := range all {
		if seen[x] {
			out = append(out, x)
		}
	}
	return out, ""
}

// heldoutTaskInputs are the inputs that give the held-out tasks; an
// outside task set replaces them (and heldout.jsonl, and harvest's db).
var heldoutTaskInputs = []string{"construction_tasks", "refinement_prompts"}

// promptInputs are the inputs the policies' prompts come from: encode's
// heldout.jsonl and vocabulary, or for an outside set the vocabulary alone
// (the prompts are built here, as encode builds a construction task's).
func (p Params) promptInputs() []string {
	if p.Outside != "" {
		return []string{"vocab"}
	}
	return []string{"heldout", "vocab"}
}

// checkTaskInputs checks that the tasks come from harvest's test files or
// from an outside set, not both: with outside, the inputs of the held-out
// tasks (and dataset_best, which needs harvest's records of the workload)
// are refused rather than left unread.
func checkTaskInputs(content *hcl.BodyContent, sp Spec, decl hcl.Range) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if a, ok := content.Attributes["format"]; ok && sp.Outside == "" {
		diags = append(diags, diag("Unused format", "format is the prompt format of an outside set's tasks; the held-out tasks' format is read from heldout.jsonl: remove it, or set outside.", a.Expr.Range()))
	}
	if sp.Outside == "" {
		for _, name := range heldoutTaskInputs {
			if _, ok := content.Attributes[name]; !ok {
				diags = append(diags, diag("Missing "+name, fmt.Sprintf("The held-out tasks come from harvest's test files: set %s (%s), or outside = an outside task set (%s).", name, upstreamOf[name], strings.Join(taskset.Names(), ", ")), decl))
			}
		}
		return diags
	}
	rng := content.Attributes["outside"].Expr.Range()
	for _, name := range append(slices.Clone(heldoutTaskInputs), "heldout", "db") {
		if a, ok := content.Attributes[name]; ok {
			diags = append(diags, diag("Unused "+name, fmt.Sprintf("outside = %q (at %s) replaces the held-out tasks: %s would not be read; remove it.", sp.Outside, rng, name), a.Expr.Range()))
		}
	}
	if slices.Contains(sp.Baselines, BaselineDatasetBest) {
		if a, ok := content.Attributes["baselines"]; ok {
			rng = a.Expr.Range()
		}
		diags = append(diags, diag("No dataset_best on an outside set", "dataset_best takes harvest's best record of each task's workload; the outside tasks have none. Leave it out of baselines (the outside tasks' baselines: unscheduled, random, random_walk, search).", rng))
	}
	return diags
}
