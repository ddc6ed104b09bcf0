// Package encode is the `encode` stage kind: it turns the examples and
// held-out tasks of kernels/dataset (the harvest stage's files) into the
// language model's token streams, and fails unless every example round-trips
// byte for byte (docs/pipeline.md).
//
//	stage "encode" {
//	  kind              = "encode"
//	  construction      = stage.harvest.out.construction       # or a local path
//	  refinement        = stage.harvest.out.refinement
//	  test_construction = stage.harvest.out.test_construction
//	  test_refinement   = stage.harvest.out.test_refinement
//	  format            = "decisions"   # optional: "script" (the default), "decisions" or "decisions_inner"
//	  seed              = 1             # optional, decisions formats only: the grammar's seed (as the samplers')
//	}
//
// In "script" format a prompt holds the kernel text and a target is the
// script's tokens (kernels/encode.Prompt). In "decisions" format a prompt
// holds the spec and the blocks' iteration domains, a target is the
// script's decision stream (kernels/encode.DecisionsPrompt): the tokens
// the workload's grammar (kernels/grammar, built with seed) does not
// force, which Expand turns back into the script; every line carries
// "format": "decisions", and the stage checks that each stream expands to
// its script. "decisions_inner" is "decisions" with each tile's first
// factor written as the extent left inside it (kernels/grammar's Layout
// Inner). format and seed enter the key only in the decisions formats,
// so a "script" stage keeps its key and outputs.
//
// Outputs: train (train.jsonl: prompt and target ids of every training
// example), heldout (heldout.jsonl: the held-out tasks' prompts), vocab
// (vocab.txt: kernels/vocab's vocabulary), texts (texts.jsonl: the training
// examples as text) and report (roundtrip.json: counts, what was checked,
// token length distributions).
//
// For every example and task it checks, and fails naming the example
// (file:line) and the first differing byte otherwise: the kernel text
// rebuilds (kernels/encode.ParseKernel) a function with the structural hash
// of spec.Build() and is written back identically; every script decodes
// (kernels/encode.Decode, on the rebuilt function) to the example's trace
// JSON; the prompt text parses (kernels/encode.ParsePrompt) into the same
// parts; the token ids decode to the prompt text, and prompt + target ids
// are the ids of the whole text followed by <eos>.
package encode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"

	"dragonx/internal/progress"
	"dragonx/kernels/dataset"
	kencode "dragonx/kernels/encode"
	"dragonx/kernels/grammar"
	"dragonx/kernels/ir"
	"dragonx/kernels/vocab"
	"dragonx/stages"
)

// Version is the kind's version; bump it when the same inputs would give
// other outputs.
const Version = "3" // 3: a decision stream leaves out each perfect tile's last factor (kernels/grammar)

// Output files.
const (
	TrainFile   = "train.jsonl"
	HeldoutFile = "heldout.jsonl"
	VocabFile   = "vocab.txt"
	TextsFile   = "texts.jsonl"
	ReportFile  = "roundtrip.json"
)

// Formats of the examples (the stage's format parameter, and the lines'
// "format" field; a line without one is FormatScript).
const (
	// FormatScript: the prompt holds the kernel text, the target is the
	// script's tokens.
	FormatScript = "script"
	// FormatDecisions: the prompt holds the spec's numbers and the blocks'
	// iteration domains, the target is the script's decision stream
	// (kernels/grammar's Compact).
	FormatDecisions = "decisions"
	// FormatDecisionsInner is FormatDecisions with each tile's first
	// factor written as the extent left inside it (kernels/grammar's
	// Layout Inner): the values a good tiling keeps across shapes.
	FormatDecisionsInner = "decisions_inner"
)

// streamFormat reports whether examples in format f target decision
// streams, and in which layout.
func streamFormat(f string) (grammar.Layout, bool) {
	switch f {
	case FormatDecisions:
		return grammar.Outer, true
	case FormatDecisionsInner:
		return grammar.Inner, true
	}
	return 0, false
}

// Task names, as written in the outputs.
const (
	TaskConstruction = "construction"
	TaskRefinement   = "refinement"
)

// Kind is the encode stage kind.
type Kind struct{}

func init() { stages.Register(Kind{}) }

// Name returns "encode".
func (Kind) Name() string { return "encode" }

// Version returns the kind version.
func (Kind) Version() string { return Version }

// inputNames are the attributes, each one of kernels/dataset's files.
var inputNames = []string{"construction", "refinement", "test_construction", "test_refinement"}

// fileOf names the file an input is, as kernels/dataset writes it.
var fileOf = map[string]string{
	"construction":      dataset.ConstructionFile,
	"refinement":        dataset.RefinementFile,
	"test_construction": dataset.TestConstructionFile,
	"test_refinement":   dataset.TestRefinementFile,
}

var schema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "construction", Required: true},
		{Name: "refinement", Required: true},
		{Name: "test_construction", Required: true},
		{Name: "test_refinement", Required: true},
		{Name: "format"},
		{Name: "seed"},
	},
}

// DefaultSeed is the seed attribute's default: the seed the sft, rl and
// bench stages of experiments/paper.hcl sample with.
const DefaultSeed = 1

// Stage is a decoded encode stage.
type Stage struct {
	inputs []stages.Input
	params []stages.Param
	vocab  *vocab.Vocab
	format string
	seed   int64
}

// Decode decodes an encode stage body.
func (Kind) Decode(body hcl.Body, dc *stages.DecodeContext) (stages.Stage, hcl.Diagnostics) {
	content, diags := body.Content(schema)
	if diags.HasErrors() {
		return nil, diags
	}
	voc, err := vocab.Default()
	if err != nil {
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot load the vocabulary", Detail: err.Error(), Subject: dc.DeclRange.Ptr()})
	}
	s := &Stage{vocab: voc, format: FormatScript, seed: DefaultSeed}
	if a, ok := content.Attributes["format"]; ok {
		d := gohcl.DecodeExpression(a.Expr, dc.Eval, &s.format)
		diags = append(diags, d...)
		if _, stream := streamFormat(s.format); !d.HasErrors() && s.format != FormatScript && !stream {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid format",
				Detail:  fmt.Sprintf("format is %q; want %q (prompts of kernel text, targets of script tokens), %q (prompts of the spec's numbers, targets of the script's decisions) or %q (decisions with each tile's first factor written as the extent inside it; docs/encoding.md).", s.format, FormatScript, FormatDecisions, FormatDecisionsInner),
				Subject: a.Expr.Range().Ptr()})
		}
	}
	if a, ok := content.Attributes["seed"]; ok {
		diags = append(diags, gohcl.DecodeExpression(a.Expr, dc.Eval, &s.seed)...)
	}
	vals := map[string]cty.Value{}
	for _, name := range inputNames {
		a := content.Attributes[name]
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
			what := "null"
			if !v.IsNull() {
				what = v.Type().FriendlyName()
				if v.Type() == cty.String {
					what = "an empty string"
				}
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + name,
				Detail:  fmt.Sprintf("%s must be a stage output (stage.harvest.out.%s) or the path of a %s file relative to the experiment, not %s.", name, name, fileOf[name], what),
				Subject: a.Expr.Range().Ptr()})
			continue
		}
		vals[name] = v
		s.inputs = append(s.inputs, in)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	for _, name := range inputNames {
		prm, err := stages.CtyParam(name, vals[name])
		if err != nil {
			return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + name, Detail: err.Error() + ".", Subject: content.Attributes[name].Expr.Range().Ptr()})
		}
		s.params = append(s.params, prm)
	}
	// The vocabulary is part of the binary: its identity enters the key,
	// so that a new vocab.txt re-encodes.
	prm, err := stages.GoParam("vocab", voc.Identity())
	if err != nil {
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid vocabulary", Detail: err.Error(), Subject: dc.DeclRange.Ptr()})
	}
	s.params = append(s.params, prm)
	if _, stream := streamFormat(s.format); stream {
		for _, p := range []struct {
			name string
			v    any
		}{{"format", s.format}, {"seed", s.seed}} {
			prm, err := stages.GoParam(p.name, p.v)
			if err != nil {
				return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + p.name, Detail: err.Error(), Subject: dc.DeclRange.Ptr()})
			}
			s.params = append(s.params, prm)
		}
	}
	return s, diags
}

// Params returns the four inputs (by reference or local path) and the
// vocabulary's identity, then in "decisions" format the format and seed.
func (s *Stage) Params() []stages.Param { return s.params }

// Inputs returns the four dataset files.
func (s *Stage) Inputs() []stages.Input { return s.inputs }

// Outputs returns heldout, report, texts, train and vocab.
func (s *Stage) Outputs() []stages.OutputDecl {
	return []stages.OutputDecl{
		{Name: "heldout", Path: HeldoutFile},
		{Name: "report", Path: ReportFile},
		{Name: "texts", Path: TextsFile},
		{Name: "train", Path: TrainFile},
		{Name: "vocab", Path: VocabFile},
	}
}

// Run places the inputs, encodes and checks every example and task, and
// writes the outputs.
func (s *Stage) Run(ctx context.Context, rc *stages.RunContext) error {
	inDir, err := os.MkdirTemp(rc.Dir, "inputs-")
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	defer os.RemoveAll(inDir)
	files := map[string]string{}
	for _, in := range s.inputs {
		dst := filepath.Join(inDir, fileOf[in.Name])
		if err := rc.Materialize(ctx, in.Name, dst); err != nil {
			return fmt.Errorf("encode: placing input %s: %w", in.Name, err)
		}
		files[in.Name] = dst
	}
	rep := progress.Reporter(progress.Nop{})
	if rc.Progress != nil {
		rep = rc.Progress
	}
	log := rc.Log
	if log == nil {
		log = io.Discard
	}
	return Encode(ctx, Options{
		Construction: files["construction"], Refinement: files["refinement"],
		TestConstruction: files["test_construction"], TestRefinement: files["test_refinement"],
		Out: rc.Dir, Vocab: s.vocab, Progress: rep, Log: log, Format: s.format, Seed: s.seed,
	})
}

// Options are the files Encode reads and writes.
type Options struct {
	// Construction, Refinement, TestConstruction and TestRefinement are
	// kernels/dataset's four files.
	Construction, Refinement, TestConstruction, TestRefinement string
	// Out is the directory the outputs are written into.
	Out string
	// Vocab tokenizes the texts (nil: vocab.Default()).
	Vocab *vocab.Vocab
	// Workers is the number of goroutines (0: GOMAXPROCS); the outputs do
	// not depend on it.
	Workers int
	// Chunk is the number of examples read and encoded before their lines
	// are written (0: DefaultChunk): it bounds the memory of the examples
	// waiting in order. The outputs do not depend on it.
	Chunk int
	// Progress receives examples done out of the total.
	Progress progress.Reporter
	// Log receives a summary.
	Log io.Writer
	// Format is FormatScript (or empty), FormatDecisions or
	// FormatDecisionsInner.
	Format string
	// Seed seeds the grammar of each workload in FormatDecisions
	// (grammar.New); it must be the seed the samplers build their
	// grammars with.
	Seed int64
}

// job is one example or held-out task to encode and check.
type job struct {
	file string // the dataset file name, for messages
	line int
	task string // TaskConstruction or TaskRefinement
	test bool   // a held-out task
	// index is the position among the held-out tasks of its kind.
	index int
	w     *dataset.Workload
	// source is the existing script of a refinement, target the script to
	// write (nil for a held-out task).
	source, target *dataset.Script
	// held-out extras
	refLatency    *float64
	latencySource string
}

// result is a job's output lines and token counts.
type result struct {
	train, text, heldout []byte
	prompt, target       int // token counts (target includes <eos>)
	scripts              int // scripts decoded and compared
	err                  error
}

// DefaultChunk is Options.Chunk's default.
const DefaultChunk = 4096

// Encode reads the four files, encodes and checks every example and task on
// Workers goroutines, and writes the outputs into Out, in the input order.
// The files are read a chunk of examples at a time. It fails on the first
// chunk that holds an example that does not round-trip, naming the first
// such example in file order.
func Encode(ctx context.Context, o Options) error {
	if o.Progress == nil {
		o.Progress = progress.Nop{}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	switch o.Format {
	case "":
		o.Format = FormatScript
	case FormatScript, FormatDecisions, FormatDecisionsInner:
	default:
		return fmt.Errorf("encode: format %q: want %q, %q or %q", o.Format, FormatScript, FormatDecisions, FormatDecisionsInner)
	}
	if o.Vocab == nil {
		v, err := vocab.Default()
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		o.Vocab = v
	}
	e := &encoder{o: o, rep: newReport(o.Format), outs: map[string]*bufio.Writer{}}
	e.workers = o.Workers
	if e.workers <= 0 {
		e.workers = runtime.GOMAXPROCS(0)
	}
	e.chunk = o.Chunk
	if e.chunk <= 0 {
		e.chunk = DefaultChunk
	}
	total, err := countExamples(o.Construction, o.Refinement, o.TestConstruction, o.TestRefinement)
	if err != nil {
		return err
	}
	e.total = total
	var closers []*os.File
	defer func() {
		for _, f := range closers {
			f.Close()
		}
	}()
	for _, name := range []string{TrainFile, HeldoutFile, TextsFile} {
		f, err := os.Create(filepath.Join(o.Out, name))
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		closers = append(closers, f)
		e.outs[name] = bufio.NewWriterSize(f, 1<<20)
	}
	if err := e.readAll(ctx); err != nil {
		return err
	}
	if err := e.flush(ctx); err != nil {
		return err
	}
	for _, name := range []string{TrainFile, HeldoutFile, TextsFile} {
		if err := e.outs[name].Flush(); err != nil {
			return fmt.Errorf("encode: writing %s: %w", name, err)
		}
	}
	for _, f := range closers {
		if err := f.Close(); err != nil {
			return fmt.Errorf("encode: %w", err)
		}
	}
	closers = nil
	if err := writeVocab(filepath.Join(o.Out, VocabFile), o.Vocab); err != nil {
		return err
	}
	r := e.rep.finish()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.Out, ReportFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	fmt.Fprintf(o.Log, "encode: %d construction and %d refinement examples, %d + %d held-out tasks; all %d kernels, %d scripts and %d prompts round-trip; total tokens p50 %d, max %d; %d/%d/%d of %d examples fit in 512/1024/2048 tokens\n",
		r.Examples[TaskConstruction], r.Examples[TaskRefinement], r.HeldOut[TaskConstruction], r.HeldOut[TaskRefinement],
		r.Checked.Kernels, r.Checked.Scripts, r.Checked.Prompts, r.Tokens.Total.P50, r.Tokens.Total.Max,
		r.Fit["512"], r.Fit["1024"], r.Fit["2048"], r.Tokens.Total.N)
	return nil
}

// encoder is the state of one Encode.
type encoder struct {
	o       Options
	workers int
	chunk   int
	total   int64 // examples and tasks in the four files
	done    int64 // encoded and written
	batch   []job // read, not yet encoded
	rep     *reportBuilder
	outs    map[string]*bufio.Writer
}

// countExamples counts the non-blank lines of the files, for progress.
func countExamples(paths ...string) (int64, error) {
	var n int64
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return 0, fmt.Errorf("encode: %w", err)
		}
		br := bufio.NewReaderSize(f, 1<<16)
		blank := true
		for {
			b, err := br.ReadByte()
			if err != nil {
				if !blank {
					n++
				}
				f.Close()
				if !errors.Is(err, io.EOF) {
					return 0, fmt.Errorf("encode: reading %s: %w", p, err)
				}
				break
			}
			switch b {
			case '\n':
				if !blank {
					n++
				}
				blank = true
			case ' ', '\t', '\r':
			default:
				blank = false
			}
		}
	}
	return n, nil
}

// add queues a job, encoding the queue once it holds a chunk.
func (e *encoder) add(ctx context.Context, j job) error {
	e.batch = append(e.batch, j)
	if len(e.batch) < e.chunk {
		return nil
	}
	return e.flush(ctx)
}

// readAll reads the four files in output order, construction, refinement,
// test construction, test refinement, queueing their jobs.
func (e *encoder) readAll(ctx context.Context) error {
	scan := func(path, name string, each func(f *os.File) error) error {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		defer f.Close()
		if err := each(f); err != nil {
			var fe *failure
			if errors.As(err, &fe) || ctx.Err() != nil {
				return err
			}
			return fmt.Errorf("encode: %s: %w", name, err)
		}
		return nil
	}
	if err := scan(e.o.Construction, dataset.ConstructionFile, func(f *os.File) error {
		return dataset.Scan[dataset.Construction](f, func(en dataset.Entry[dataset.Construction]) error {
			return e.add(ctx, job{file: dataset.ConstructionFile, line: en.Line, task: TaskConstruction, w: &en.Value.Workload, target: &en.Value.Target})
		})
	}); err != nil {
		return err
	}
	if err := scan(e.o.Refinement, dataset.RefinementFile, func(f *os.File) error {
		return dataset.Scan[dataset.Refinement](f, func(en dataset.Entry[dataset.Refinement]) error {
			return e.add(ctx, job{file: dataset.RefinementFile, line: en.Line, task: TaskRefinement, w: &en.Value.Workload, source: &en.Value.Source, target: &en.Value.Target})
		})
	}); err != nil {
		return err
	}
	i := 0
	if err := scan(e.o.TestConstruction, dataset.TestConstructionFile, func(f *os.File) error {
		return dataset.Scan[dataset.ConstructionTask](f, func(en dataset.Entry[dataset.ConstructionTask]) error {
			i++
			return e.add(ctx, job{file: dataset.TestConstructionFile, line: en.Line, task: TaskConstruction, test: true, index: i - 1,
				w: &en.Value.Workload, refLatency: en.Value.ReferenceLatencyS, latencySource: en.Value.LatencySource})
		})
	}); err != nil {
		return err
	}
	i = 0
	return scan(e.o.TestRefinement, dataset.TestRefinementFile, func(f *os.File) error {
		return dataset.Scan[dataset.RefinementPrompt](f, func(en dataset.Entry[dataset.RefinementPrompt]) error {
			i++
			return e.add(ctx, job{file: dataset.TestRefinementFile, line: en.Line, task: TaskRefinement, test: true, index: i - 1,
				w: &en.Value.Workload, source: &en.Value.Source})
		})
	})
}

// failure is a round trip that failed; it stops the scan as it is.
type failure struct{ err error }

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// flush encodes the queued jobs on the workers and writes their lines in
// order.
func (e *encoder) flush(ctx context.Context) error {
	part := e.batch
	if len(part) == 0 {
		return nil
	}
	res := make([]result, len(part))
	// In decisions format each workload's grammar is built once per chunk
	// (a workload's examples are next to each other in its file) and
	// shared by its examples.
	layout, stream := streamFormat(e.o.Format)
	grammars := &grammarCache{voc: e.o.Vocab, seed: e.o.Seed, format: e.o.Format, layout: layout, m: map[string]*lazyGrammar{}}
	if !stream {
		grammars = nil
	}
	var wg sync.WaitGroup
	next := make(chan int)
	var mu sync.Mutex
	done := e.done
	for range min(e.workers, len(part)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				res[i] = encodeJob(ctx, e.o.Vocab, grammars, &part[i])
				mu.Lock()
				done++
				e.o.Progress.Report(progress.Event{Done: done, Total: e.total, Unit: "examples"})
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range part {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	failed := 0
	var first error
	for i := range res {
		if res[i].err != nil {
			if first == nil {
				first = res[i].err
			}
			failed++
		}
	}
	if first != nil {
		if failed > 1 {
			return &failure{fmt.Errorf("encode: %d of %d examples do not round-trip (of %d checked so far); the first: %w", failed, len(part), e.done+int64(len(part)), first)}
		}
		return &failure{fmt.Errorf("encode: %w", first)}
	}
	for i := range res {
		r, j := &res[i], &part[i]
		if j.test {
			e.outs[HeldoutFile].Write(r.heldout)
		} else {
			e.outs[TrainFile].Write(r.train)
			e.outs[TextsFile].Write(r.text)
		}
		e.rep.add(j, r)
	}
	e.done += int64(len(part))
	e.batch = e.batch[:0]
	clear(part) // the examples read are no longer needed
	return nil
}

// TrainLine is one line of train.jsonl.
type TrainLine struct {
	Task   string `json:"task"`
	Hash   string `json:"hash"`
	Family string `json:"family"`
	Prompt []int  `json:"prompt"`
	Target []int  `json:"target"`
	// Format is the examples' format: FormatDecisions, or empty for
	// FormatScript (the lines of a "script" encode carry no format).
	Format string `json:"format,omitempty"`
}

// TextLine is one line of texts.jsonl.
type TextLine struct {
	Task   string `json:"task"`
	Hash   string `json:"hash"`
	Prompt string `json:"prompt"`
	Target string `json:"target"`
}

// HeldoutLine is one line of heldout.jsonl.
type HeldoutLine struct {
	Task              string          `json:"task"`
	Index             int             `json:"index"`
	Workload          json.RawMessage `json:"workload"`
	Hash              string          `json:"hash"`
	Family            string          `json:"family"`
	Prompt            []int           `json:"prompt"`
	ReferenceLatencyS *float64        `json:"reference_latency_s,omitempty"`
	Source            *HeldoutSource  `json:"source,omitempty"`
	LatencySource     string          `json:"latency_source,omitempty"`
	// Format is the prompt's format, as TrainLine.Format.
	Format string `json:"format,omitempty"`
}

// HeldoutSource is the existing script of a held-out refinement task.
type HeldoutSource struct {
	Script        string  `json:"script"`
	LatencyS      float64 `json:"latency_s"`
	LatencySource string  `json:"latency_source"`
}

// grammarCache holds the grammars of the workloads of a chunk.
type grammarCache struct {
	voc    *vocab.Vocab
	seed   int64
	format string         // the examples' format
	layout grammar.Layout // its streams' layout
	mu     sync.Mutex
	m      map[string]*lazyGrammar // by workload hash
}

type lazyGrammar struct {
	once sync.Once
	g    *grammar.Grammar
	err  error
}

// get returns the plain grammar (no options: the streams do not depend on
// them) of w, f being its function, built on the first call.
func (c *grammarCache) get(ctx context.Context, w *dataset.Workload, f *ir.PrimFunc) (*grammar.Grammar, error) {
	c.mu.Lock()
	l := c.m[w.Hash]
	if l == nil {
		l = &lazyGrammar{}
		c.m[w.Hash] = l
	}
	c.mu.Unlock()
	l.once.Do(func() {
		l.g, l.err = grammar.New(ctx, f, c.voc, c.seed)
		if l.err != nil {
			l.err = fmt.Errorf("the workload's grammar: %w", l.err)
		}
	})
	return l.g, l.err
}

// encodeJob checks one example's round trips and writes its lines; with
// grammars, in decisions format.
func encodeJob(ctx context.Context, voc *vocab.Vocab, grammars *grammarCache, j *job) result {
	var r result
	var err error
	if grammars != nil {
		r, err = encodeDecisions(ctx, voc, grammars, j)
	} else {
		r, err = encodeJobErr(ctx, voc, j)
	}
	if err != nil {
		return result{err: fmt.Errorf("%s:%d (%s %s): %w", j.file, j.line, j.w.Family, short(j.w.Hash), err)}
	}
	return r
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// checkExample checks the example's kernel text and scripts (both formats
// do): the kernel text rebuilds the workload's function, which it returns,
// and every script decodes on it to its trace.
func checkExample(ctx context.Context, j *job) (*ir.PrimFunc, int, error) {
	w := j.w
	scripts := 0
	// The kernel text: it rebuilds the workload's function.
	built, err := w.Spec.Build()
	if err != nil {
		return nil, 0, fmt.Errorf("the workload does not build: %w", err)
	}
	want := ir.Hash(built)
	if h := fmt.Sprintf("%016x", want); h != w.StructHash {
		return nil, 0, fmt.Errorf("struct_hash %s is not the structural hash of the workload's function (%s)", w.StructHash, h)
	}
	f, err := kencode.ParseKernel([]byte(w.Kernel))
	if err != nil {
		return nil, 0, fmt.Errorf("the kernel text does not parse: %w", err)
	}
	if have := ir.Hash(f); have != want {
		return nil, 0, fmt.Errorf("the kernel text rebuilds a function of structural hash %016x, the workload's is %016x", have, want)
	}
	again, err := kencode.Kernel(f)
	if err != nil {
		return nil, 0, fmt.Errorf("the rebuilt function has no kernel text: %w", err)
	}
	if d := firstDiff([]byte(w.Kernel), again); d != "" {
		return nil, 0, fmt.Errorf("the kernel text is written back differently: %s", d)
	}
	// The scripts: each decodes, on the rebuilt function, to its trace.
	checkScript := func(what string, s *dataset.Script) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		tr, err := kencode.Decode(ctx, f, []byte(s.Script), kencode.Options{})
		if err != nil {
			return fmt.Errorf("the %s script does not decode: %w", what, err)
		}
		if d := firstDiff(s.Trace, []byte(tr.String())); d != "" {
			return fmt.Errorf("the %s script decodes to another trace than the example's: %s", what, d)
		}
		scripts++
		return nil
	}
	if j.source != nil {
		if err := checkScript("source", j.source); err != nil {
			return nil, 0, err
		}
	}
	if j.target != nil {
		if err := checkScript("target", j.target); err != nil {
			return nil, 0, err
		}
	}
	return f, scripts, nil
}

func encodeJobErr(ctx context.Context, voc *vocab.Vocab, j *job) (result, error) {
	var r result
	w := j.w
	var err error
	if _, r.scripts, err = checkExample(ctx, j); err != nil {
		return r, err
	}
	p := kencode.Prompt{Kernel: []byte(w.Kernel), Bucket: -1}
	if j.source != nil {
		b, err := kencode.LatencyBucket(j.source.LatencyS)
		if err != nil {
			return r, fmt.Errorf("the source script: %w", err)
		}
		p.Script, p.Bucket = []byte(j.source.Script), b
	}
	promptText, err := p.Format()
	if err != nil {
		return r, err
	}
	full := promptText
	if j.target != nil {
		p.Target = []byte(j.target.Script)
		if full, err = p.Format(); err != nil {
			return r, err
		}
		if !bytes.HasPrefix(full, promptText) || !bytes.Equal(full[len(promptText):], p.Target) {
			return r, errors.New("the prompt text is not a prefix of the example's text followed by the target")
		}
	}
	// The whole text parses back into the same parts.
	q, _, err := kencode.ParsePrompt(full)
	if err != nil {
		return r, fmt.Errorf("the prompt text does not parse: %w", err)
	}
	if !bytes.Equal(q.Kernel, p.Kernel) || !bytes.Equal(q.Script, p.Script) || q.Bucket != p.Bucket || !bytes.Equal(q.Target, p.Target) {
		return r, errors.New("the prompt text parses into other parts")
	}
	// Tokens: the text decodes back from its ids, and prompt + target
	// ids are the ids of the whole text.
	promptIDs, err := voc.Encode(string(promptText))
	if err != nil {
		return r, fmt.Errorf("the prompt text does not tokenize: %w", err)
	}
	if len(promptIDs) == 0 {
		return r, errors.New("the prompt has no tokens")
	}
	if err := checkTokens(voc, "prompt", promptText, promptIDs); err != nil {
		return r, err
	}
	r.prompt = len(promptIDs)
	if j.test {
		line := HeldoutLine{Task: j.task, Index: j.index, Hash: w.Hash, Family: w.Family, Prompt: promptIDs,
			ReferenceLatencyS: j.refLatency, LatencySource: j.latencySource}
		spec, err := w.Spec.MarshalJSON()
		if err != nil {
			return r, err
		}
		line.Workload = spec
		if j.source != nil {
			line.Source = &HeldoutSource{Script: j.source.Script, LatencyS: j.source.LatencyS, LatencySource: j.source.LatencySource}
		}
		if r.heldout, err = marshalLine(line); err != nil {
			return r, err
		}
		return r, nil
	}
	targetIDs, err := voc.Encode(string(p.Target))
	if err != nil {
		return r, fmt.Errorf("the target script does not tokenize: %w", err)
	}
	if err := checkTokens(voc, "target", p.Target, targetIDs); err != nil {
		return r, err
	}
	fullIDs, err := voc.Encode(string(full))
	if err != nil {
		return r, fmt.Errorf("the example's text does not tokenize: %w", err)
	}
	if err := checkTokens(voc, "example", full, fullIDs); err != nil {
		return r, err
	}
	eos, _ := voc.ID(vocab.EOS)
	targetIDs = append(targetIDs, eos)
	joined := append(append(make([]int, 0, len(promptIDs)+len(targetIDs)), promptIDs...), targetIDs[:len(targetIDs)-1]...)
	if !equalInts(joined, fullIDs) {
		return r, errors.New("the prompt's tokens followed by the target's are not the tokens of the whole text")
	}
	r.target = len(targetIDs)
	if r.train, err = marshalLine(TrainLine{Task: j.task, Hash: w.Hash, Family: w.Family, Prompt: promptIDs, Target: targetIDs}); err != nil {
		return r, err
	}
	if r.text, err = marshalLine(TextLine{Task: j.task, Hash: w.Hash, Prompt: string(promptText), Target: string(p.Target)}); err != nil {
		return r, err
	}
	return r, nil
}

// encodeDecisions encodes one example in decisions format: the checks of
// checkExample, then each script's decision stream, which must expand
// (grammar.Expand) to the script's tokens, and the prompt's ids, which
// must parse (kencode.ParseDecisionsPrompt) into the same parts.
func encodeDecisions(ctx context.Context, voc *vocab.Vocab, grammars *grammarCache, j *job) (result, error) {
	var r result
	w := j.w
	f, scripts, err := checkExample(ctx, j)
	if err != nil {
		return r, err
	}
	r.scripts = scripts
	g, err := grammars.get(ctx, w, f)
	if err != nil {
		return r, err
	}
	eos, _ := voc.ID(vocab.EOS)
	stream := func(what string, s *dataset.Script) ([]int, error) {
		ids, err := voc.Encode(s.Script)
		if err != nil {
			return nil, fmt.Errorf("the %s script does not tokenize: %w", what, err)
		}
		if err := checkTokens(voc, what+" script", []byte(s.Script), ids); err != nil {
			return nil, err
		}
		ids = append(ids, eos)
		st, err := g.CompactIn(grammars.layout, ids)
		if err != nil {
			return nil, fmt.Errorf("the %s script has no decision stream: %w", what, err)
		}
		back, err := g.ExpandIn(grammars.layout, st)
		if err != nil {
			return nil, fmt.Errorf("the %s script's decision stream does not expand: %w", what, err)
		}
		if !equalInts(back, ids) {
			return nil, fmt.Errorf("the %s script's decision stream expands to another script", what)
		}
		return st, nil
	}
	p := kencode.DecisionsPrompt{Spec: w.Spec, Func: f, Bucket: -1}
	if j.source != nil {
		src, err := stream("source", j.source)
		if err != nil {
			return r, err
		}
		if p.Bucket, err = kencode.LatencyBucket(j.source.LatencyS); err != nil {
			return r, fmt.Errorf("the source script: %w", err)
		}
		p.Source = src[:len(src)-1]
	}
	promptIDs, err := p.Format(voc)
	if err != nil {
		return r, err
	}
	promptText, err := p.Text(voc)
	if err != nil {
		return r, err
	}
	r.prompt = len(promptIDs)
	full := promptIDs
	if j.target != nil {
		if p.Target, err = stream("target", j.target); err != nil {
			return r, err
		}
		if full, err = p.Format(voc); err != nil {
			return r, err
		}
		if !equalInts(full[:len(promptIDs)], promptIDs) || !equalInts(full[len(promptIDs):], p.Target) {
			return r, errors.New("the prompt's ids followed by the target's are not the example's ids")
		}
	}
	// The ids parse back into the same parts.
	q, err := kencode.ParseDecisionsPrompt(voc, full)
	if err != nil {
		return r, fmt.Errorf("the prompt does not parse: %w", err)
	}
	if q.Bucket != p.Bucket || (q.Source == nil) != (p.Source == nil) || !equalInts(q.Source, p.Source) || !equalInts(q.Target, p.Target) ||
		q.Func == nil || ir.Hash(q.Func) != ir.Hash(f) {
		return r, errors.New("the prompt parses into other parts")
	}
	if j.test {
		line := HeldoutLine{Task: j.task, Index: j.index, Hash: w.Hash, Family: w.Family, Prompt: promptIDs,
			ReferenceLatencyS: j.refLatency, LatencySource: j.latencySource, Format: grammars.format}
		if line.Workload, err = w.Spec.MarshalJSON(); err != nil {
			return r, err
		}
		if j.source != nil {
			line.Source = &HeldoutSource{Script: j.source.Script, LatencyS: j.source.LatencyS, LatencySource: j.source.LatencySource}
		}
		r.heldout, err = marshalLine(line)
		return r, err
	}
	r.target = len(p.Target)
	targetText, err := kencode.StreamText(voc, p.Target[:len(p.Target)-1])
	if err != nil {
		return r, err
	}
	if r.train, err = marshalLine(TrainLine{Task: j.task, Hash: w.Hash, Family: w.Family, Prompt: promptIDs, Target: p.Target, Format: grammars.format}); err != nil {
		return r, err
	}
	if r.text, err = marshalLine(TextLine{Task: j.task, Hash: w.Hash, Prompt: promptText, Target: targetText}); err != nil {
		return r, err
	}
	return r, nil
}

// checkTokens decodes ids and compares them with text.
func checkTokens(voc *vocab.Vocab, what string, text []byte, ids []int) error {
	back, err := voc.Decode(ids)
	if err != nil {
		return fmt.Errorf("the %s tokens do not decode: %w", what, err)
	}
	if d := firstDiff(text, []byte(back)); d != "" {
		return fmt.Errorf("the %s text decodes from its tokens differently: %s", what, d)
	}
	return nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// firstDiff returns "" when want and have are equal, else where they first
// differ and a little of each around it.
func firstDiff(want, have []byte) string {
	n := min(len(want), len(have))
	i := 0
	for i < n && want[i] == have[i] {
		i++
	}
	if i == n && len(want) == len(have) {
		return ""
	}
	around := func(b []byte) string {
		lo, hi := max(0, i-20), min(len(b), i+20)
		return fmt.Sprintf("%q", b[lo:hi])
	}
	return fmt.Sprintf("first difference at byte %d (of %d and %d): the example has %s, the round trip %s", i, len(want), len(have), around(want), around(have))
}

func marshalLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding a line: %w", err)
	}
	return buf.Bytes(), nil
}

// writeVocab writes the vocabulary in kernels/vocab's format and checks
// that it reads back with the same identity.
func writeVocab(path string, voc *vocab.Vocab) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, t := range voc.Tokens() {
		if err := enc.Encode(t); err != nil {
			return fmt.Errorf("encode: writing the vocabulary: %w", err)
		}
	}
	back, err := vocab.Parse(buf.Bytes())
	if err != nil {
		return fmt.Errorf("encode: the written vocabulary does not read back: %w", err)
	}
	if back.Identity() != voc.Identity() {
		return fmt.Errorf("encode: the written vocabulary has identity %s, not %s", back.Identity(), voc.Identity())
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return nil
}

// Report is roundtrip.json.
type Report struct {
	// Format is the examples' format; absent for FormatScript.
	Format string `json:"format,omitempty"`
	// Examples and HeldOut count the training examples and held-out tasks
	// by task.
	Examples map[string]int `json:"examples"`
	HeldOut  map[string]int `json:"held_out"`
	// Checked counts what round-tripped: kernel texts (one per example and
	// task), scripts (decoded to their trace), prompt texts (parsed and
	// tokenized back).
	Checked struct {
		Kernels int `json:"kernels"`
		Scripts int `json:"scripts"`
		Prompts int `json:"prompts"`
	} `json:"checked"`
	// Tokens are the length distributions of the training examples
	// (prompt; target with its <eos>; total) and of the held-out prompts.
	Tokens struct {
		Prompt        Dist `json:"prompt"`
		Target        Dist `json:"target"`
		Total         Dist `json:"total"`
		HeldoutPrompt Dist `json:"heldout_prompt"`
	} `json:"tokens"`
	// Fit counts the training examples whose total fits in a context of
	// 512, 1024 and 2048 tokens.
	Fit map[string]int `json:"fit"`
}

// Dist is a length distribution (nearest rank percentiles).
type Dist struct {
	N    int     `json:"n"`
	Min  int     `json:"min"`
	P50  int     `json:"p50"`
	P90  int     `json:"p90"`
	P99  int     `json:"p99"`
	Max  int     `json:"max"`
	Mean float64 `json:"mean"`
}

// Contexts are the context sizes Report.Fit counts against.
var Contexts = []int{512, 1024, 2048}

type reportBuilder struct {
	r                              Report
	prompt, target, total, heldout []int
}

func newReport(format string) *reportBuilder {
	b := &reportBuilder{}
	if _, stream := streamFormat(format); stream {
		b.r.Format = format
	}
	b.r.Examples = map[string]int{TaskConstruction: 0, TaskRefinement: 0}
	b.r.HeldOut = map[string]int{TaskConstruction: 0, TaskRefinement: 0}
	b.r.Fit = map[string]int{}
	for _, c := range Contexts {
		b.r.Fit[fmt.Sprint(c)] = 0
	}
	return b
}

func (b *reportBuilder) add(j *job, r *result) {
	b.r.Checked.Kernels++
	b.r.Checked.Scripts += r.scripts
	b.r.Checked.Prompts++
	if j.test {
		b.r.HeldOut[j.task]++
		b.heldout = append(b.heldout, r.prompt)
		return
	}
	b.r.Examples[j.task]++
	b.prompt = append(b.prompt, r.prompt)
	b.target = append(b.target, r.target)
	t := r.prompt + r.target
	b.total = append(b.total, t)
	for _, c := range Contexts {
		if t <= c {
			b.r.Fit[fmt.Sprint(c)]++
		}
	}
}

func (b *reportBuilder) finish() *Report {
	b.r.Tokens.Prompt = dist(b.prompt)
	b.r.Tokens.Target = dist(b.target)
	b.r.Tokens.Total = dist(b.total)
	b.r.Tokens.HeldoutPrompt = dist(b.heldout)
	return &b.r
}

func dist(xs []int) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	s := append([]int(nil), xs...)
	sort.Ints(s)
	at := func(q float64) int {
		i := int(math.Ceil(q*float64(len(s)))) - 1 // nearest rank
		return s[max(0, min(len(s)-1, i))]
	}
	sum := 0
	for _, x := range s {
		sum += x
	}
	return Dist{N: len(s), Min: s[0], P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: s[len(s)-1], Mean: float64(sum) / float64(len(s))}
}
