package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"dragonx/cache"
)

// Info is what the cache remembers about one stage address: its last
// success (manifest) and, if more recent, its last failure.
type Info struct {
	Addr Addr
	// LastKey and LastTime are from the last success; LastKey is zero if
	// the stage never succeeded with this cache.
	LastKey  cache.Key
	LastTime time.Time
	// Manifest is the last success's manifest; nil if it was evicted.
	Manifest *cache.Manifest
	// Failure is the last failed run, when it is newer than the success.
	Failure *Failure
}

// Failure is a stage's last failed run.
type Failure struct {
	Key   cache.Key
	Log   cache.Digest
	Error string
	Time  time.Time
}

// Info returns what the cache remembers about addr.
func (e *Engine) Info(ctx context.Context, addr Addr) (*Info, error) {
	info := &Info{Addr: addr}
	if s := e.lastSnapshot(ctx, addr); s != nil {
		info.LastKey, info.LastTime = s.Key, s.Time
		if m, err := e.Store.GetManifest(ctx, s.Key); err == nil {
			info.Manifest = m
		}
	}
	if b, err := e.Store.GetSnapshot(ctx, failureSnapshotName(addr)); err == nil {
		var fr failureRecord
		if json.Unmarshal(b, &fr) == nil && fr.Time.After(info.LastTime) {
			info.Failure = &Failure{Key: fr.Key, Log: fr.Log, Error: fr.Error, Time: fr.Time}
		}
	}
	return info, nil
}

// Manifest returns the manifest stored under k, or nil.
func (e *Engine) Manifest(ctx context.Context, k cache.Key) *cache.Manifest {
	m, err := e.Store.GetManifest(ctx, k)
	if err != nil {
		return nil
	}
	return m
}

// CopyBlob writes a stored blob (such as a log) to w, verifying it.
func (e *Engine) CopyBlob(ctx context.Context, d cache.Digest, w io.Writer) error {
	if d.IsZero() {
		return nil
	}
	r, _, err := e.Store.OpenBlob(ctx, d)
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("stages: reading %s: %w", d.Short(), err)
	}
	return nil
}
