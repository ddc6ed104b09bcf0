// Package cachetest is the conformance suite every cache.Store must pass:
// the Badger store and the in-memory store today, remote stores later.
//
// A store's tests build a Suite with a constructor and a corruption hook and
// call Run:
//
//	func TestMemConformance(t *testing.T) {
//		s := cachetest.Suite{New: ..., Corrupt: ...}
//		s.Run(t)
//	}
//
// RoundTrip is the body of every store's FuzzRoundTrip target.
package cachetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"dragonx/cache"
)

// Suite runs the conformance tests against one Store implementation.
type Suite struct {
	// New returns a fresh, empty store. The suite closes it.
	New func(t *testing.T) cache.Store
	// Corrupt replaces the bytes stored for blob d by b without changing the
	// digest they are stored under, as a disk fault or a buggy writer would.
	Corrupt func(t *testing.T, s cache.Store, d cache.Digest, b []byte)
	// LargeSize is the size of the large (chunked) blob; 0 means 5 MiB + 123
	// bytes, several chunks of the Badger store's default chunk size.
	LargeSize int
	// Sizes are extra blob sizes to round-trip, such as an implementation's
	// chunk and inline boundaries and their neighbours.
	Sizes []int
}

// Run runs every test of the suite as a subtest of t.
func (s *Suite) Run(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st cache.Store)
	}{
		{"BlobRoundTrip", s.testBlobRoundTrip},
		{"EmptyBlob", s.testEmptyBlob},
		{"BlobMissing", s.testBlobMissing},
		{"BlobDelete", s.testBlobDelete},
		{"BlobCorrupt", s.testBlobCorrupt},
		{"BlobReaderError", s.testBlobReaderError},
		{"BlobCancel", s.testBlobCancel},
		{"Manifest", s.testManifest},
		{"ManifestMissingBlob", s.testManifestMissingBlob},
		{"ManifestSizes", s.testManifestSizes},
		{"ManifestForeignVersion", s.testManifestForeignVersion},
		{"ManifestTouch", s.testManifestTouch},
		{"Snapshot", s.testSnapshot},
		{"Stat", s.testStat},
		{"Meta", s.testMeta},
		{"Concurrent", s.testConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := s.New(t)
			defer func() {
				if err := st.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			tt.fn(t, st)
		})
	}
}

func (s *Suite) largeSize() int {
	if s.LargeSize > 0 {
		return s.LargeSize
	}
	return 5<<20 + 123
}

// Bytes returns n deterministic pseudo-random bytes drawn from seed.
func Bytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// Put stores b and checks the digest and size PutBlob returns.
func Put(t testing.TB, st cache.Store, b []byte) cache.Digest {
	t.Helper()
	d, n, err := st.PutBlob(context.Background(), bytes.NewReader(b))
	if err != nil {
		t.Fatalf("PutBlob(%d bytes): %v", len(b), err)
	}
	if want := cache.DigestBytes(b); d != want || n != int64(len(b)) {
		t.Fatalf("PutBlob(%d bytes) = %s, %d; want %s, %d", len(b), d, n, want, len(b))
	}
	return d
}

// Get reads blob d to EOF and returns its bytes or the error.
func Get(st cache.Store, d cache.Digest) ([]byte, error) {
	rc, size, err := st.OpenBlob(context.Background(), d)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return b, err
	}
	if int64(len(b)) != size {
		return b, fmt.Errorf("OpenBlob(%s) announced size %d, read %d bytes", d, size, len(b))
	}
	return b, nil
}

// RoundTrip stores data, reads it back and checks that the bytes, the
// digest (the SHA-256 of the bytes), HasBlob and Blobs agree. It is the
// body of the stores' FuzzRoundTrip targets.
func RoundTrip(t testing.TB, st cache.Store, data []byte) {
	t.Helper()
	d := Put(t, st, data)
	got, err := Get(st, d)
	if err != nil {
		t.Fatalf("OpenBlob(%s) after PutBlob(%d bytes): %v", d, len(data), err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("OpenBlob(%s) = %d bytes differing from the %d put", d, len(got), len(data))
	}
	if ok, err := st.HasBlob(context.Background(), d); err != nil || !ok {
		t.Fatalf("HasBlob(%s) = %v, %v; want true, nil", d, ok, err)
	}
	found := false
	err = st.Blobs(context.Background(), func(bd cache.Digest, size int64) error {
		if bd == d {
			found = true
			if size != int64(len(data)) {
				return fmt.Errorf("Blobs lists %s with size %d, want %d", d, size, len(data))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("Blobs does not list %s", d)
	}
	if d2 := Put(t, st, data); d2 != d {
		t.Fatalf("second PutBlob = %s, want %s", d2, d)
	}
}

func (s *Suite) testBlobRoundTrip(t *testing.T, st cache.Store) {
	sizes := append([]int{0, 1, 31, 4096, 100 << 10, s.largeSize()}, s.Sizes...)
	for i, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			RoundTrip(t, st, Bytes(uint64(i+1), n))
		})
	}
}

func (s *Suite) testEmptyBlob(t *testing.T, st cache.Store) {
	d := Put(t, st, nil)
	const empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if d.String() != empty {
		t.Fatalf("PutBlob(empty) = %s, want %s", d, empty)
	}
	b, err := Get(st, d)
	if err != nil || len(b) != 0 {
		t.Fatalf("OpenBlob(empty) = %d bytes, %v; want 0, nil", len(b), err)
	}
}

func (s *Suite) testBlobMissing(t *testing.T, st cache.Store) {
	d := cache.DigestBytes([]byte("never stored"))
	_, _, err := st.OpenBlob(context.Background(), d)
	var me *cache.MissError
	if !errors.Is(err, cache.ErrMiss) || errors.Is(err, cache.ErrCorrupt) || !errors.As(err, &me) {
		t.Fatalf("OpenBlob(missing) error = %v; want a plain *MissError", err)
	}
	if ok, err := st.HasBlob(context.Background(), d); ok || err != nil {
		t.Fatalf("HasBlob(missing) = %v, %v; want false, nil", ok, err)
	}
}

func (s *Suite) testBlobDelete(t *testing.T, st cache.Store) {
	ctx := context.Background()
	for i, n := range []int{10, s.largeSize()} {
		d := Put(t, st, Bytes(uint64(100+i), n))
		if err := st.DeleteBlob(ctx, d); err != nil {
			t.Fatalf("DeleteBlob(%s): %v", d, err)
		}
		if ok, err := st.HasBlob(ctx, d); ok || err != nil {
			t.Fatalf("HasBlob after DeleteBlob = %v, %v; want false, nil", ok, err)
		}
		if _, err := Get(st, d); !errors.Is(err, cache.ErrMiss) {
			t.Fatalf("OpenBlob after DeleteBlob: %v; want a miss", err)
		}
		if err := st.DeleteBlob(ctx, d); err != nil {
			t.Fatalf("second DeleteBlob(%s) = %v, want nil", d, err)
		}
		// Storing it again works.
		RoundTrip(t, st, Bytes(uint64(100+i), n))
	}
	if n := countBlobs(t, st); n != 2 {
		t.Fatalf("Blobs lists %d blobs, want 2", n)
	}
}

func countBlobs(t testing.TB, st cache.Store) int {
	t.Helper()
	n := 0
	if err := st.Blobs(context.Background(), func(cache.Digest, int64) error { n++; return nil }); err != nil {
		t.Fatalf("Blobs: %v", err)
	}
	return n
}

func (s *Suite) testBlobCorrupt(t *testing.T, st cache.Store) {
	if s.Corrupt == nil {
		t.Skip("no corruption hook")
	}
	tests := []struct {
		name string
		size int
		bad  func(b []byte) []byte
	}{
		{"FlipSmall", 100, func(b []byte) []byte { c := bytes.Clone(b); c[50] ^= 1; return c }},
		{"FlipLarge", s.largeSize(), func(b []byte) []byte { c := bytes.Clone(b); c[len(c)-7] ^= 0x80; return c }},
		{"Truncated", 100, func(b []byte) []byte { return b[:99] }},
		{"Longer", 100, func(b []byte) []byte { return append(bytes.Clone(b), 'x') }},
		{"Other", s.largeSize(), func(b []byte) []byte { return Bytes(999, len(b)) }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Bytes(uint64(200+i), tt.size)
			d := Put(t, st, b)
			s.Corrupt(t, st, d, tt.bad(b))
			got, err := Get(st, d)
			if !errors.Is(err, cache.ErrMiss) || !errors.Is(err, cache.ErrCorrupt) {
				t.Fatalf("reading a corrupted blob: %d bytes, error %v; want an error matching ErrMiss and ErrCorrupt", len(got), err)
			}
		})
	}
}

// failingReader returns n bytes, then err.
type failingReader struct {
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	k := min(len(p), f.n)
	for i := range k {
		p[i] = byte(i)
	}
	f.n -= k
	return k, nil
}

func (s *Suite) testBlobReaderError(t *testing.T, st cache.Store) {
	boom := errors.New("boom")
	for _, n := range []int{0, 10, s.largeSize()} {
		_, _, err := st.PutBlob(context.Background(), &failingReader{n: n, err: boom})
		if !errors.Is(err, boom) {
			t.Errorf("PutBlob(reader failing after %d bytes) error = %v, want one wrapping %v", n, err, boom)
		}
	}
	if n := countBlobs(t, st); n != 0 {
		t.Fatalf("after failed puts Blobs lists %d blobs, want 0", n)
	}
}

// cancelReader cancels its context after n bytes and keeps returning data.
type cancelReader struct {
	n      int
	cancel func()
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
	}
	k := min(len(p), 64<<10)
	c.n -= k
	return k, nil
}

func (s *Suite) testBlobCancel(t *testing.T, st cache.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, err := st.PutBlob(ctx, &cancelReader{n: s.largeSize() / 2, cancel: cancel})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("PutBlob with a cancelled context: %v; want context.Canceled", err)
	}
	if n := countBlobs(t, st); n != 0 {
		t.Fatalf("after a cancelled put Blobs lists %d blobs, want 0", n)
	}
}

// Key returns a deterministic key for tests.
func Key(n int) cache.Key {
	return cache.Key(cache.DigestBytes(fmt.Appendf(nil, "key %d", n)))
}

// NewManifest stores a blob per output name (and a log) and returns a
// manifest naming them under Key(n).
func NewManifest(t testing.TB, st cache.Store, n int, outputs ...string) *cache.Manifest {
	t.Helper()
	m := &cache.Manifest{
		Version:     cache.ManifestVersion,
		Key:         Key(n),
		Stage:       fmt.Sprintf(`stage.test["%d"]`, n),
		Kind:        "exec",
		KindVersion: "1",
		Outputs:     map[string]cache.Output{},
		Started:     time.Date(2025, 3, 1, 12, 0, n%60, 0, time.UTC),
		Duration:    1500 * time.Millisecond,
		Host:        "testhost",
		Tool:        "dragonx test",
	}
	for i, name := range outputs {
		b := fmt.Appendf(nil, "output %s of manifest %d (%d)\n", name, n, i)
		m.Outputs[name] = cache.Output{Digest: Put(t, st, b), Size: int64(len(b))}
	}
	log := fmt.Appendf(nil, "log of %d\n", n)
	m.Log, m.LogSize = Put(t, st, log), int64(len(log))
	return m
}

// SameManifest fails t unless got and want encode to the same JSON.
func SameManifest(t testing.TB, got, want *cache.Manifest) {
	t.Helper()
	g, err1 := json.Marshal(got)
	w, err2 := json.Marshal(want)
	if err1 != nil || err2 != nil {
		t.Fatalf("encoding manifests: %v, %v", err1, err2)
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("manifest = %s\nwant %s", g, w)
	}
}

func (s *Suite) testManifest(t *testing.T, st cache.Store) {
	ctx := context.Background()
	want := map[cache.Key]*cache.Manifest{}
	for i := range 5 {
		m := NewManifest(t, st, i, "a", "b")
		if err := st.PutManifest(ctx, m); err != nil {
			t.Fatalf("PutManifest: %v", err)
		}
		want[m.Key] = m
	}
	for k, m := range want {
		got, err := st.GetManifest(ctx, k)
		if err != nil {
			t.Fatalf("GetManifest(%s): %v", k.Short(), err)
		}
		SameManifest(t, got, m)
		got.Outputs["mutated"] = cache.Output{}
		again, _ := st.GetManifest(ctx, k)
		if _, ok := again.Outputs["mutated"]; ok {
			t.Fatal("GetManifest returns a manifest that aliases the stored one")
		}
	}
	seen := 0
	err := st.Manifests(ctx, func(m *cache.Manifest) error {
		seen++
		SameManifest(t, m, want[m.Key])
		return nil
	})
	if err != nil || seen != len(want) {
		t.Fatalf("Manifests saw %d, %v; want %d, nil", seen, err, len(want))
	}
	// A zero version is stored as the current one.
	m := NewManifest(t, st, 10, "x")
	m.Version = 0
	if err := st.PutManifest(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got, err := st.GetManifest(ctx, m.Key); err != nil || got.Version != cache.ManifestVersion {
		t.Fatalf("GetManifest of a manifest put with version 0 = %+v, %v; want version %d", got, err, cache.ManifestVersion)
	}
	// Replacing and deleting.
	m2 := NewManifest(t, st, 10, "y")
	if err := st.PutManifest(ctx, m2); err != nil {
		t.Fatal(err)
	}
	if got, err := st.GetManifest(ctx, m.Key); err != nil || got.Outputs["y"].Digest.IsZero() {
		t.Fatalf("GetManifest after replacing = %+v, %v; want outputs {y}", got, err)
	}
	if err := st.DeleteManifest(ctx, m.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetManifest(ctx, m.Key); !errors.Is(err, cache.ErrMiss) || errors.Is(err, cache.ErrCorrupt) {
		t.Fatalf("GetManifest after DeleteManifest: %v; want a plain miss", err)
	}
	if err := st.DeleteManifest(ctx, m.Key); err != nil {
		t.Fatalf("second DeleteManifest = %v, want nil", err)
	}
	if err := st.PutManifest(ctx, nil); err == nil {
		t.Fatal("PutManifest(nil) succeeded")
	}
}

func (s *Suite) testManifestMissingBlob(t *testing.T, st cache.Store) {
	ctx := context.Background()
	m := NewManifest(t, st, 1, "a", "b")
	gone := m.Outputs["b"].Digest
	if err := st.DeleteBlob(ctx, gone); err != nil {
		t.Fatal(err)
	}
	err := st.PutManifest(ctx, m)
	if !errors.Is(err, cache.ErrMissingBlob) {
		t.Fatalf("PutManifest naming a missing blob: %v; want ErrMissingBlob", err)
	}
	if _, err := st.GetManifest(ctx, m.Key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("GetManifest after a refused PutManifest: %v; want a miss", err)
	}
	// A missing log blob is refused too.
	m = NewManifest(t, st, 2, "a")
	m.Log = cache.DigestBytes([]byte("no such log"))
	if err := st.PutManifest(ctx, m); !errors.Is(err, cache.ErrMissingBlob) {
		t.Fatalf("PutManifest naming a missing log: %v; want ErrMissingBlob", err)
	}
}

// testManifestSizes checks that PutManifest fills in an unknown log size
// from the stored blob and refuses sizes that are not the stored blobs'.
func (s *Suite) testManifestSizes(t *testing.T, st cache.Store) {
	ctx := context.Background()
	m := NewManifest(t, st, 20, "a")
	n := m.LogSize
	m.LogSize = 0
	if err := st.PutManifest(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got, err := st.GetManifest(ctx, m.Key); err != nil || got.LogSize != n {
		t.Fatalf("GetManifest after PutManifest with LogSize 0 = %+v, %v; want LogSize %d", got, err, n)
	}
	for name, edit := range map[string]func(m *cache.Manifest){
		"log":    func(m *cache.Manifest) { m.LogSize = 30 << 30 },
		"output": func(m *cache.Manifest) { o := m.Outputs["a"]; o.Size++; m.Outputs["a"] = o },
		"tree":   func(m *cache.Manifest) { o := m.Outputs["a"]; o.TreeSize = 5; m.Outputs["a"] = o },
	} {
		m := NewManifest(t, st, 21, "a")
		edit(m)
		if err := st.PutManifest(ctx, m); err == nil {
			t.Errorf("PutManifest with a wrong %s size succeeded", name)
		} else if name != "tree" && !errors.Is(err, cache.ErrSizeMismatch) {
			t.Errorf("PutManifest with a wrong %s size = %v, want ErrSizeMismatch", name, err)
		}
		if _, err := st.GetManifest(ctx, m.Key); !errors.Is(err, cache.ErrMiss) {
			t.Errorf("a manifest with a wrong %s size was stored: %v", name, err)
		}
	}
}

func (s *Suite) testManifestForeignVersion(t *testing.T, st cache.Store) {
	ctx := context.Background()
	m := NewManifest(t, st, 1, "a")
	m.Version = cache.ManifestVersion + 1
	if err := st.PutManifest(ctx, m); err != nil {
		t.Fatalf("PutManifest(version %d): %v", m.Version, err)
	}
	_, err := st.GetManifest(ctx, m.Key)
	if !errors.Is(err, cache.ErrMiss) || !errors.Is(err, cache.ErrForeignVersion) || errors.Is(err, cache.ErrCorrupt) {
		t.Fatalf("GetManifest of a foreign version: %v; want a miss matching ErrForeignVersion", err)
	}
	n := 0
	if err := st.Manifests(ctx, func(*cache.Manifest) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("Manifests lists %d manifests (%v); want 0 (the foreign one is skipped)", n, err)
	}
	var keys []cache.Key
	if err := st.ManifestKeys(ctx, func(k cache.Key) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != m.Key {
		t.Fatalf("ManifestKeys = %v, want [%s]", keys, m.Key)
	}
	if err := st.TouchManifest(ctx, m.Key, time.Now()); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("TouchManifest of a foreign version: %v; want a miss", err)
	}
}

func (s *Suite) testManifestTouch(t *testing.T, st cache.Store) {
	ctx := context.Background()
	m := NewManifest(t, st, 1, "a")
	t0 := time.Date(2025, 3, 2, 8, 0, 0, 0, time.UTC)
	m.LastUsed = t0
	if err := st.PutManifest(ctx, m); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		at   time.Duration
		want time.Duration
	}{
		{30 * time.Minute, 0},
		{59 * time.Minute, 0},
		{61 * time.Minute, 61 * time.Minute},
		{90 * time.Minute, 61 * time.Minute},
		{-5 * time.Hour, 61 * time.Minute}, // an earlier use never moves it back
		{125 * time.Minute, 125 * time.Minute},
	}
	for _, tt := range tests {
		if err := st.TouchManifest(ctx, m.Key, t0.Add(tt.at)); err != nil {
			t.Fatalf("TouchManifest(+%v): %v", tt.at, err)
		}
		got, err := st.GetManifest(ctx, m.Key)
		if err != nil {
			t.Fatal(err)
		}
		if want := t0.Add(tt.want); !got.LastUsed.Equal(want) {
			t.Fatalf("after TouchManifest(+%v) LastUsed = %v, want %v", tt.at, got.LastUsed, want)
		}
	}
	if err := st.TouchManifest(ctx, Key(99), t0); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("TouchManifest(missing) = %v, want a miss", err)
	}
}

func (s *Suite) testSnapshot(t *testing.T, st cache.Store) {
	ctx := context.Background()
	if _, err := st.GetSnapshot(ctx, "stage.gen"); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("GetSnapshot(absent) error = %v, want a miss", err)
	}
	tests := []struct{ stage, snap string }{
		{"stage.gen", `{"n":1}`},
		{`stage.rl["log"]`, `{"bonus":2}`},
		{"stage.gen", `{"n":2}`}, // replaces
		{"stage.empty", ``},
	}
	for _, tt := range tests {
		if err := st.PutSnapshot(ctx, tt.stage, []byte(tt.snap)); err != nil {
			t.Fatalf("PutSnapshot(%s): %v", tt.stage, err)
		}
	}
	want := map[string]string{"stage.gen": `{"n":2}`, `stage.rl["log"]`: `{"bonus":2}`, "stage.empty": ""}
	for stage, snap := range want {
		got, err := st.GetSnapshot(ctx, stage)
		if err != nil || string(got) != snap {
			t.Fatalf("GetSnapshot(%s) = %q, %v; want %q, nil", stage, got, err, snap)
		}
	}
}

func (s *Suite) testStat(t *testing.T, st cache.Store) {
	ctx := context.Background()
	if _, ok, err := st.GetStat(ctx, "/data/raw.csv"); ok || err != nil {
		t.Fatalf("GetStat(absent) = %v, %v; want false, nil", ok, err)
	}
	e := cache.StatEntry{Fingerprint: "f 10 123 456 7 8 644", Output: cache.Output{Digest: cache.DigestBytes([]byte("x")), Size: 1}}
	if err := st.PutStat(ctx, "/data/raw.csv", e); err != nil {
		t.Fatal(err)
	}
	got, ok, err := st.GetStat(ctx, "/data/raw.csv")
	if err != nil || !ok || got != e {
		t.Fatalf("GetStat = %+v, %v, %v; want %+v, true, nil", got, ok, err, e)
	}
	e.Fingerprint = "f 11 124 456 7 8 644"
	e.Output.Tree = true
	if err := st.PutStat(ctx, "/data/raw.csv", e); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := st.GetStat(ctx, "/data/raw.csv"); got != e {
		t.Fatalf("GetStat after replacing = %+v, want %+v", got, e)
	}
}

func (s *Suite) testMeta(t *testing.T, st cache.Store) {
	ctx := context.Background()
	if _, err := st.GetMeta(ctx, "gc.last"); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("GetMeta(absent) = %v, want a miss", err)
	}
	if err := st.PutMeta(ctx, "gc.last", []byte("2025-03-01T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if got, err := st.GetMeta(ctx, "gc.last"); err != nil || string(got) != "2025-03-01T00:00:00Z" {
		t.Fatalf("GetMeta = %q, %v", got, err)
	}
}

func (s *Suite) testConcurrent(t *testing.T, st cache.Store) {
	ctx := context.Background()
	const workers = 8
	shared := Bytes(7, 300<<10)
	large := Bytes(8, s.largeSize())
	var ms []*cache.Manifest
	for w := range workers {
		ms = append(ms, NewManifest(t, st, 100+w, "out"))
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*4)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 4 {
				var b []byte
				switch i {
				case 0:
					b = shared
				case 1:
					if w%4 != 0 {
						continue
					}
					b = large
				default:
					b = Bytes(uint64(1000+w*10+i), 1000*(w+1)*i)
				}
				d, _, err := st.PutBlob(ctx, bytes.NewReader(b))
				if err != nil {
					errs <- err
					return
				}
				got, err := Get(st, d)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, b) {
					errs <- fmt.Errorf("worker %d read back different bytes for %s", w, d)
					return
				}
			}
			m := ms[w]
			if err := st.PutManifest(ctx, m); err != nil {
				errs <- err
				return
			}
			for i := range workers {
				_, err := st.GetManifest(ctx, Key(100+i))
				if err != nil && !errors.Is(err, cache.ErrMiss) {
					errs <- err
					return
				}
				if err := st.TouchManifest(ctx, m.Key, m.Started.Add(time.Duration(i)*time.Hour)); err != nil {
					errs <- err
					return
				}
			}
			if err := st.PutSnapshot(ctx, fmt.Sprint("stage.", w), []byte{byte(w)}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n := 0
	if err := st.Manifests(ctx, func(*cache.Manifest) error { n++; return nil }); err != nil || n != workers {
		t.Fatalf("Manifests after concurrent puts: %d, %v; want %d", n, err, workers)
	}
}
