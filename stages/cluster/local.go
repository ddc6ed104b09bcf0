package cluster

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// LocalConfig configures the local executor.
type LocalConfig struct {
	// Dir is the job's work directory.
	Dir string
	// Parallelism is how many tasks run at once; 0 means the number of CPUs.
	Parallelism int
	// MaxAttempts is how many times a shard runs before the job fails; 0
	// means DefaultMaxAttempts.
	MaxAttempts int
}

// Local runs the tasks as child processes of this one, through the same
// wrapper (RunTask) a cluster node runs.
type Local struct{ cfg LocalConfig }

// NewLocal returns a local executor.
func NewLocal(cfg LocalConfig) *Local {
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = runtime.NumCPU()
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	return &Local{cfg: cfg}
}

// Name returns "local".
func (*Local) Name() string { return "local" }

// Dir returns the work directory.
func (l *Local) Dir() string { return l.cfg.Dir }

// Run runs the job's shards, at most Parallelism at once.
func (l *Local) Run(ctx context.Context, job *Job) (*Outcome, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := &localBackend{
		dir: l.cfg.Dir, ctx: ctx, cancel: cancel,
		sem:     make(chan struct{}, l.cfg.Parallelism),
		state:   map[int]int{},
		lastErr: map[int]error{},
	}
	d := &driver{dir: l.cfg.Dir, b: b, maxAttempts: l.cfg.MaxAttempts, poll: 20 * time.Millisecond}
	return d.run(ctx, job)
}

const (
	localPending = 1
	localRunning = 2
)

type localBackend struct {
	dir    string
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	state   map[int]int // shard -> localPending or localRunning; absent when ended
	lastErr map[int]error
}

func (b *localBackend) submit(_ context.Context, shards []int) error {
	b.mu.Lock()
	for _, i := range shards {
		b.state[i] = localPending
	}
	b.mu.Unlock()
	for _, i := range shards {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			select {
			case b.sem <- struct{}{}:
			case <-b.ctx.Done():
				b.end(i, b.ctx.Err())
				return
			}
			defer func() { <-b.sem }()
			b.mu.Lock()
			b.state[i] = localRunning
			b.mu.Unlock()
			_, err := RunTask(b.ctx, b.dir, i)
			b.end(i, err)
		}()
	}
	return nil
}

func (b *localBackend) end(i int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.state, i)
	if err != nil {
		b.lastErr[i] = err
	} else {
		delete(b.lastErr, i)
	}
}

func (b *localBackend) live(context.Context) (map[int]bool, map[int]bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pending, running := map[int]bool{}, map[int]bool{}
	for i, s := range b.state {
		if s == localPending {
			pending[i] = true
		} else {
			running[i] = true
		}
	}
	return pending, running, nil
}

func (b *localBackend) lostReason(i int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.lastErr[i]; err != nil {
		return fmt.Sprintf("the wrapper said: %v", err)
	}
	return ""
}

func (b *localBackend) stop() error {
	b.cancel()
	b.wg.Wait()
	return nil
}
