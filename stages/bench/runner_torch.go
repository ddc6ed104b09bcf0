//go:build torch

package bench

import (
	"context"
	"fmt"
	"os"

	"dragonx/dragon"
	"dragonx/kernels/vocab"
	"dragonx/stages/job"
)

func init() {
	job.Register("bench", job.Runner{Version: Version, Run: func(ctx context.Context, j *job.Job, env *job.Env) error {
		return runJob(ctx, j, env, newTorchLoader)
	}})
}

// torchLoader loads checkpoints into one libtorch runtime.
type torchLoader struct{ rt *dragon.Runtime }

func newTorchLoader(threads int, seed int64, logf func(string, ...any)) (Loader, error) {
	rt, err := dragon.NewRuntime(dragon.RuntimeOptions{Threads: threads, Seed: seed})
	if err != nil {
		return nil, err
	}
	info := rt.Info()
	logf("libtorch %s, %d threads, OPENBLAS_CORETYPE=%q", info.Libtorch, info.Threads, info.CoreType)
	return &torchLoader{rt: rt}, nil
}

func (l *torchLoader) Load(path string, voc *vocab.Vocab) (Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := l.rt.ReadCheckpoint(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("the checkpoint: %w", err)
	}
	if got := m.Tokenizer(); got != voc.Identity() {
		m.Close()
		return nil, fmt.Errorf("the checkpoint's tokenizer %s is not the vocabulary's %s", got, voc.Identity())
	}
	m.SetTraining(false) // no dropout
	return torchModel{m}, nil
}

func (l *torchLoader) Close() { l.rt.Close() }

// torchModel is a *dragon.Model as a Model.
type torchModel struct{ *dragon.Model }

func (m torchModel) Context() int { return m.Config().Context }
func (m torchModel) Close()       { m.Model.Close() }
