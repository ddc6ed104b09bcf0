package numeric

import (
	"context"
	"sync"
)

// memo runs one computation per key at a time: callers that ask for a key
// while it is being computed wait for that computation instead of
// repeating it. A result that keep accepts is remembered for the gate's
// life and returned to every later caller; any other result is handed to
// the callers waiting at the time, who then compute again (a cancelled
// first caller does not fail the others).
type memo[T any] struct {
	mu sync.Mutex
	m  map[string]*memoCall[T]
}

type memoCall[T any] struct {
	done chan struct{}
	val  T
	err  error
	kept bool
}

// do returns f's result for key, computed by this call (shared false) or
// by an earlier or concurrent one (shared true).
func (m *memo[T]) do(ctx context.Context, key string, f func() (T, error), keep func(T, error) bool) (val T, shared bool, err error) {
	for {
		m.mu.Lock()
		if m.m == nil {
			m.m = map[string]*memoCall[T]{}
		}
		c, ok := m.m[key]
		if !ok {
			c = &memoCall[T]{done: make(chan struct{})}
			m.m[key] = c
			m.mu.Unlock()
			c.val, c.err = f()
			c.kept = keep(c.val, c.err)
			if !c.kept {
				m.mu.Lock()
				delete(m.m, key)
				m.mu.Unlock()
			}
			close(c.done)
			return c.val, false, c.err
		}
		m.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			var zero T
			return zero, false, ctx.Err()
		}
		if c.kept {
			return c.val, true, c.err
		}
	}
}
