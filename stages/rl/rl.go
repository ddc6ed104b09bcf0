package rl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"

	"dragonx/dragon"
	"dragonx/dragon/grpo"
	"dragonx/internal/torchbin"
	"dragonx/stages"
	"dragonx/stages/job"
	"dragonx/stages/sft"
)

// The kind's HCL:
//
//	stage "rl" {
//	  kind         = "rl"
//	  checkpoint   = stage.sft.out.checkpoint
//	  train        = stage.encode.out.train          # the prompts RL trains on
//	  construction = stage.harvest.out.construction  # their workloads and scripts
//	  refinement   = stage.harvest.out.refinement
//	  heldout      = stage.encode.out.heldout        # evaluation only
//	  vocab        = stage.encode.out.vocab
//	  seed = 1  threads = 2  constrained = false  gpu_limits = false  construction_share = 0.5
//	  grammar_only_share = 0   # with gpu_limits: the share of prompts sampled under the grammar alone
//	  grpo   { steps = 200  prompts = 4  group = 8  mu = 1  epsilon = 0.2  beta = 0.04
//	           temperature = 1  max_new = 768  lr = 2e-5 }
//	  reward { gate = "numeric"  bonus = "log_speedup"  baseline = "prompt"  target = "h100-model" }
//	  eval   { tasks = 20  max_new = 768  numeric = true  target = "h100-model"  constrained = false  gpu_limits = false }
//	}

// Version is the kind's version; bump it when the same parameters would give
// different outputs.
const Version = "3" // 2: GPU model version 2 (issue 28); full_vocab, free_samples, construction_baseline (issue 27); 3: local buffers compacted per vthread (static verdict)

// Kind is the rl stage kind.
type Kind struct{}

func init() { stages.Register(Kind{}) }

// Name returns "rl".
func (Kind) Name() string { return "rl" }

// Version returns the kind version.
func (Kind) Version() string { return Version }

// The input files, placed in the working directory under inputDir.
const inputDir = "in"

var inputFiles = map[string]string{
	"checkpoint": "model.ckpt", "train": "train.jsonl", "construction": "construction.jsonl",
	"refinement": "refinement.jsonl", "heldout": "heldout.jsonl", "vocab": "vocab.txt",
}

var inputNames = []string{"checkpoint", "train", "construction", "refinement", "heldout", "vocab"}

// The outputs.
var outputs = []stages.OutputDecl{
	{Name: "checkpoint", Path: "model.ckpt"},
	{Name: "curves", Path: "curves.csv"},
	{Name: "samples", Path: "samples.jsonl"},
	{Name: "metrics", Path: "metrics.json"},
	{Name: "eval_samples", Path: "eval_samples.jsonl"},
}

// GRPOSpec is the grpo block: grpo.Config's fields and the optimizer's.
type GRPOSpec struct {
	Steps       int     `hcl:"steps,optional" json:"steps"`
	Prompts     int     `hcl:"prompts,optional" json:"prompts"`
	Group       int     `hcl:"group,optional" json:"group"`
	Mu          int     `hcl:"mu,optional" json:"mu"`
	Epsilon     float64 `hcl:"epsilon,optional" json:"epsilon"`
	Beta        float64 `hcl:"beta,optional" json:"beta"`
	Temperature float64 `hcl:"temperature,optional" json:"temperature"`
	TopK        int     `hcl:"top_k,optional" json:"top_k"`
	MaxNew      int     `hcl:"max_new,optional" json:"max_new"`
	// FullVocab: the updates' log-probs over the whole vocabulary, not
	// renormalised over the tokens the grammar allowed (grpo.Config).
	FullVocab bool `hcl:"full_vocab,optional" json:"full_vocab,omitempty"`
	// FreeSamples of each group are sampled without the grammar.
	FreeSamples int `hcl:"free_samples,optional" json:"free_samples,omitempty"`
	// MaskMass weighs the term that keeps the unmasked policy within what
	// the grammar allowed each sample (grpo.Config.MaskMass); 0: none.
	MaskMass float64 `hcl:"mask_mass,optional" json:"mask_mass,omitempty"`
	// Batch is the completions per scoring pass (memory, not results).
	Batch       int     `hcl:"batch,optional" json:"batch"`
	LR          float64 `hcl:"lr,optional" json:"lr"`
	MinLR       float64 `hcl:"min_lr,optional" json:"min_lr"`
	Warmup      int     `hcl:"warmup,optional" json:"warmup"`
	WeightDecay float64 `hcl:"weight_decay,optional" json:"weight_decay"`
	Beta1       float64 `hcl:"beta1,optional" json:"beta1"`
	Beta2       float64 `hcl:"beta2,optional" json:"beta2"`
	Eps         float64 `hcl:"eps,optional" json:"eps"`
	Clip        float64 `hcl:"clip,optional" json:"clip"`
}

// defaultSteps is the grpo block's default number of steps.
const defaultSteps = 200

// defaultGRPO is grpo.DefaultConfig as a block, max_new 768.
func defaultGRPO() GRPOSpec {
	c := grpo.DefaultConfig()
	return GRPOSpec{Steps: defaultSteps, Prompts: c.PromptsPerStep, Group: c.Group, Mu: c.Mu, Epsilon: c.Epsilon, Beta: c.Beta,
		Temperature: c.Temperature, TopK: c.TopK, MaxNew: 768, Batch: c.Batch,
		LR: c.AdamW.LR, MinLR: c.AdamW.MinLR, Warmup: c.AdamW.Warmup, WeightDecay: c.AdamW.WeightDecay,
		Beta1: c.AdamW.Beta1, Beta2: c.AdamW.Beta2, Eps: c.AdamW.Eps, Clip: c.AdamW.Clip}
}

// Config returns the trainer's configuration: samples stop at <eos>; the
// learning rate warms up over warmup updates, then stays at lr, or with
// min_lr > 0 follows a cosine to min_lr over the run's steps × mu updates.
func (g GRPOSpec) Config(seed int64) grpo.Config {
	decay := 0
	if g.MinLR > 0 {
		decay = g.Steps * g.Mu
	}
	return grpo.Config{
		Steps: g.Steps, PromptsPerStep: g.Prompts, Group: g.Group, Mu: g.Mu, Epsilon: g.Epsilon, Beta: g.Beta,
		Temperature: g.Temperature, TopK: g.TopK, MaxNew: g.MaxNew, Stop: []int{eosID}, Batch: g.Batch,
		FullVocab: g.FullVocab, FreeSamples: g.FreeSamples, MaskMass: g.MaskMass,
		AdamW: dragon.AdamWConfig{LR: g.LR, MinLR: g.MinLR, Warmup: g.Warmup, Steps: decay, WeightDecay: g.WeightDecay,
			Beta1: g.Beta1, Beta2: g.Beta2, Eps: g.Eps, Clip: g.Clip},
		Seed: seed,
	}
}

// eosID is <eos>, always id 1 in kernels/vocab.
const eosID = 1

// validate reports the block's problems as field errors (attribute names).
func (g GRPOSpec) validate() error {
	var errs []error
	fe := func(ok bool, field, format string, args ...any) {
		if !ok {
			errs = append(errs, &dragon.FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
		}
	}
	fe(g.Steps > 0, "steps", "%d is not positive", g.Steps)
	fe(g.Prompts > 0, "prompts", "%d is not positive", g.Prompts)
	fe(g.Group > 1, "group", "%d: a group needs at least 2 samples (the advantage is relative to the group)", g.Group)
	fe(g.Mu > 0, "mu", "%d is not positive", g.Mu)
	fe(g.Epsilon > 0 && g.Epsilon < 1, "epsilon", "%v is not in (0, 1)", g.Epsilon)
	fe(g.Beta >= 0, "beta", "%v is negative", g.Beta)
	fe(g.Temperature > 0, "temperature", "%v is not positive (GRPO samples)", g.Temperature)
	fe(g.TopK >= 0, "top_k", "%d is negative", g.TopK)
	fe(g.MaxNew > 0, "max_new", "%d is not positive", g.MaxNew)
	fe(g.Batch >= 0, "batch", "%d is negative", g.Batch)
	fe(g.FreeSamples >= 0 && g.FreeSamples < g.Group, "free_samples", "%d is not in [0, group %d): a group needs a constrained sample", g.FreeSamples, g.Group)
	fe(g.MaskMass >= 0 && !math.IsInf(g.MaskMass, 0), "mask_mass", "%v is not a weight (0 or more)", g.MaskMass)
	fe(g.MaskMass == 0 || !g.FullVocab, "mask_mass", "%v with full_vocab: those log-probs are not renormalised over the grammar's tokens, so there is no mask to keep within", g.MaskMass)
	if err := g.Config(1).AdamW.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return g.Config(1).Validate() // anything left
}

// Spec is everything the job needs: the decoded parameters and the names of
// the input files in the working directory. It is the job's spec (JSON).
type Spec struct {
	GRPO   GRPOSpec   `json:"grpo"`
	Reward RewardSpec `json:"reward"`
	// Constrained samples under the script grammar (kernels/grammar) of
	// each task's workload.
	Constrained bool `json:"constrained"`
	// GPULimits makes that grammar also keep the samples within the GPU's
	// thread limits (grammar.WithThreadLimits); it needs Constrained.
	GPULimits bool `json:"gpu_limits,omitempty"`
	// GrammarOnlyShare is, with GPULimits, the share of each task kind's
	// prompts sampled under the script grammar alone (prompts): the
	// policy then learns the thread limits from its own mistakes there,
	// and what the limits leave to it (shared memory) under them.
	GrammarOnlyShare float64 `json:"grammar_only_share,omitempty"`
	// ConstructionShare is the share of construction tasks among the
	// prompts (MixTasks).
	ConstructionShare float64 `json:"construction_share"`
	// RFT, when set, is a round of rejection-sampling fine-tuning before
	// GRPO (RFTSpec).
	RFT     *RFTSpec     `json:"rft,omitempty"`
	Seed    int64        `json:"seed"`
	Threads int          `json:"threads"`
	Eval    sft.EvalSpec `json:"eval"`
	// CheckpointEvery is how many steps pass between resume checkpoints
	// (not a parameter of the outputs).
	CheckpointEvery int `json:"checkpoint_every"`
	// Files are the input files by input name, relative to the job's
	// directory.
	Files map[string]string `json:"files"`
}

// Defaults of the stage-level attributes.
const (
	defaultSeed            = 1
	defaultShare           = 0.5
	defaultCheckpointEvery = 10
)

// interruptGrace is how long an interrupted job gets to finish its step and
// save its state (a step samples, judges and updates: tens of seconds on
// a loaded 2-core machine; killed, the job loses the steps since its last
// checkpoint).
const interruptGrace = 3 * time.Minute

// Stage is a decoded rl stage.
type Stage struct {
	spec   Spec
	inputs []stages.Input
	params []stages.Param
}

var schema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "checkpoint", Required: true},
		{Name: "train", Required: true},
		{Name: "construction", Required: true},
		{Name: "refinement", Required: true},
		{Name: "heldout", Required: true},
		{Name: "vocab", Required: true},
		{Name: "seed"},
		{Name: "threads"},
		{Name: "constrained"},
		{Name: "gpu_limits"},
		{Name: "grammar_only_share"},
		{Name: "construction_share"},
		{Name: "checkpoint_every"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "rft"}, {Type: "grpo"}, {Type: "reward"}, {Type: "eval"}},
}

// Decode decodes an rl stage body.
func (Kind) Decode(body hcl.Body, dc *stages.DecodeContext) (stages.Stage, hcl.Diagnostics) {
	content, diags := body.Content(schema)
	if content == nil {
		return nil, diags
	}
	sp := Spec{
		GRPO: defaultGRPO(), Reward: DefaultReward(), ConstructionShare: defaultShare,
		Seed: defaultSeed, Threads: dragon.DefaultThreads, Eval: sft.DefaultEval(), CheckpointEvery: defaultCheckpointEvery,
		Files: map[string]string{},
	}
	for name, file := range inputFiles {
		sp.Files[name] = inputDir + "/" + file
	}
	s := &Stage{}
	for _, name := range inputNames {
		a, ok := content.Attributes[name]
		if !ok {
			continue
		}
		v, d := a.Expr.Value(dc.Eval)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		in := stages.Input{Name: name, Range: a.Expr.Range()}
		if ref, ok := stages.AsArtifact(v); ok {
			in.Ref = &ref
		} else if !v.IsNull() && v.Type() == cty.String && v.AsString() != "" {
			in.Local = v.AsString()
		} else {
			diags = append(diags, diag("Invalid "+name, fmt.Sprintf("%s must be an upstream output (%s) or a local path string.", name, upstreamOf[name]), a.Expr.Range()))
			continue
		}
		s.inputs = append(s.inputs, in)
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
	decodeAttr("seed", &sp.Seed, nil)
	decodeAttr("threads", &sp.Threads, func() string {
		if sp.Threads < 1 || sp.Threads > 256 {
			return fmt.Sprintf("threads is %d; want 1 to 256 (libtorch's intra-op threads; results can differ in the last bits between thread counts, so it is part of the key).", sp.Threads)
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
	decodeAttr("grammar_only_share", &sp.GrammarOnlyShare, func() string {
		if !(sp.GrammarOnlyShare >= 0 && sp.GrammarOnlyShare <= 1) {
			return fmt.Sprintf("grammar_only_share is %v; want the share of prompts sampled under the script grammar alone, in [0, 1].", sp.GrammarOnlyShare)
		}
		if sp.GrammarOnlyShare > 0 && !sp.GPULimits {
			return "grammar_only_share needs gpu_limits = true: without the thread limits every prompt samples under the script grammar alone."
		}
		return ""
	})
	decodeAttr("construction_share", &sp.ConstructionShare, func() string {
		if !(sp.ConstructionShare >= 0 && sp.ConstructionShare <= 1) {
			return fmt.Sprintf("construction_share is %v; want the share of construction tasks among the prompts, in [0, 1] (the rest are refinement prompts).", sp.ConstructionShare)
		}
		return ""
	})
	decodeAttr("checkpoint_every", &sp.CheckpointEvery, func() string {
		if sp.CheckpointEvery < 1 {
			return fmt.Sprintf("checkpoint_every is %d; want a positive number of steps between resume checkpoints.", sp.CheckpointEvery)
		}
		return ""
	})

	seen := map[string]*hcl.Block{}
	for _, b := range content.Blocks {
		if first, dup := seen[b.Type]; dup {
			diags = append(diags, diag("Duplicate "+b.Type+" block", fmt.Sprintf("An rl stage has at most one %s block; the first is at %s.", b.Type, first.DefRange), b.DefRange))
			continue
		}
		seen[b.Type] = b
		switch b.Type {
		case "rft":
			r := defaultRFT()
			diags = append(diags, sft.DecodeBlock(b, dc.Eval, &r, nil, func() error { return r.validate(sp.Constrained, sp.GPULimits) })...)
			sp.RFT = &r
		case "grpo":
			diags = append(diags, sft.DecodeBlock(b, dc.Eval, &sp.GRPO, nil, func() error { return sp.GRPO.validate() })...)
		case "reward":
			r, d := decodeReward(b, dc.Eval)
			diags = append(diags, d...)
			sp.Reward = r
		case "eval":
			diags = append(diags, sft.DecodeBlock(b, dc.Eval, &sp.Eval, nil, func() error { return sp.Eval.Validate() })...)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	s.spec = sp

	// Params, in a fixed order. checkpoint_every is not one: it cannot
	// change the outputs. The inputs enter the key through their digests.
	// gpu_limits, grammar_only_share and rft are params only when set, so
	// that the keys of stages without them do not change.
	type param struct {
		name string
		v    any
	}
	params := []param{
		{"seed", sp.Seed}, {"threads", sp.Threads}, {"constrained", sp.Constrained}, {"construction_share", sp.ConstructionShare},
		{"grpo", sp.GRPO}, {"reward", sp.Reward}, {"eval", sp.Eval},
	}
	if sp.GPULimits {
		params = append(params, param{"gpu_limits", true})
	}
	if sp.GrammarOnlyShare > 0 {
		params = append(params, param{"grammar_only_share", sp.GrammarOnlyShare})
	}
	if sp.RFT != nil {
		params = append(params, param{"rft", *sp.RFT})
	}
	for _, p := range params {
		prm, err := stages.GoParam(p.name, p.v)
		if err != nil {
			return nil, append(diags, diag("Invalid "+p.name, err.Error()+".", dc.DeclRange))
		}
		s.params = append(s.params, prm)
	}
	return s, diags
}

// upstreamOf names the usual upstream output of each input.
var upstreamOf = map[string]string{
	"checkpoint": "stage.sft.out.checkpoint", "train": "stage.encode.out.train",
	"construction": "stage.harvest.out.construction", "refinement": "stage.harvest.out.refinement",
	"heldout": "stage.encode.out.heldout", "vocab": "stage.encode.out.vocab",
}

// Params returns seed, threads, constrained, construction_share, grpo,
// reward and eval, gpu_limits when it is true, grammar_only_share when it
// is above 0 and rft when the block is there (so that the keys of stages
// without them do not change).
func (s *Stage) Params() []stages.Param { return s.params }

// Inputs returns checkpoint, train, construction, refinement, heldout and
// vocab.
func (s *Stage) Inputs() []stages.Input { return s.inputs }

// Outputs returns checkpoint (model.ckpt), curves (curves.csv), samples
// (samples.jsonl), metrics (metrics.json) and eval_samples
// (eval_samples.jsonl).
func (s *Stage) Outputs() []stages.OutputDecl { return append([]stages.OutputDecl(nil), outputs...) }

// Spec returns the decoded parameters.
func (s *Stage) Spec() Spec { return s.spec }

// Run places the inputs and runs the job in dragonx-torch.
func (s *Stage) Run(ctx context.Context, rc *stages.RunContext) error {
	bin, err := torchbin.Find()
	if err != nil {
		return fmt.Errorf("rl: training needs libtorch, which runs in %w", err)
	}
	if err := os.MkdirAll(filepath.Join(rc.Dir, inputDir), 0o755); err != nil {
		return fmt.Errorf("rl: %w", err)
	}
	for _, in := range s.inputs {
		if err := rc.Materialize(ctx, in.Name, filepath.Join(rc.Dir, filepath.FromSlash(s.spec.Files[in.Name]))); err != nil {
			return fmt.Errorf("rl: placing input %s: %w", in.Name, err)
		}
	}
	spec, err := json.Marshal(s.spec)
	if err != nil {
		return fmt.Errorf("rl: %w", err)
	}
	j := &job.Job{Kind: "rl", Version: Version, Spec: spec, Dir: rc.Dir, StateDir: rc.StateDir, Shard: 0, Shards: 1}
	if err := job.Run(ctx, j, job.Options{Binary: bin, Env: torchbin.Env(os.Getenv), TmpDir: rc.Tmp, Progress: rc.Progress, Log: rc.Log, Grace: interruptGrace}); err != nil {
		return fmt.Errorf("rl: %w", err)
	}
	return nil
}

// Validate checks a spec as the job receives it.
func (sp Spec) Validate() error {
	var errs []error
	for _, name := range inputNames {
		if sp.Files[name] == "" {
			errs = append(errs, fmt.Errorf("no %s file", name))
		}
	}
	if sp.Threads < 1 {
		errs = append(errs, fmt.Errorf("threads %d is not positive", sp.Threads))
	}
	if !(sp.ConstructionShare >= 0 && sp.ConstructionShare <= 1) {
		errs = append(errs, fmt.Errorf("construction_share %v is not in [0, 1]", sp.ConstructionShare))
	}
	if sp.CheckpointEvery < 1 {
		errs = append(errs, fmt.Errorf("checkpoint_every %d is not positive", sp.CheckpointEvery))
	}
	errs = append(errs, sp.GRPO.validate(), sp.Reward.Validate(), sp.Eval.Validate())
	if sp.RFT != nil {
		errs = append(errs, sp.RFT.validate(sp.Constrained, sp.GPULimits))
	}
	return errors.Join(errs...)
}
