package cache_test

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/cache/cachetest"
)

// TestLargeBlobStreams stores and reads back a blob far larger than the
// heap it may use: PutBlob and OpenBlob must stream. It uses 128 MiB;
// DRAGONX_CACHE_HEAVY=1 makes it the 2 GiB of the design (make bench).
func TestLargeBlobStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 128 MiB")
	}
	size := 128 << 20
	if os.Getenv("DRAGONX_CACHE_HEAVY") == "1" {
		size = 2 << 30
	}
	const limit = 48 << 20 // a few chunks in flight, Badger's memtable, slack
	ctx := context.Background()
	s := openBadger(t, cache.Options{})
	stop := cachetest.HeapPeak()
	start := time.Now()
	d, n, err := s.PutBlob(ctx, &uniqueReader{n: size, seed: 7})
	put := time.Since(start)
	peak := stop()
	if err != nil || n != int64(size) {
		t.Fatalf("PutBlob(%d bytes) = %d, %v", size, n, err)
	}
	t.Logf("PutBlob: %d MiB in %v (%.0f MB/s), heap peak +%d MiB", size>>20, put.Round(time.Millisecond), float64(size)/put.Seconds()/1e6, peak>>20)
	if peak > limit {
		t.Fatalf("PutBlob of %d MiB grew the heap by %d MiB, want at most %d: it does not stream", size>>20, peak>>20, limit>>20)
	}

	stop = cachetest.HeapPeak()
	start = time.Now()
	rc, _, err := s.OpenBlob(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.Copy(io.Discard, rc)
	rc.Close()
	read := time.Since(start)
	peak = stop()
	if err != nil || got != int64(size) {
		t.Fatalf("reading back: %d bytes, %v", got, err)
	}
	t.Logf("OpenBlob: %d MiB in %v (%.0f MB/s), heap peak +%d MiB", size>>20, read.Round(time.Millisecond), float64(size)/read.Seconds()/1e6, peak>>20)
	if peak > limit {
		t.Fatalf("reading %d MiB grew the heap by %d MiB, want at most %d", size>>20, peak>>20, limit>>20)
	}
}
