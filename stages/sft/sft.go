// Package sft is the `sft` stage kind: it trains the little dragon (package
// dragon) from scratch on the examples of the encode stage, writes the
// model, the loss curve and held-out metrics, and resumes after an
// interruption.
//
//	stage "sft" {
//	  kind    = "sft"
//	  train   = stage.encode.out.train
//	  heldout = stage.encode.out.heldout
//	  vocab   = stage.encode.out.vocab
//	  seed = 1  threads = 2  validation = 0.05  overlong = "drop"
//	  model     { layers = 4  width = 256  heads = 8  context = 1024  dropout = 0.1 }
//	  optimizer { steps = 2000  batch = 16  lr = 1e-3  min_lr = 1e-4  warmup = 100 }
//	  eval      { tasks = 20  max_new = 768  numeric = true  target = "h100-model"  constrained = false  gpu_limits = false }
//	}
//
// Training needs libtorch, which dragonx does not link: Run hands the work
// to dragonx-torch through package stages/job (the runner is in
// runner_torch.go). docs/pipeline.md describes the outputs.
package sft

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"

	"dragonx/dragon"
	"dragonx/internal/torchbin"
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/vocab"
	"dragonx/stages"
	"dragonx/stages/job"
)

// Version is the kind's version; bump it when the same parameters would give
// different outputs.
const Version = "3" // 2: GPU model version 2 (issue 28); 3: local buffers compacted per vthread, so the static verdict (512 KiB local) changes

// Kind is the sft stage kind.
type Kind struct{}

func init() { stages.Register(Kind{}) }

// Name returns "sft".
func (Kind) Name() string { return "sft" }

// Version returns the kind version.
func (Kind) Version() string { return Version }

// The input files, placed in the working directory under inputDir.
const (
	inputDir    = "in"
	trainFile   = "train.jsonl"
	heldoutFile = "heldout.jsonl"
	vocabFile   = "vocab.txt"
)

// The outputs.
var outputs = []stages.OutputDecl{
	{Name: "checkpoint", Path: "model.ckpt"},
	{Name: "loss", Path: "loss.csv"},
	{Name: "metrics", Path: "metrics.json"},
	{Name: "samples", Path: "samples.jsonl"},
}

// EvalSpec is the eval block.
type EvalSpec struct {
	// Tasks is how many held-out construction tasks, and as many
	// refinement prompts, get one greedy sample each.
	Tasks int `hcl:"tasks,optional" json:"tasks"`
	// MaxNew is the most tokens generated per sample.
	MaxNew int `hcl:"max_new,optional" json:"max_new"`
	// Numeric runs the numerical gate on the samples that pass the static
	// checks.
	Numeric bool `hcl:"numeric,optional" json:"numeric"`
	// Target is the latency target ("h100-model", "h200-model").
	Target string `hcl:"target,optional" json:"target"`
	// Constrained draws each greedy sample under its workload's script
	// grammar (kernels/grammar), as rl's training samples with
	// constrained = true. Left out of the key when false (omitempty), so
	// that the keys of experiments without it do not change.
	Constrained bool `hcl:"constrained,optional" json:"constrained,omitempty"`
	// GPULimits makes the grammar of constrained samples also keep them
	// within the GPU's thread limits (grammar.WithThreadLimits); it needs
	// constrained. Left out of the key when false.
	GPULimits bool `hcl:"gpu_limits,optional" json:"gpu_limits,omitempty"`
}

// Spec is everything the job needs: the decoded parameters and the names of
// the input files in the working directory. It is the job's spec (JSON).
type Spec struct {
	Model      dragon.Config      `json:"model"`
	Optimizer  dragon.TrainConfig `json:"optimizer"`
	Seed       int64              `json:"seed"`
	Threads    int                `json:"threads"`
	Validation float64            `json:"validation"`
	Overlong   string             `json:"overlong"`
	Eval       EvalSpec           `json:"eval"`
	// CheckpointEvery is how many steps pass between resume checkpoints
	// (not a parameter of the outputs).
	CheckpointEvery int `json:"checkpoint_every"`
	// Train, Heldout and Vocab are the input files, relative to the
	// job's directory.
	Train   string `json:"train"`
	Heldout string `json:"heldout"`
	Vocab   string `json:"vocab"`
}

// Defaults of the stage-level attributes and the eval block.
const (
	defaultSeed            = 1
	defaultValidation      = 0.05
	defaultCheckpointEvery = 100
	defaultTasks           = 20
	defaultMaxNew          = 768
	defaultTarget          = "h100-model"
)

// interruptGrace is how long an interrupted job gets to finish its step and
// save its state before it is killed. A step cannot be cut short, and on a
// loaded 2-core machine one step of a few-million parameter model at context
// 1024 was measured at 50-100 s; killed, the job loses the steps since its
// last checkpoint (checkpoint_every), not the run.
const interruptGrace = 3 * time.Minute

// Stage is a decoded sft stage.
type Stage struct {
	spec   Spec
	inputs []stages.Input
	params []stages.Param
}

var schema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "train", Required: true},
		{Name: "heldout", Required: true},
		{Name: "vocab", Required: true},
		{Name: "seed"},
		{Name: "threads"},
		{Name: "validation"},
		{Name: "overlong"},
		{Name: "checkpoint_every"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "model"}, {Type: "optimizer"}, {Type: "eval"}},
}

func diag(summary, detail string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
}

// Decode decodes an sft stage body.
func (Kind) Decode(body hcl.Body, dc *stages.DecodeContext) (stages.Stage, hcl.Diagnostics) {
	content, diags := body.Content(schema)
	if content == nil {
		return nil, diags
	}
	voc, err := vocab.Default()
	if err != nil {
		return nil, append(diags, diag("Vocabulary unavailable", err.Error(), dc.DeclRange))
	}
	sp := Spec{
		Model:           dragon.DefaultConfig(),
		Optimizer:       dragon.DefaultTrainConfig(),
		Seed:            defaultSeed,
		Threads:         dragon.DefaultThreads,
		Validation:      defaultValidation,
		Overlong:        string(dragon.OverlongDrop),
		Eval:            EvalSpec{Tasks: defaultTasks, MaxNew: defaultMaxNew, Numeric: true, Target: defaultTarget},
		CheckpointEvery: defaultCheckpointEvery,
		Train:           inputDir + "/" + trainFile,
		Heldout:         inputDir + "/" + heldoutFile,
		Vocab:           inputDir + "/" + vocabFile,
	}
	sp.Model.Vocab = voc.VocabSize() // so that the model block validates
	s := &Stage{}

	// Inputs: upstream outputs or local files.
	for _, name := range []string{"train", "heldout", "vocab"} {
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
			diags = append(diags, diag("Invalid "+name, fmt.Sprintf("%s must be an upstream output (stage.encode.out.%s) or a local path string.", name, name), a.Expr.Range()))
			continue
		}
		s.inputs = append(s.inputs, in)
	}

	// Scalars.
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
	decodeAttr("validation", &sp.Validation, func() string {
		if !(sp.Validation >= 0 && sp.Validation < 1) {
			return fmt.Sprintf("validation is %v; want a share in [0, 1): the part of the training examples, chosen by workload hash, held out for the validation loss.", sp.Validation)
		}
		return ""
	})
	decodeAttr("overlong", &sp.Overlong, func() string {
		if dragon.Overlong(sp.Overlong).Validate() != nil {
			return fmt.Sprintf("overlong is %q; want %q (skip and count examples longer than the context) or %q (fail naming the first).", sp.Overlong, dragon.OverlongDrop, dragon.OverlongError)
		}
		return ""
	})
	decodeAttr("checkpoint_every", &sp.CheckpointEvery, func() string {
		if sp.CheckpointEvery < 1 {
			return fmt.Sprintf("checkpoint_every is %d; want a positive number of steps between resume checkpoints.", sp.CheckpointEvery)
		}
		return ""
	})

	// Blocks, at most one of each.
	seen := map[string]*hcl.Block{}
	for _, b := range content.Blocks {
		if first, dup := seen[b.Type]; dup {
			diags = append(diags, diag("Duplicate "+b.Type+" block", fmt.Sprintf("An sft stage has at most one %s block; the first is at %s.", b.Type, first.DefRange), b.DefRange))
			continue
		}
		seen[b.Type] = b
		switch b.Type {
		case "model":
			diags = append(diags, decodeBlock(b, dc.Eval, &sp.Model, map[string]string{
				"vocab": "The vocabulary size is the vocabulary file's (the encode stage's vocab output); remove vocab from the model block.",
			}, func() error { return sp.Model.Validate() })...)
		case "optimizer":
			diags = append(diags, decodeBlock(b, dc.Eval, &sp.Optimizer, map[string]string{
				"seed": "The stage's seed attribute seeds the model, the data order and dropout; set seed on the stage, not in the optimizer block.",
			}, func() error { return sp.Optimizer.Validate() })...)
		case "eval":
			diags = append(diags, decodeBlock(b, dc.Eval, &sp.Eval, nil, func() error { return sp.Eval.validate() })...)
		}
	}
	sp.Model.Vocab = voc.VocabSize()
	sp.Optimizer.Seed = sp.Seed
	if diags.HasErrors() {
		return nil, diags
	}
	s.spec = sp

	// Params, in a fixed order. checkpoint_every is not one: it cannot
	// change the outputs. The inputs enter the key through their digests.
	model := sp.Model
	model.Vocab = 0 // the vocabulary file's; its digest is in the key
	for _, p := range []struct {
		name string
		v    any
	}{
		{"seed", sp.Seed}, {"threads", sp.Threads}, {"validation", sp.Validation}, {"overlong", sp.Overlong},
		{"model", model}, {"optimizer", sp.Optimizer}, {"eval", sp.Eval},
	} {
		prm, err := stages.GoParam(p.name, p.v)
		if err != nil {
			return nil, append(diags, diag("Invalid "+p.name, err.Error()+".", dc.DeclRange))
		}
		s.params = append(s.params, prm)
	}
	return s, diags
}

func (e EvalSpec) validate() error {
	var errs []error
	if e.Tasks < 0 {
		errs = append(errs, &dragon.FieldError{Field: "tasks", Problem: fmt.Sprintf("%d is negative", e.Tasks)})
	}
	if e.MaxNew < 1 {
		errs = append(errs, &dragon.FieldError{Field: "max_new", Problem: fmt.Sprintf("%d is not positive", e.MaxNew)})
	}
	if _, err := gpumodel.LookupDevice(e.Target); err != nil {
		errs = append(errs, &dragon.FieldError{Field: "target", Problem: err.Error()})
	}
	if e.GPULimits && !e.Constrained {
		errs = append(errs, &dragon.FieldError{Field: "gpu_limits", Problem: "true without constrained = true (the limits are kept by the script grammar)"})
	}
	return errors.Join(errs...)
}

// decodeBlock decodes a block into target (already holding the defaults),
// reports the forbidden attributes with their reasons, and turns validate's
// field errors into diagnostics on the attribute (or the block, for a
// default that an attribute makes invalid).
func decodeBlock(b *hcl.Block, ctx *hcl.EvalContext, target any, forbidden map[string]string, validate func() error) hcl.Diagnostics {
	var diags hcl.Diagnostics
	ranges := map[string]hcl.Range{}
	implied, _ := gohcl.ImpliedBodySchema(target)
	part, _, _ := b.Body.PartialContent(implied)
	if part != nil {
		for name, a := range part.Attributes {
			ranges[name] = a.NameRange
			if why, bad := forbidden[name]; bad {
				diags = append(diags, diag("Unsupported argument", fmt.Sprintf("%q is not allowed in the %s block. %s", name, b.Type, why), a.NameRange))
			}
		}
	}
	d := gohcl.DecodeBody(b.Body, ctx, target)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return diags
	}
	err := validate()
	if err == nil {
		return nil
	}
	var fieldErrs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		fieldErrs = j.Unwrap()
	} else {
		fieldErrs = []error{err}
	}
	for _, fe := range fieldErrs {
		var f *dragon.FieldError
		if !errors.As(fe, &f) {
			diags = append(diags, diag("Invalid "+b.Type+" block", fe.Error()+".", b.DefRange))
			continue
		}
		if _, bad := forbidden[f.Field]; bad {
			continue // reported above
		}
		rng, ok := ranges[f.Field]
		if !ok {
			rng = b.DefRange
		}
		diags = append(diags, diag("Invalid "+f.Field, fmt.Sprintf("%s.%s: %s.", b.Type, f.Field, f.Problem), rng))
	}
	return diags
}

// Params returns seed, threads, validation, overlong, model, optimizer and
// eval.
func (s *Stage) Params() []stages.Param { return s.params }

// Inputs returns train, heldout and vocab.
func (s *Stage) Inputs() []stages.Input { return s.inputs }

// Outputs returns checkpoint (model.ckpt), loss (loss.csv), metrics
// (metrics.json) and samples (samples.jsonl).
func (s *Stage) Outputs() []stages.OutputDecl { return append([]stages.OutputDecl(nil), outputs...) }

// Spec returns the decoded parameters.
func (s *Stage) Spec() Spec { return s.spec }

// Run places the inputs and runs the job in dragonx-torch.
func (s *Stage) Run(ctx context.Context, rc *stages.RunContext) error {
	bin, err := torchbin.Find()
	if err != nil {
		return fmt.Errorf("sft: training needs libtorch, which runs in %w", err)
	}
	if err := os.MkdirAll(filepath.Join(rc.Dir, inputDir), 0o755); err != nil {
		return fmt.Errorf("sft: %w", err)
	}
	for _, in := range s.inputs {
		dst := filepath.Join(rc.Dir, inputDir, map[string]string{"train": trainFile, "heldout": heldoutFile, "vocab": vocabFile}[in.Name])
		if err := rc.Materialize(ctx, in.Name, dst); err != nil {
			return fmt.Errorf("sft: placing input %s: %w", in.Name, err)
		}
	}
	spec, err := json.Marshal(s.spec)
	if err != nil {
		return fmt.Errorf("sft: %w", err)
	}
	j := &job.Job{Kind: "sft", Version: Version, Spec: spec, Dir: rc.Dir, StateDir: rc.StateDir, Shard: 0, Shards: 1}
	if err := job.Run(ctx, j, job.Options{Binary: bin, Env: torchbin.Env(os.Getenv), TmpDir: rc.Tmp, Progress: rc.Progress, Log: rc.Log, Grace: interruptGrace}); err != nil {
		return fmt.Errorf("sft: %w", err)
	}
	return nil
}

// Validate checks a spec as the job receives it (Decode produces valid
// ones; a hand-written or foreign job file may not be).
func (sp Spec) Validate() error {
	var errs []error
	for _, f := range []struct{ name, v string }{{"train", sp.Train}, {"heldout", sp.Heldout}, {"vocab", sp.Vocab}} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("no %s file", f.name))
		}
	}
	if sp.Threads < 1 {
		errs = append(errs, fmt.Errorf("threads %d is not positive", sp.Threads))
	}
	if !(sp.Validation >= 0 && sp.Validation < 1) {
		errs = append(errs, fmt.Errorf("validation %v is not in [0, 1)", sp.Validation))
	}
	if sp.CheckpointEvery < 1 {
		errs = append(errs, fmt.Errorf("checkpoint_every %d is not positive", sp.CheckpointEvery))
	}
	errs = append(errs, dragon.Overlong(sp.Overlong).Validate(), sp.Model.Validate(), sp.Optimizer.Validate(), sp.Eval.validate())
	return errors.Join(errs...)
}
