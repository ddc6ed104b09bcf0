package stages

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"dragonx/cache"
)

// Remote is a cache shared by a team, which Run reads through on a local
// miss and, with Engine.Push, writes through after each stage. Package
// cache/remote's Client implements it over an HTTP server or a shared
// directory. Errors that match cache.ErrMiss are misses (the remote lacks
// the entry, or holds it incomplete or corrupt); any other error means the
// remote cannot be used now.
type Remote interface {
	// Lookup returns the remote's manifest for k if its entry is complete,
	// without copying anything into the local store (for Plan).
	Lookup(ctx context.Context, k cache.Key) (*cache.Manifest, error)
	// Fetch copies the entry for k into the local store, verified, and
	// returns its manifest; afterwards the local store holds it complete.
	Fetch(ctx context.Context, k cache.Key) (*cache.Manifest, error)
	// Push copies the local entry for k to the remote, unless the remote
	// holds it complete already; it reports whether it uploaded anything.
	Push(ctx context.Context, k cache.Key) (bool, error)
	// String returns the remote's location, for messages.
	String() string
}

// remoteUse is one Run's or Plan's use of Engine.Remote. It keeps remote
// trouble from failing anything: a remote that errors (down, too slow,
// refusing) is warned about once and not asked again for the rest of the
// operation; an entry found corrupt or incomplete there is warned about
// and treated as a miss. Pushes run in the background, bounded by the
// remote's own limit on transfers, and are waited for at the end.
type remoteUse struct {
	e       *Engine
	r       Remote
	down    atomic.Bool
	once    sync.Once
	downErr error // the error that put the remote out of use; set in once
	pushes  sync.WaitGroup
	warnMu  sync.Mutex // Warn hears one warning at a time
}

// useRemote returns the operation's use of the remote, or nil if there is
// none.
func (e *Engine) useRemote() *remoteUse {
	if e.Remote == nil {
		return nil
	}
	return &remoteUse{e: e, r: e.Remote}
}

func (u *remoteUse) warn(format string, args ...any) {
	if u.e.Warn != nil {
		u.warnMu.Lock()
		defer u.warnMu.Unlock()
		u.e.Warn(fmt.Sprintf(format, args...))
	}
}

// failed handles an error from the remote about addr; pushing says whether
// it came from a push.
func (u *remoteUse) failed(ctx context.Context, addr Addr, pushing bool, err error) {
	if ctx.Err() != nil {
		return // interrupted: the run says so
	}
	var me *cache.MissError
	if errors.As(err, &me) {
		if me.Reason == nil || errors.Is(err, cache.ErrForeignVersion) {
			return // a plain miss, or an entry of another dragonx version
		}
		if pushing {
			u.warn("remote %s: cannot push %s: its local %s is unusable (%v)", u.r, addr.Short(), me.What, me.Reason)
			return
		}
		fix := ""
		if u.e.Push {
			fix = "; this run pushes its result to repair the remote"
		}
		u.warn("remote %s: %s: %s is unusable (%v); the stage runs here%s", u.r, addr.Short(), me.What, me.Reason, fix)
		return
	}
	u.once.Do(func() {
		u.downErr = err
		u.down.Store(true)
		u.warn("remote %s is unavailable (%v); continuing with the local cache only", u.r, err)
	})
}

// err returns the error that put the remote out of use, or nil. The caller
// has waited for the pushes.
func (u *remoteUse) err() error {
	if u == nil || !u.down.Load() {
		return nil
	}
	return u.downErr
}

// fetch pulls the entry for k into the local store, or returns nil.
func (u *remoteUse) fetch(ctx context.Context, addr Addr, k cache.Key) *cache.Manifest {
	if u == nil || u.down.Load() {
		return nil
	}
	m, err := u.r.Fetch(ctx, k)
	if err != nil {
		u.failed(ctx, addr, false, err)
		return nil
	}
	return m
}

// lookup returns the remote's complete entry for k, or nil.
func (u *remoteUse) lookup(ctx context.Context, addr Addr, k cache.Key) *cache.Manifest {
	if u == nil || u.down.Load() {
		return nil
	}
	m, err := u.r.Lookup(ctx, k)
	if err != nil {
		u.failed(ctx, addr, false, err)
		return nil
	}
	return m
}

// push starts pushing the local entry for k, when the engine pushes.
func (u *remoteUse) push(ctx context.Context, addr Addr, k cache.Key) {
	if u == nil || !u.e.Push || u.down.Load() {
		return
	}
	u.pushes.Add(1)
	go func() {
		defer u.pushes.Done()
		if u.down.Load() {
			return
		}
		if _, err := u.r.Push(ctx, k); err != nil {
			u.failed(ctx, addr, true, err)
		}
	}()
}

// wait waits for the pushes started so far.
func (u *remoteUse) wait() {
	if u != nil {
		u.pushes.Wait()
	}
}
