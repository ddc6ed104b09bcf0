package sft

import (
	"context"
	"math"
	"slices"

	"dragonx/dragon"
	"dragonx/kernels/judge"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
)

// Metrics is metrics.json. Everything in it follows from the parameters and
// inputs, except Speed: measurements of this run (they differ between runs
// and machines; the determinism tests leave them out).
type Metrics struct {
	Examples   ExampleCounts     `json:"examples"`
	Training   TrainingFigures   `json:"training"`
	Validation ValidationFigures `json:"validation"`
	Heldout    HeldoutFigures    `json:"heldout"`
	Speed      Speed             `json:"speed"`
}

// ExampleCounts says what became of train.jsonl's records.
type ExampleCounts struct {
	Records         int `json:"records"`
	Train           int `json:"train"`
	Validation      int `json:"validation"`
	DroppedOverlong int `json:"dropped_overlong"`
	// Longest is the most tokens an example reads (the context that would
	// keep them all).
	Longest int `json:"longest"`
}

// TrainingFigures describe the whole training run.
type TrainingFigures struct {
	Steps  int   `json:"steps"`
	Tokens int64 `json:"tokens"`
	Params int64 `json:"params"`
	// MeanTokens is the mean length of a training example (tokens read).
	MeanTokens float64 `json:"mean_tokens"`
	// FLOPsPerToken is dragon.Config.TrainFLOPsPerToken at the mean length.
	FLOPsPerToken float64 `json:"flops_per_token"`
	FinalLoss     float64 `json:"final_loss"`
}

// ValidationFigures is the held-out loss on the validation examples (null
// without any).
type ValidationFigures struct {
	Examples int      `json:"examples"`
	Loss     *float64 `json:"loss"`
}

// Speed is measured, not computed: it differs between runs.
type Speed struct {
	Threads  int    `json:"threads"`
	CoreType string `json:"openblas_coretype"`
	// SgemmPeakGFLOPS is the fp32 matrix-product rate measured in the same
	// process (dragon.Runtime.SgemmPeak), MFU's denominator.
	SgemmPeakGFLOPS float64 `json:"sgemm_peak_gflops"`
	// Steps and Tokens were trained by this process (fewer than the
	// run's after a resume), in StepSeconds of training steps and
	// WallSeconds including validation and checkpoints.
	Steps       int     `json:"steps"`
	Tokens      int64   `json:"tokens"`
	StepSeconds float64 `json:"step_seconds"`
	WallSeconds float64 `json:"wall_seconds"`
	TokensPerS  float64 `json:"tokens_per_s"`
	StepsPerS   float64 `json:"steps_per_s"`
	// MFU is TokensPerS × FLOPsPerToken over the sgemm peak.
	MFU float64 `json:"mfu"`
	// SampleSeconds is the time of the held-out samples.
	SampleSeconds float64 `json:"sample_seconds"`
	SampledTokens int     `json:"sampled_tokens"`
}

func nullable(x float64) *float64 {
	if math.IsNaN(x) {
		return nil
	}
	return &x
}

// Count is a count and its share of the sampled tasks.
type Count struct {
	N    int     `json:"n"`
	Rate float64 `json:"rate"`
}

// TaskFigures are the judged figures of one kind of held-out task.
type TaskFigures struct {
	// Tasks were asked for, Sampled got a sample (a prompt that fills the
	// context gets none: SkippedLongPrompt).
	Tasks             int `json:"tasks"`
	Sampled           int `json:"sampled"`
	SkippedLongPrompt int `json:"skipped_long_prompt"`
	// Stopped samples ended with <eos> (the others hit max_new or the
	// context, and fail the decode phase).
	Stopped Count `json:"stopped"`
	// Rates are the shares of the sampled tasks that got through the
	// decode, parse, replay, static (verify) and, with eval.numeric, the
	// numeric phase of the judge.
	Rates map[string]float64 `json:"rates"`
	// Judged is kernels/judge's summary of the samples' judgements.
	Judged *judge.Summary `json:"judged"`
	// Speed compares the samples' latencies with their baselines (the
	// source script of a refinement prompt, the reference of a
	// construction task).
	Speed SpeedFigures `json:"speed"`
}

// SpeedFigures compare judged latencies with the tasks' baselines, where
// both come from the same latency source (a model's estimate is never
// compared with a measurement).
type SpeedFigures struct {
	// Baselines is the number of sampled tasks with a baseline, Compared
	// those whose sample got a latency from the baseline's source.
	Baselines int `json:"baselines"`
	Compared  int `json:"compared"`
	// Faster counts the compared samples faster than their baseline (rate
	// over Compared).
	Faster Count `json:"faster"`
	// GeomeanSpeedup is the geometric mean of baseline/latency over the
	// compared samples (null when none).
	GeomeanSpeedup *float64 `json:"geomean_speedup"`
}

// Baseline is what a sample's latency is compared with.
type Baseline struct {
	LatencyS float64 `json:"latency_s"`
	Source   string  `json:"latency_source"`
	// Speedup is baseline/latency when the sample got a latency from the
	// same source; null otherwise.
	Speedup *float64 `json:"speedup"`
}

// HeldoutFigures are the held-out sampling metrics.
type HeldoutFigures struct {
	// Constrained says the samples were drawn under their workload's
	// script grammar (eval.constrained).
	Constrained bool `json:"constrained"`
	// GPULimits says the grammar also kept them within the GPU's thread
	// limits (eval.gpu_limits); absent when it did not.
	GPULimits bool `json:"gpu_limits,omitempty"`
	// Phases are the judge's phases, in order.
	Phases       []verdict.Phase `json:"phases"`
	Construction TaskFigures     `json:"construction"`
	Refinement   TaskFigures     `json:"refinement"`
	All          TaskFigures     `json:"all"`
}

// SampleRecord is one line of samples.jsonl.
type SampleRecord struct {
	Task         string `json:"task"`
	Index        int    `json:"index"`
	Hash         string `json:"hash"`
	Family       string `json:"family"`
	PromptTokens int    `json:"prompt_tokens"`
	// Skipped says why there is no sample ("" when there is one).
	Skipped string `json:"skipped,omitempty"`
	// Tokens is the number of tokens generated, Stopped whether <eos>
	// ended them.
	Tokens  int  `json:"tokens"`
	Stopped bool `json:"stopped"`
	// Script is the text of the generated tokens before <eos> (also of a
	// sample that was cut; "" when they are not text: the judgement says
	// why). In decisions format it is the text of the script the stream
	// expands into ("" when it does not: the judgement says why).
	Script string `json:"script"`
	// Stream is a decisions-format sample's decision stream before <eos>
	// (Format.StreamText); absent in script format.
	Stream string `json:"stream,omitempty"`
	// SampleError is why sampling stopped early (a grammar that could not
	// be built or allowed nothing, non-finite logits); the tokens before
	// it are judged.
	SampleError string `json:"sample_error,omitempty"`
	// Judgement is the judge's result: the verdict, the tokens judged and
	// the script's text.
	Judgement *judge.Result `json:"judgement,omitempty"`
	// Baseline is the task's baseline latency, if it has one.
	Baseline *Baseline `json:"baseline,omitempty"`
}

// judge judges sample smp of held-out task h, written in format f (lg:
// the workload's grammar, which expands a decision stream), with j, and
// sets the record's sample fields and baseline.
func (s *SampleRecord) judge(ctx context.Context, j *judge.Judge, f Format, lg *LazyGrammar, voc *vocab.Vocab, h HeldoutRecord, smp dragon.Sample) error {
	r, err := f.Judge(ctx, j, lg, smp.Tokens)
	if err != nil {
		return err
	}
	s.Tokens, s.Stopped, s.Judgement = len(smp.Tokens), smp.Stopped, r
	if smp.Err != nil {
		s.SampleError = smp.Err.Error()
	}
	s.compare(h)
	if f.Streams() {
		s.Script, s.Stream = r.Script, f.StreamText(voc, smp.Tokens)
		return nil
	}
	ids := smp.Tokens
	if smp.Stopped {
		ids = ids[:len(ids)-1]
	}
	if text, err := voc.Decode(ids); err == nil {
		s.Script = text
	}
	return nil
}

// compare sets s.Baseline from the task's baseline and the judgement.
func (s *SampleRecord) compare(h HeldoutRecord) {
	lat, src, ok := h.baseline()
	if !ok {
		return
	}
	s.Baseline = &Baseline{LatencyS: lat, Source: src}
	if r := s.Judgement; r != nil && r.Verdict != nil && r.OK && r.LatencyS != nil && *r.LatencyS > 0 && r.LatencySource == src {
		x := lat / *r.LatencyS
		s.Baseline.Speedup = &x
	}
}

// rateNames are the TaskFigures.Rates keys and their phases.
var rateNames = []struct {
	name  string
	phase verdict.Phase
}{
	{"decode", judge.PhaseDecode}, {"parse", verdict.PhaseParse}, {"replay", verdict.PhaseReplay},
	{"static", verdict.PhaseVerify}, {"numeric", verdict.PhaseNumeric},
}

// summarize counts the samples per task kind.
func summarize(samples []SampleRecord, phases []verdict.Phase) HeldoutFigures {
	fig := func(keep func(SampleRecord) bool) TaskFigures {
		var f TaskFigures
		var results []*judge.Result
		stopped := 0
		logSum := 0.0
		for _, s := range samples {
			if !keep(s) {
				continue
			}
			f.Tasks++
			if s.Judgement == nil {
				f.SkippedLongPrompt++
				continue
			}
			f.Sampled++
			if s.Stopped {
				stopped++
			}
			results = append(results, s.Judgement)
			if b := s.Baseline; b != nil {
				f.Speed.Baselines++
				if b.Speedup != nil {
					f.Speed.Compared++
					logSum += math.Log(*b.Speedup)
					if *b.Speedup > 1 {
						f.Speed.Faster.N++
					}
				}
			}
		}
		if f.Speed.Compared > 0 {
			f.Speed.Faster.Rate = float64(f.Speed.Faster.N) / float64(f.Speed.Compared)
			g := math.Exp(logSum / float64(f.Speed.Compared))
			f.Speed.GeomeanSpeedup = &g
		}
		f.Stopped = Count{N: stopped}
		if f.Sampled > 0 {
			f.Stopped.Rate = float64(stopped) / float64(f.Sampled)
		}
		f.Judged = judge.Summarize(phases, results)
		f.Rates = map[string]float64{}
		for _, r := range rateNames {
			if slices.Contains(phases, r.phase) {
				f.Rates[r.name] = f.Judged.Rate(r.phase)
			}
		}
		return f
	}
	return HeldoutFigures{
		Phases:       phases,
		Construction: fig(func(s SampleRecord) bool { return s.Task == "construction" }),
		Refinement:   fig(func(s SampleRecord) bool { return s.Task == "refinement" }),
		All:          fig(func(SampleRecord) bool { return true }),
	}
}
