package cache_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/cache/cachetest"
)

// abortAfter yields pseudo-random bytes; after n of them it calls stop
// (which cancels the put's context) or fails with err.
type abortAfter struct {
	n, done int
	stop    func()
	err     error
}

func (r *abortAfter) Read(p []byte) (int, error) {
	if r.done >= r.n {
		if r.stop != nil {
			r.stop()
		} else {
			return 0, r.err
		}
	}
	k := min(len(p), 1<<20)
	copy(p, cachetest.Bytes(uint64(r.done), k))
	r.done += k
	return k, nil
}

// TestAbortedPutLeavesNothing interrupts a large PutBlob (Ctrl-C cancels
// its context; a remote's bytes are rejected mid-stream) and checks that
// the aborted write leaves no chunk behind and that the space it took is
// given back: by the abort itself or, at the latest, by GC. Before, the
// chunks were deleted one tombstone at a time, which hid them from GC's
// sweep and from Verify while their bytes stayed in the value log: the
// disk use never went down.
func TestAbortedPutLeavesNothing(t *testing.T) {
	const size = 40 << 20
	for _, tc := range []struct {
		name   string
		reader func(cancel func()) io.Reader
		want   error
	}{
		{"cancel", func(cancel func()) io.Reader { return &abortAfter{n: size, stop: cancel} }, context.Canceled},
		{"rejected", func(func()) io.Reader { return &abortAfter{n: size, err: cache.ErrCorrupt} }, cache.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := cache.Options{}
			cache.SmallValueLogs(&opts)
			s := openBadger(t, opts)
			m := cachetest.NewManifest(t, s, 1)
			keep := cachetest.Put(t, s, cachetest.Bytes(1, 3<<20))
			m.Outputs["big"] = cache.Output{Digest: keep, Size: 3 << 20}
			if err := s.PutManifest(t.Context(), m); err != nil {
				t.Fatal(err)
			}
			base, err := s.DiskSize()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			_, _, err = s.PutBlob(ctx, tc.reader(cancel))
			cancel()
			if !errors.Is(err, tc.want) {
				t.Fatalf("PutBlob = %v, want %v", err, tc.want)
			}
			lo, err := s.Leftovers(t.Context(), false)
			if err != nil || lo.Chunks != 0 {
				t.Fatalf("after the aborted put Leftovers = %+v, %v; want no chunk left", lo, err)
			}
			gc, err := cache.GC(t.Context(), s, cache.GCOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("disk: %d before the put, %d after it, %d after gc", base, gc.DiskBefore, gc.DiskAfter)
			// The newest value-log file (4 MiB here) is never rewritten.
			if gc.DiskAfter > base+10<<20 {
				t.Fatalf("after an aborted %d-byte put and gc the cache takes %d bytes, %d before the put: the space was never given back", size, gc.DiskAfter, base)
			}
			rep, err := cache.Verify(t.Context(), s, cache.VerifyOptions{})
			if err != nil || !rep.OK() || rep.Leftovers.Chunks != 0 {
				t.Fatalf("Verify after gc = %+v, %v", rep, err)
			}
			if _, err := cachetest.Get(s, keep); err != nil {
				t.Fatalf("the blob stored before is gone: %v", err)
			}
		})
	}
}

// slowReader yields n pseudo-random bytes slowly, and closes started once
// it has begun.
type slowReader struct {
	n, done int
	started chan struct{}
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.done == 0 {
		close(r.started)
	}
	if r.done >= r.n {
		return 0, io.EOF
	}
	time.Sleep(5 * time.Millisecond)
	k := min(len(p), r.n-r.done, 256<<10)
	copy(p, cachetest.Bytes(uint64(r.done), k))
	r.done += k
	return k, nil
}

// TestAbortWhileAnotherPutRuns aborts a put while another one is still
// writing chunks and manifests are written: dropping the aborted chunks
// (which blocks Badger's writes) must wait for the other writes instead of
// failing them, and must still happen once they are done.
func TestAbortWhileAnotherPutRuns(t *testing.T) {
	ctx := t.Context()
	s := openBadger(t, cache.Options{ChunkSize: 64 << 10})
	slow := &slowReader{n: 8 << 20, started: make(chan struct{})}
	var wg sync.WaitGroup
	var slowErr error
	var slowD cache.Digest
	wg.Add(1)
	go func() {
		defer wg.Done()
		slowD, _, slowErr = s.PutBlob(ctx, slow)
	}()
	<-slow.started
	for i := range 5 {
		_, _, err := s.PutBlob(ctx, &abortAfter{n: 1 << 20, err: cache.ErrCorrupt})
		if !errors.Is(err, cache.ErrCorrupt) {
			t.Fatalf("aborted put = %v", err)
		}
		m := cachetest.NewManifest(t, s, i, "a")
		if err := s.PutManifest(ctx, m); err != nil {
			t.Fatalf("PutManifest while a put runs and another was aborted: %v", err)
		}
	}
	wg.Wait()
	if slowErr != nil {
		t.Fatalf("the put that ran beside the aborted ones failed: %v", slowErr)
	}
	if b, err := cachetest.Get(s, slowD); err != nil || len(b) != 8<<20 {
		t.Fatalf("the blob put beside the aborted ones reads back %d bytes, %v", len(b), err)
	}
	lo, err := s.Leftovers(ctx, false)
	if err != nil || lo.Chunks != 0 {
		t.Fatalf("after the last put ended, the aborted puts left %+v, %v", lo, err)
	}
}
