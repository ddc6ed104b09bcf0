package dragon

import "time"

// StepStats describes one optimizer step.
type StepStats struct {
	// Step is the number of steps done after this one.
	Step int
	// LR is the learning rate the step used.
	LR float64
	// Loss is the mean cross-entropy per target token of the step's
	// micro-batches (before the update).
	Loss float64
	// GradNorm is the global gradient norm before clipping.
	GradNorm float64
	// Tokens counts the (unpadded) input tokens and Targets the tokens
	// trained on.
	Tokens, Targets int
	// Elapsed is the step's wall time.
	Elapsed time.Duration
}

// RunSummary describes a finished Trainer.Run.
type RunSummary struct {
	// Steps is the trainer's step count at the end (the whole run's, when
	// it was resumed).
	Steps int
	// Loss is the last step's loss and EvalLoss the last held-out loss
	// (NaN without held-out examples).
	Loss, EvalLoss float64
	// Tokens counts the input tokens this Run trained on, and Elapsed its
	// wall time.
	Tokens  int64
	Elapsed time.Duration
}

// TokensPerSecond is the Run's training throughput.
func (s RunSummary) TokensPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Tokens) / s.Elapsed.Seconds()
}

// OptimStep describes one Optimizer.Step.
type OptimStep struct {
	// Step is the number of steps done after this one.
	Step int
	// LR is the learning rate the step used.
	LR float64
	// GradNorm is the global gradient norm before clipping.
	GradNorm float64
}

// Minimized describes one Optimizer.Minimize call.
type Minimized struct {
	OptimStep
	// Loss is the loss before the update.
	Loss float64
	// LogProbs are the scored log-probabilities the loss was computed from.
	LogProbs [][]float64
}
