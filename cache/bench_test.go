package cache_test

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/cache/cachetest"
)

// BenchmarkNoopRerun measures what a no-op rerun of a 7-stage experiment
// asks of the cache: Open (lock, Badger), one GetManifest, TouchManifest
// (within the hour: no write) and GetSnapshot per stage, one GetStat for a
// local input, and Close. Its goal is a small part of the 0.05 s budget of a
// whole no-op run.
func BenchmarkNoopRerun(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s, err := cache.Open(ctx, dir, cache.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var keys []cache.Key
	now := time.Now()
	for i := range 7 {
		m := cachetest.NewManifest(b, s, i, "out", "aux")
		m.LastUsed = now
		if err := s.PutManifest(ctx, m); err != nil {
			b.Fatal(err)
		}
		if err := s.PutSnapshot(ctx, m.Stage, []byte(`{"n":1}`)); err != nil {
			b.Fatal(err)
		}
		keys = append(keys, m.Key)
	}
	if err := s.PutStat(ctx, "/data/in.csv", cache.StatEntry{Fingerprint: "x"}); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		s, err := cache.Open(ctx, dir, cache.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range keys {
			m, err := s.GetManifest(ctx, k)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.TouchManifest(ctx, k, now); err != nil {
				b.Fatal(err)
			}
			if _, err := s.GetSnapshot(ctx, m.Stage); err != nil {
				b.Fatal(err)
			}
		}
		if _, ok, err := s.GetStat(ctx, "/data/in.csv"); err != nil || !ok {
			b.Fatal(ok, err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSize is the size of the file and blobs the throughput benchmarks
// use: large enough that per-call costs vanish, small enough for /tmp.
const benchSize = 256 << 20

// BenchmarkHashFile measures HashFile (SHA-256 of a file read with large
// buffers) on a file in the page cache. Goal: >= 1 GB/s.
func BenchmarkHashFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(f, &uniqueReader{n: benchSize, seed: 1}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	want, _, err := cache.HashFile(context.Background(), path) // warms the page cache
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchSize)
	b.ResetTimer()
	for b.Loop() {
		d, n, err := cache.HashFile(context.Background(), path)
		if err != nil || n != benchSize || d != want {
			b.Fatal(d, n, err)
		}
	}
}

// BenchmarkPutBlob measures streaming a new (never stored) 256 MiB blob
// into Badger: hashing, chunking and the value-log writes.
func BenchmarkPutBlob(b *testing.B) {
	s := openBadger(b, cache.Options{})
	ctx := context.Background()
	b.SetBytes(benchSize)
	seed := uint64(0)
	for b.Loop() {
		seed++
		if _, n, err := s.PutBlob(ctx, &uniqueReader{n: benchSize, seed: seed}); err != nil || n != benchSize {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkOpenBlob measures reading a 256 MiB blob back from Badger,
// verifying its digest.
func BenchmarkOpenBlob(b *testing.B) {
	s := openBadger(b, cache.Options{})
	ctx := context.Background()
	d, _, err := s.PutBlob(ctx, &uniqueReader{n: benchSize, seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(benchSize)
	b.ResetTimer()
	for b.Loop() {
		rc, _, err := s.OpenBlob(ctx, d)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.CopyBuffer(io.Discard, rc, buf)
		rc.Close()
		if err != nil || n != benchSize {
			b.Fatal(n, err)
		}
	}
}

// uniqueReader yields n bytes: a fixed pseudo-random 1 MiB pattern with
// seed and offset stamped into every 4 KiB, so that every blob (and every
// chunk) differs while producing bytes costs only a copy.
type uniqueReader struct {
	n, off  int
	seed    uint64
	pattern []byte
}

func (u *uniqueReader) Read(p []byte) (int, error) {
	if u.off >= u.n {
		return 0, io.EOF
	}
	if u.pattern == nil {
		u.pattern = cachetest.Bytes(99, 1<<20)
	}
	k := min(len(p), u.n-u.off)
	for i := 0; i < k; {
		pos := (u.off + i) % len(u.pattern)
		c := copy(p[i:k], u.pattern[pos:])
		i += c
	}
	for i := 0; i < k; i++ {
		if (u.off+i)%4096 == 0 && i+16 <= k {
			binary.LittleEndian.PutUint64(p[i:], u.seed)
			binary.LittleEndian.PutUint64(p[i+8:], uint64(u.off+i))
		}
	}
	u.off += k
	return k, nil
}
