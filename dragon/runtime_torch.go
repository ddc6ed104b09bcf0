//go:build torch

package dragon

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"

	"dragonx/internal/torchrt"
)

// Runtime owns the torch thread: one goroutine locked to one OS thread, on
// which every libtorch call of its models, trainers and samplers runs.
// libtorch keeps its last error, autograd mode and OpenMP thread count per
// thread, so calls from arbitrary goroutines (which Go moves between threads)
// would lose errors and settings. Methods may be called from any goroutine;
// they queue their work for the thread and wait for it, one at a time.
//
// A process normally has one Runtime. Close it after closing its models.
type Runtime struct {
	calls chan call
	quit  chan struct{}
	done  chan struct{}
	info  RuntimeInfo
	close sync.Once
}

type call struct {
	fn   func() error
	errc chan error
}

// panicked carries a panic from the torch thread to the caller.
type panicked struct {
	value any
	stack []byte
}

func (p *panicked) Error() string { return fmt.Sprint(p.value) }

// NewRuntime starts the torch thread: it flushes denormals, sets libtorch's
// intra-op threads and seeds its generator, on that thread, before any torch
// operation. (The malloc settings were made when the binary loaded; see
// package internal/torchrt.)
func NewRuntime(opts RuntimeOptions) (*Runtime, error) {
	threads := opts.Threads
	if threads == 0 {
		threads = DefaultThreads
	}
	if threads < 0 {
		return nil, fmt.Errorf("dragon: runtime: %d threads", threads)
	}
	r := &Runtime{calls: make(chan call), quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	go r.loop(threads, opts.Seed, ready)
	<-ready
	return r, nil
}

func (r *Runtime) loop(threads int, seed int64, ready chan<- struct{}) {
	// Never unlocked: when the loop returns, the goroutine exits and Go
	// ends the thread with its thread-local torch state.
	runtime.LockOSThread()
	defer close(r.done)
	flushed := torchrt.FlushDenormals()
	torchrt.SetThreads(threads)
	torchrt.ManualSeed(uint64(seed))
	torchrt.SetGradEnabled(true)
	r.info = RuntimeInfo{
		Libtorch:         torchrt.Version(),
		Threads:          torchrt.Threads(),
		CoreType:         torchrt.CoreType(),
		WaitPolicy:       torchrt.WaitPolicy(),
		DenormalsFlushed: flushed && torchrt.DenormalsFlushed(),
		MallocTuned:      torchrt.MallocTuned(),
	}
	close(ready)
	for {
		select {
		case c := <-r.calls:
			c.errc <- run(c.fn)
		case <-r.quit:
			return
		}
	}
}

// run calls fn, turning a panic into a *panicked error for the caller.
func run(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicked{value: v, stack: debug.Stack()}
		}
	}()
	return fn()
}

// do runs fn on the torch thread and returns its error. A panic in fn is
// re-raised in the caller's goroutine, with the torch thread's stack.
func (r *Runtime) do(fn func() error) error {
	c := call{fn: fn, errc: make(chan error, 1)}
	select {
	case r.calls <- c:
	case <-r.done:
		return ErrClosed
	}
	err := <-c.errc
	if p, ok := err.(*panicked); ok {
		panic(fmt.Sprintf("%v\n\ngoroutine of the torch thread:\n%s", p.value, p.stack))
	}
	return err
}

// Info describes the settings the runtime runs with.
func (r *Runtime) Info() RuntimeInfo { return r.info }

// Close stops the torch thread. Later calls on the runtime or its models
// return ErrClosed. Tensors of models not closed before are not freed.
func (r *Runtime) Close() error {
	r.close.Do(func() { close(r.quit) })
	<-r.done
	return nil
}

// noGrad runs fn with autograd off and turns it back on afterwards, even if
// fn fails. (Everything in this package runs with autograd on outside such
// sections; gotch's own NoGrad restored a garbage "previous" state.)
func noGrad(fn func() error) error {
	torchrt.SetGradEnabled(false)
	defer torchrt.SetGradEnabled(true)
	return fn()
}
