//go:build !torch

package dragon

import (
	"context"
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
