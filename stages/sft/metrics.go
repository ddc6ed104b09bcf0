package sft

import (
	"slices"

	"dragonx/kernels/judge"
	"dragonx/kernels/verdict"
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
	if x != x { // NaN
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
}

// HeldoutFigures are the held-out sampling metrics.
type HeldoutFigures struct {
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
	// why).
	Script string `json:"script"`
	// Judgement is the judge's result: the verdict, the tokens judged and
	// the script's text.
	Judgement *judge.Result `json:"judgement,omitempty"`
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
