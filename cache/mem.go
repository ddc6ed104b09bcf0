package cache

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"
)

// Mem is an in-memory Store for tests. It behaves like the Badger store
// (it passes the same conformance suite) but keeps everything in maps and
// forgets it when dropped. It is safe for concurrent use.
type Mem struct {
	mu        sync.RWMutex
	blobs     map[Digest][]byte
	manifests map[Key][]byte // stored form, as Badger keeps it
	snapshots map[string][]byte
	stats     map[string]StatEntry
	meta      map[string][]byte
	closed    bool
}

var _ Store = (*Mem)(nil)

// NewMem returns an empty in-memory store.
func NewMem() *Mem {
	return &Mem{
		blobs:     map[Digest][]byte{},
		manifests: map[Key][]byte{},
		snapshots: map[string][]byte{},
		stats:     map[string]StatEntry{},
		meta:      map[string][]byte{},
	}
}

var errClosed = fmt.Errorf("cache: store is closed")

// check returns the reason no operation may run now, if any.
func (s *Mem) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed {
		return errClosed
	}
	return nil
}

// PutBlob implements Store. It reads r to EOF into memory.
func (s *Mem) PutBlob(ctx context.Context, r io.Reader) (Digest, int64, error) {
	if err := ctx.Err(); err != nil {
		return Digest{}, 0, err
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, ctxReader{ctx, r}); err != nil {
		return Digest{}, 0, fmt.Errorf("cache: reading blob: %w", err)
	}
	b := buf.Bytes()
	d := DigestBytes(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return Digest{}, 0, err
	}
	if _, ok := s.blobs[d]; !ok {
		s.blobs[d] = b
	}
	return d, int64(len(b)), nil
}

// OpenBlob implements Store.
func (s *Mem) OpenBlob(ctx context.Context, d Digest) (io.ReadCloser, int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, 0, err
	}
	b, ok := s.blobs[d]
	if !ok {
		return nil, 0, missing(blobWhat(d), nil)
	}
	// The stored slice is never modified (a put replaces it), so the reader
	// may use it without the lock.
	return newVerifyingReader(bytes.NewReader(b), nil, d, int64(len(b))), int64(len(b)), nil
}

// HasBlob implements Store.
func (s *Mem) HasBlob(ctx context.Context, d Digest) (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return false, err
	}
	_, ok := s.blobs[d]
	return ok, nil
}

// DeleteBlob implements Store.
func (s *Mem) DeleteBlob(ctx context.Context, d Digest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	delete(s.blobs, d)
	return nil
}

// Blobs implements Store, in digest order.
func (s *Mem) Blobs(ctx context.Context, fn func(d Digest, size int64) error) error {
	type entry struct {
		d    Digest
		size int64
	}
	s.mu.RLock()
	if err := s.check(ctx); err != nil {
		s.mu.RUnlock()
		return err
	}
	es := make([]entry, 0, len(s.blobs))
	for d, b := range s.blobs {
		es = append(es, entry{d, int64(len(b))})
	}
	s.mu.RUnlock()
	sort.Slice(es, func(i, j int) bool { return bytes.Compare(es[i].d[:], es[j].d[:]) < 0 })
	return each(ctx, es, func(e entry) error { return fn(e.d, e.size) })
}

// GetManifest implements Store.
func (s *Mem) GetManifest(ctx context.Context, k Key) (*Manifest, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	v, ok := s.manifests[k]
	if !ok {
		return nil, missing(manifestWhat(k), nil)
	}
	return decodeManifest(k, v)
}

// PutManifest implements Store.
func (s *Mem) PutManifest(ctx context.Context, m *Manifest) error {
	c, err := prepareManifest(m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	err = completeSizes(c, func(d Digest) (int64, bool, error) {
		b, ok := s.blobs[d]
		return int64(len(b)), ok, nil
	})
	if err != nil {
		return err
	}
	v, err := encodeManifest(c)
	if err != nil {
		return err
	}
	s.manifests[c.Key] = v
	return nil
}

// DeleteManifest implements Store.
func (s *Mem) DeleteManifest(ctx context.Context, k Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	delete(s.manifests, k)
	return nil
}

// sortedKeys returns the manifest keys in order; the caller holds s.mu.
func (s *Mem) sortedKeys() []Key {
	ks := make([]Key, 0, len(s.manifests))
	for k := range s.manifests {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return bytes.Compare(ks[i][:], ks[j][:]) < 0 })
	return ks
}

// Manifests implements Store, in key order.
func (s *Mem) Manifests(ctx context.Context, fn func(*Manifest) error) error {
	s.mu.RLock()
	if err := s.check(ctx); err != nil {
		s.mu.RUnlock()
		return err
	}
	var ms []*Manifest
	for _, k := range s.sortedKeys() {
		if m, err := decodeManifest(k, s.manifests[k]); err == nil {
			ms = append(ms, m)
		}
	}
	s.mu.RUnlock()
	return each(ctx, ms, fn)
}

// ManifestKeys implements Store, in key order.
func (s *Mem) ManifestKeys(ctx context.Context, fn func(Key) error) error {
	s.mu.RLock()
	if err := s.check(ctx); err != nil {
		s.mu.RUnlock()
		return err
	}
	ks := s.sortedKeys()
	s.mu.RUnlock()
	return each(ctx, ks, fn)
}

// TouchManifest implements Store.
func (s *Mem) TouchManifest(ctx context.Context, k Key, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	v, ok := s.manifests[k]
	if !ok {
		return missing(manifestWhat(k), nil)
	}
	m, err := decodeManifest(k, v)
	if err != nil {
		return err
	}
	if !needsTouch(m.LastUsed, t) {
		return nil
	}
	m.LastUsed = t
	if v, err = encodeManifest(m); err != nil {
		return err
	}
	s.manifests[k] = v
	return nil
}

// GetSnapshot implements Store.
func (s *Mem) GetSnapshot(ctx context.Context, stage string) ([]byte, error) {
	return s.getBytes(ctx, s.snapshots, "snapshot of "+stage, stage)
}

// PutSnapshot implements Store.
func (s *Mem) PutSnapshot(ctx context.Context, stage string, snapshot []byte) error {
	return s.putBytes(ctx, s.snapshots, stage, snapshot)
}

// GetMeta implements Store.
func (s *Mem) GetMeta(ctx context.Context, name string) ([]byte, error) {
	return s.getBytes(ctx, s.meta, "meta "+name, name)
}

// PutMeta implements Store.
func (s *Mem) PutMeta(ctx context.Context, name string, value []byte) error {
	return s.putBytes(ctx, s.meta, name, value)
}

func (s *Mem) getBytes(ctx context.Context, m map[string][]byte, what, name string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	v, ok := m[name]
	if !ok {
		return nil, missing(what, nil)
	}
	return bytes.Clone(v), nil
}

func (s *Mem) putBytes(ctx context.Context, m map[string][]byte, name string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	m[name] = bytes.Clone(v)
	if m[name] == nil {
		m[name] = []byte{}
	}
	return nil
}

// GetStat implements Store.
func (s *Mem) GetStat(ctx context.Context, path string) (StatEntry, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return StatEntry{}, false, err
	}
	e, ok := s.stats[path]
	return e, ok, nil
}

// PutStat implements Store.
func (s *Mem) PutStat(ctx context.Context, path string, e StatEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	s.stats[path] = e
	return nil
}

// Close implements Store; later calls fail.
func (s *Mem) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// corruptBlob replaces the bytes stored under d (a test hook: see
// export_test.go).
func (s *Mem) corruptBlob(d Digest, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blobs[d] = bytes.Clone(b)
}

// ctxReader makes a long read stop when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	if err == io.ErrUnexpectedEOF {
		// The source is truncated (a tar entry cut short). io.ReadFull
		// returns this very error for a short last chunk, which PutBlob
		// takes for the end of the blob: wrap it so that it is a failure.
		err = fmt.Errorf("source: %w", err)
	}
	return n, err
}
