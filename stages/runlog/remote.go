package runlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"dragonx/cache"
	"dragonx/cache/remote"
)

// The run log on a remote cache. A remote cannot list its entries, so the
// runs are kept in numbered slots: slot n is an action-cache entry under
// SlotKey(n), a manifest of kind "dragonx.run" whose one output, "run", is
// the run entry's bytes in the content-addressed store (named by the run
// id, which is their SHA-256). A reader walks the slots from 0 to the
// first empty one; a writer appends each run the remote lacks in the next
// empty slot, then reads the slot back. Two writers that append at the
// same moment can write one slot twice: the one that reads back the other's
// run moves to the next slot, and a run lost to a later overwrite is
// appended again by its owner's next push (it is not among the runs the
// walk finds).

// slotKind is the kind of a slot's manifest.
const slotKind = "dragonx.run"

// maxEntryBytes bounds a run entry read from a remote; the paper's is
// about 60 KiB.
const maxEntryBytes = 16 << 20

// SlotKey is the action-cache key of the remote run log's slot n.
func SlotKey(n int) cache.Key {
	return cache.Key(sha256.Sum256(fmt.Appendf(nil, "dragonx run log v1 slot %d", n)))
}

// remoteSlot reads slot n: the run id it holds and its size; ok is false
// for an empty slot. A slot that is not a run log slot is an error.
func remoteSlot(ctx context.Context, r remote.Remote, n int) (d cache.Digest, size int64, ok bool, err error) {
	k := SlotKey(n)
	rc, _, err := r.Get(ctx, remote.AC, k.String())
	if errors.Is(err, remote.ErrNotFound) {
		return d, 0, false, nil
	}
	if err != nil {
		return d, 0, false, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return d, 0, false, err
	}
	m, err := cache.UnmarshalManifest(k, b)
	if err != nil {
		return d, 0, false, &badSlotError{n, err}
	}
	o, has := m.Outputs["run"]
	if m.Kind != slotKind || !has || o.Tree {
		return d, 0, false, &badSlotError{n, fmt.Errorf("not a run log slot (kind %q)", m.Kind)}
	}
	return o.Digest, o.Size, true, nil
}

// badSlotError is a remote slot whose bytes are not a run log slot; it is
// skipped, never overwritten.
type badSlotError struct {
	n   int
	err error
}

func (e *badSlotError) Error() string { return fmt.Sprintf("runlog: remote slot %d: %v", e.n, e.err) }
func (e *badSlotError) Unwrap() error { return e.err }

// walk calls fn for every filled slot of the remote's run log, in order,
// and returns the number of the first empty one. A slot that cannot be
// read is reported to bad and skipped.
func walk(ctx context.Context, r remote.Remote, bad func(error), fn func(n int, d cache.Digest, size int64) error) (int, error) {
	for n := 0; ; n++ {
		d, size, ok, err := remoteSlot(ctx, r, n)
		var bs *badSlotError
		switch {
		case errors.As(err, &bs):
			bad(err)
			continue
		case err != nil:
			return n, err
		case !ok:
			return n, nil
		}
		if err := fn(n, d, size); err != nil {
			return n, err
		}
	}
}

// Push appends to the remote's run log every run of dir that it lacks and
// keep accepts (nil: every run). It returns how many it appended and how
// many the remote held already; bad receives each remote slot it could not
// read.
func Push(ctx context.Context, r remote.Remote, dir string, keep func(*Entry) bool, bad func(error)) (pushed, present int, err error) {
	l, err := List(dir)
	if err != nil {
		return 0, 0, err
	}
	have := map[cache.Digest]bool{}
	next, err := walk(ctx, r, bad, func(_ int, d cache.Digest, _ int64) error {
		have[d] = true
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	// Oldest first, so that the remote's slots keep the runs' order.
	for i := len(l.Entries) - 1; i >= 0; i-- {
		e := l.Entries[i]
		if keep != nil && !keep(e) {
			continue
		}
		d, err := cache.ParseDigest(cache.DigestPrefix + e.ID)
		if err != nil {
			return pushed, present, err
		}
		if have[d] {
			present++
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.ID+".json"))
		if err != nil {
			return pushed, present, fmt.Errorf("runlog: %w", err)
		}
		if next, err = appendRun(ctx, r, next, e, d, b); err != nil {
			return pushed, present, err
		}
		pushed++
	}
	return pushed, present, nil
}

// appendRun stores a run's bytes in the remote and writes its slot at the
// first empty slot from next on; it returns the slot after it.
func appendRun(ctx context.Context, r remote.Remote, next int, e *Entry, d cache.Digest, b []byte) (int, error) {
	hexID := hex.EncodeToString(d[:])
	if size, err := r.Stat(ctx, remote.CAS, hexID); err != nil || size != int64(len(b)) {
		if err != nil && !errors.Is(err, remote.ErrNotFound) {
			return next, err
		}
		if err := r.Put(ctx, remote.CAS, hexID, int64(len(b)), remote.BytesBody(b)); err != nil {
			return next, err
		}
	}
	for n := next; ; n++ {
		_, _, ok, err := remoteSlot(ctx, r, n)
		var bs *badSlotError
		if err != nil && !errors.As(err, &bs) {
			return n, err
		}
		if ok || err != nil {
			continue // taken (or unreadable: never overwritten)
		}
		m := &cache.Manifest{
			Version: cache.ManifestVersion, Key: SlotKey(n), Stage: "run " + e.Short(), Kind: slotKind, KindVersion: "1",
			Outputs: map[string]cache.Output{"run": {Digest: d, Size: int64(len(b))}},
			Started: e.Started, Duration: e.Duration, Host: e.Host, Tool: e.Tool, LastUsed: time.Now().UTC(),
		}
		mb, err := cache.MarshalManifest(m)
		if err != nil {
			return n, err
		}
		if err := r.Put(ctx, remote.AC, m.Key.String(), int64(len(mb)), remote.BytesBody(mb)); err != nil {
			return n, err
		}
		// Read it back: another writer may have taken the slot at the
		// same moment.
		if got, _, ok, err := remoteSlot(ctx, r, n); err == nil && ok && got == d {
			return n + 1, nil
		}
	}
}

// Pull copies into dir every run of the remote's run log that dir lacks,
// each verified against its id, and returns how many it copied. bad
// receives each slot or run it could not use.
func Pull(ctx context.Context, r remote.Remote, dir string, bad func(error)) (int, error) {
	pulled := 0
	_, err := walk(ctx, r, bad, func(n int, d cache.Digest, size int64) error {
		id := hex.EncodeToString(d[:])
		path := filepath.Join(dir, id+".json")
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if size < 0 || size > maxEntryBytes {
			bad(fmt.Errorf("runlog: remote slot %d: run %s of %d bytes is over the limit", n, short(id), size))
			return nil
		}
		rc, _, err := r.Get(ctx, remote.CAS, id)
		if err != nil {
			if errors.Is(err, remote.ErrNotFound) {
				bad(fmt.Errorf("runlog: remote slot %d: run %s is missing on the remote", n, short(id)))
				return nil
			}
			return err
		}
		b, err := io.ReadAll(io.LimitReader(rc, size+1))
		rc.Close()
		if err != nil {
			return err
		}
		if _, err := Decode(b, id); err != nil || int64(len(b)) != size {
			bad(fmt.Errorf("runlog: remote slot %d: run %s is corrupt on the remote", n, short(id)))
			return nil
		}
		if err := writeBytes(dir, id, b); err != nil {
			return err
		}
		pulled++
		return nil
	})
	return pulled, err
}
