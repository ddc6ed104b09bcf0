//go:build !torch

package dragon

import (
	"context"
	"encoding/json"
	"io"

	"dragonx/internal/progress"
)

// Runtime owns the torch thread. In this build (without the torch tag) it
// cannot be created: NewRuntime returns ErrNoTorch.
type Runtime struct{}

// NewRuntime returns ErrNoTorch: this binary was built without libtorch.
func NewRuntime(RuntimeOptions) (*Runtime, error) { return nil, ErrNoTorch }

// Close does nothing.
func (r *Runtime) Close() error { return nil }

// Info returns the zero RuntimeInfo.
func (r *Runtime) Info() RuntimeInfo { return RuntimeInfo{} }

// NewModel returns ErrNoTorch.
func (r *Runtime) NewModel(Config, int64) (*Model, error) { return nil, ErrNoTorch }

// ReadCheckpoint returns ErrNoTorch.
func (r *Runtime) ReadCheckpoint(io.Reader) (*Model, error) { return nil, ErrNoTorch }

// Model is a GPT; it cannot exist without libtorch.
type Model struct{}

// Config returns the zero Config.
func (m *Model) Config() Config { return Config{} }

// Close does nothing.
func (m *Model) Close() error { return nil }

// Tokenizer returns "".
func (m *Model) Tokenizer() string { return "" }

// SetTokenizer does nothing.
func (m *Model) SetTokenizer(string) {}

// Logits returns ErrNoTorch.
func (m *Model) Logits([]int) ([][]float32, error) { return nil, ErrNoTorch }

// WriteCheckpoint returns ErrNoTorch.
func (m *Model) WriteCheckpoint(io.Writer) error { return ErrNoTorch }

// Sample returns ErrNoTorch.
func (m *Model) Sample(context.Context, [][]int, SampleOptions) ([]Sample, error) {
	return nil, ErrNoTorch
}

// Trainer trains a Model; it cannot exist without libtorch.
type Trainer struct{}

// NewTrainer returns ErrNoTorch.
func NewTrainer(*Model, TrainConfig, []Example, []Example) (*Trainer, error) {
	return nil, ErrNoTorch
}

// ResumeTrainer returns ErrNoTorch.
func (r *Runtime) ResumeTrainer(io.Reader, []Example, []Example) (*Trainer, error) {
	return nil, ErrNoTorch
}

// Model returns nil.
func (t *Trainer) Model() *Model { return nil }

// Step returns 0.
func (t *Trainer) Step() int { return 0 }

// TrainStep returns ErrNoTorch.
func (t *Trainer) TrainStep(context.Context) (StepStats, error) { return StepStats{}, ErrNoTorch }

// Eval returns ErrNoTorch.
func (t *Trainer) Eval(context.Context) (float64, error) { return 0, ErrNoTorch }

// Run returns ErrNoTorch.
func (t *Trainer) Run(context.Context, progress.Reporter, io.Writer) (RunSummary, error) {
	return RunSummary{}, ErrNoTorch
}

// WriteCheckpoint returns ErrNoTorch.
func (t *Trainer) WriteCheckpoint(io.Writer) error { return ErrNoTorch }

// Close does nothing.
func (t *Trainer) Close() error { return nil }

// Bench returns ErrNoTorch.
func Bench(context.Context, BenchOptions, progress.Reporter) (*BenchReport, error) {
	return nil, ErrNoTorch
}

// SampleRows returns ErrNoTorch.
func (m *Model) SampleRows(context.Context, []SampleRow, SampleOptions) ([]Sample, error) {
	return nil, ErrNoTorch
}

// SetTraining does nothing.
func (m *Model) SetTraining(bool) {}

// Training returns false.
func (m *Model) Training() bool { return false }

// Frozen returns false.
func (m *Model) Frozen() bool { return false }

// Freeze returns ErrNoTorch.
func (m *Model) Freeze() error { return ErrNoTorch }

// Clone returns ErrNoTorch.
func (m *Model) Clone() (*Model, error) { return nil, ErrNoTorch }

// Scores holds scored log-probabilities; it cannot exist without libtorch.
type Scores struct {
	LogProbs [][]float64
}

// Score returns ErrNoTorch.
func (m *Model) Score(context.Context, []Completion, ScoreOptions) (*Scores, error) {
	return nil, ErrNoTorch
}

// ScoreNoGrad returns ErrNoTorch.
func (m *Model) ScoreNoGrad(context.Context, []Completion, ScoreOptions) ([][]float64, error) {
	return nil, ErrNoTorch
}

// Backward returns ErrNoTorch.
func (s *Scores) Backward([][]float64) error { return ErrNoTorch }

// Release does nothing.
func (s *Scores) Release() error { return nil }

// Optimizer is AdamW over a model's parameters; it cannot exist without
// libtorch.
type Optimizer struct{}

// NewOptimizer returns ErrNoTorch.
func NewOptimizer(*Model, AdamWConfig) (*Optimizer, error) { return nil, ErrNoTorch }

// ResumeOptimizer returns ErrNoTorch.
func (r *Runtime) ResumeOptimizer(io.Reader) (*Optimizer, json.RawMessage, error) {
	return nil, nil, ErrNoTorch
}

// Config returns the zero AdamWConfig.
func (o *Optimizer) Config() AdamWConfig { return AdamWConfig{} }

// Steps returns 0.
func (o *Optimizer) Steps() int { return 0 }

// Model returns nil.
func (o *Optimizer) Model() *Model { return nil }

// Close does nothing.
func (o *Optimizer) Close() error { return nil }

// Step returns ErrNoTorch.
func (o *Optimizer) Step() (OptimStep, error) { return OptimStep{}, ErrNoTorch }

// ZeroGrad returns ErrNoTorch.
func (o *Optimizer) ZeroGrad() error { return ErrNoTorch }

// Minimize returns ErrNoTorch.
func (o *Optimizer) Minimize(context.Context, []Completion, ScoreOptions, LossFunc) (Minimized, error) {
	return Minimized{}, ErrNoTorch
}

// WriteCheckpoint returns ErrNoTorch.
func (o *Optimizer) WriteCheckpoint(io.Writer, json.RawMessage) error { return ErrNoTorch }
