package cache_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/cache/cachetest"
)

// openBadger opens a Badger store in a fresh directory, closed at cleanup.
func openBadger(t testing.TB, opts cache.Options) *cache.Badger {
	t.Helper()
	return openBadgerDir(t, t.TempDir(), opts)
}

func openBadgerDir(t testing.TB, dir string, opts cache.Options) *cache.Badger {
	t.Helper()
	s, err := cache.Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestBadgerConformance(t *testing.T) {
	for _, tc := range []struct {
		chunk  int
		reopen bool // start read-only, as every run after the first does
	}{{0, false}, {1000, false}, {0, true}} {
		chunk := tc.chunk
		t.Run(fmt.Sprintf("chunk=%d,reopened=%v", chunk, tc.reopen), func(t *testing.T) {
			s := cachetest.Suite{
				New: func(t *testing.T) cache.Store {
					dir := t.TempDir()
					if tc.reopen {
						if err := openBadgerDir(t, dir, cache.Options{}).Close(); err != nil {
							t.Fatal(err)
						}
					}
					return openBadgerDir(t, dir, cache.Options{ChunkSize: chunk})
				},
				Corrupt: func(t *testing.T, s cache.Store, d cache.Digest, b []byte) {
					if err := cache.CorruptBadgerBlob(s.(*cache.Badger), d, b); err != nil {
						t.Fatal(err)
					}
				},
			}
			if chunk == 0 {
				s.Sizes = []int{16 << 10, 16<<10 + 1, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3 << 20}
			} else {
				s.LargeSize = 100*chunk + 7
				s.Sizes = []int{chunk - 1, chunk, chunk + 1, 2 * chunk, 2*chunk + 1}
			}
			s.Run(t)
		})
	}
}

// TestBadgerUnreadableHeader checks that a blob whose header is damaged is
// a corrupt miss, listed by Blobs with size -1, and can be stored again.
func TestBadgerUnreadableHeader(t *testing.T) {
	ctx := t.Context()
	s := openBadger(t, cache.Options{})
	for _, n := range []int{10, 100000} {
		b := cachetest.Bytes(uint64(n), n)
		d := cachetest.Put(t, s, b)
		if err := cache.DamageBadgerHeader(s, d); err != nil {
			t.Fatal(err)
		}
		if _, err := cachetest.Get(s, d); !errors.Is(err, cache.ErrCorrupt) {
			t.Fatalf("OpenBlob with a damaged header: %v; want ErrCorrupt", err)
		}
		if ok, err := s.HasBlob(ctx, d); ok || err != nil {
			t.Fatalf("HasBlob with a damaged header = %v, %v; want false, nil", ok, err)
		}
		size := int64(0)
		s.Blobs(ctx, func(bd cache.Digest, n int64) error {
			if bd == d {
				size = n
			}
			return nil
		})
		if size != -1 {
			t.Fatalf("Blobs lists a damaged header with size %d, want -1", size)
		}
		cachetest.RoundTrip(t, s, b)
	}
}

// dirState describes every file of dir by size and modification time.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	st := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		st[e.Name()] = fmt.Sprint(info.Size(), info.ModTime().UnixNano())
	}
	return st
}

// TestNoopWritesNothing checks that a run that finds everything cached
// (reads, touches within the hour, records the same snapshots and stat
// entries) leaves the database files as they were.
func TestNoopWritesNothing(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openBadgerDir(t, dir, cache.Options{})
	m := cachetest.NewManifest(t, s, 1, "a")
	now := time.Now()
	m.LastUsed = now
	if err := s.PutManifest(ctx, m); err != nil {
		t.Fatal(err)
	}
	s.PutSnapshot(ctx, m.Stage, []byte("snap"))
	s.PutStat(ctx, "/in", cache.StatEntry{Fingerprint: "fp"})
	s.Close()
	before := dirState(t, filepath.Join(dir, "db"))

	s = openBadgerDir(t, dir, cache.Options{})
	if _, err := s.GetManifest(ctx, m.Key); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		s.TouchManifest(ctx, m.Key, now.Add(30*time.Minute)),
		s.PutSnapshot(ctx, m.Stage, []byte("snap")),
		s.PutStat(ctx, "/in", cache.StatEntry{Fingerprint: "fp"}),
		s.DeleteBlob(ctx, cache.DigestBytes([]byte("absent"))),
		s.DeleteManifest(ctx, cachetest.Key(99)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	cachetest.Put(t, s, []byte("log of 1\n")) // already stored, inline
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after := dirState(t, filepath.Join(dir, "db"))
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("a no-op session changed the database files:\nbefore %v\nafter  %v", before, after)
	}
	// And a real write after the fast read-only open works.
	s = openBadgerDir(t, dir, cache.Options{})
	if err := s.TouchManifest(ctx, m.Key, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetManifest(ctx, m.Key)
	if err != nil || !got.LastUsed.Equal(now.Add(2*time.Hour)) {
		t.Fatalf("after a touch on a reopened store: %v, %v", got, err)
	}
}
