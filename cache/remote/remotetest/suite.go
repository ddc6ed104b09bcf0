// Package remotetest is the conformance suite every remote.Remote must
// pass: the HTTP remote (against a real nginx) and the directory remote
// today.
//
//	func TestDirConformance(t *testing.T) {
//		s := remotetest.Suite{New: func(t *testing.T) remote.Remote { ... }}
//		s.Run(t)
//	}
package remotetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"dragonx/cache/remote"
)

// Suite runs the conformance tests against one Remote implementation.
type Suite struct {
	// New returns a remote that holds nothing.
	New func(t *testing.T) remote.Remote
	// LargeSize is the size of the large entry streamed through Put and
	// Get; 0 means 48 MiB.
	LargeSize int64
}

// Run runs every test of the suite as a subtest of t.
func (s *Suite) Run(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, r remote.Remote)
	}{
		{"RoundTrip", s.testRoundTrip},
		{"Missing", s.testMissing},
		{"AreasApart", s.testAreasApart},
		{"Replace", s.testReplace},
		{"BadNames", s.testBadNames},
		{"FailedBody", s.testFailedBody},
		{"ShortBody", s.testShortBody},
		{"Cancel", s.testCancel},
		{"ConcurrentWriters", s.testConcurrentWriters},
		{"Large", s.testLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, s.New(t))
		})
	}
}

// Name returns the entry name of b in the CAS: its SHA-256 in hex.
func Name(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Bytes returns n deterministic pseudo-random bytes.
func Bytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func put(t *testing.T, r remote.Remote, a remote.Area, name string, b []byte) {
	t.Helper()
	if err := r.Put(context.Background(), a, name, int64(len(b)), remote.BytesBody(b)); err != nil {
		t.Fatalf("Put(%s, %.12s…, %d bytes) = %v", a, name, len(b), err)
	}
}

// get returns the entry's bytes, or fails t.
func get(t *testing.T, r remote.Remote, a remote.Area, name string) []byte {
	t.Helper()
	rc, size, err := r.Get(context.Background(), a, name)
	if err != nil {
		t.Fatalf("Get(%s, %.12s…) = %v", a, name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s/%.12s…: %v", a, name, err)
	}
	if size >= 0 && size != int64(len(b)) {
		t.Fatalf("Get(%s, %.12s…) said %d bytes and returned %d", a, name, size, len(b))
	}
	return b
}

func wantNotFound(t *testing.T, r remote.Remote, a remote.Area, name string) {
	t.Helper()
	ctx := context.Background()
	if rc, _, err := r.Get(ctx, a, name); !errors.Is(err, remote.ErrNotFound) {
		if err == nil {
			rc.Close()
		}
		t.Errorf("Get(%s, %.12s…) = %v, want an error matching ErrNotFound", a, name, err)
	}
	if _, err := r.Stat(ctx, a, name); !errors.Is(err, remote.ErrNotFound) {
		t.Errorf("Stat(%s, %.12s…) = %v, want an error matching ErrNotFound", a, name, err)
	}
}

func (s *Suite) testRoundTrip(t *testing.T, r remote.Remote) {
	ctx := context.Background()
	for i, n := range []int{0, 1, 100, 64 << 10, 3<<20 + 17} {
		b := Bytes(uint64(i), n)
		name := Name(b)
		for _, a := range []remote.Area{remote.CAS, remote.AC} {
			put(t, r, a, name, b)
			if got := get(t, r, a, name); !bytes.Equal(got, b) {
				t.Errorf("Get(%s) after Put of %d bytes returned %d different bytes", a, n, len(got))
			}
			size, err := r.Stat(ctx, a, name)
			if err != nil || (size != int64(n) && size != -1) {
				t.Errorf("Stat(%s) of %d bytes = %d, %v; want %d", a, n, size, err, n)
			}
		}
	}
}

func (s *Suite) testMissing(t *testing.T, r remote.Remote) {
	wantNotFound(t, r, remote.CAS, Name([]byte("never stored")))
	wantNotFound(t, r, remote.AC, Name([]byte("never stored")))
}

func (s *Suite) testAreasApart(t *testing.T, r remote.Remote) {
	b := []byte("only in the cas")
	put(t, r, remote.CAS, Name(b), b)
	wantNotFound(t, r, remote.AC, Name(b))
}

func (s *Suite) testReplace(t *testing.T, r remote.Remote) {
	name := Name([]byte("key"))
	put(t, r, remote.AC, name, []byte("first manifest"))
	put(t, r, remote.AC, name, []byte("second, longer manifest"))
	if got := string(get(t, r, remote.AC, name)); got != "second, longer manifest" {
		t.Errorf("after a second Put, Get = %q", got)
	}
	put(t, r, remote.AC, name, []byte("3rd"))
	if got := string(get(t, r, remote.AC, name)); got != "3rd" {
		t.Errorf("after a shorter Put, Get = %q", got)
	}
}

func (s *Suite) testBadNames(t *testing.T, r remote.Remote) {
	ctx := context.Background()
	good := Name([]byte("x"))
	for _, name := range []string{"", "../" + good[3:], strings.ToUpper(good), good[:63], good + "0", "/" + good[1:], good[:62] + "/x"} {
		if err := r.Put(ctx, remote.CAS, name, 1, remote.BytesBody([]byte("x"))); err == nil {
			t.Errorf("Put(%q) succeeded", name)
		}
		if rc, _, err := r.Get(ctx, remote.CAS, name); err == nil {
			rc.Close()
			t.Errorf("Get(%q) succeeded", name)
		}
		if _, err := r.Stat(ctx, remote.CAS, name); err == nil {
			t.Errorf("Stat(%q) succeeded", name)
		}
	}
	if err := r.Put(ctx, remote.Area("tmp"), good, 1, remote.BytesBody([]byte("x"))); err == nil {
		t.Errorf("Put in an unknown area succeeded")
	}
}

// failingReader returns n bytes, then an error.
type failingReader struct {
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	k := min(len(p), f.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	f.n -= k
	return k, nil
}

func (s *Suite) testFailedBody(t *testing.T, r remote.Remote) {
	boom := errors.New("disk on fire")
	name := Name([]byte("failed body"))
	body := func() (io.ReadCloser, error) {
		return io.NopCloser(&failingReader{n: 1 << 20, err: boom}), nil
	}
	if err := r.Put(context.Background(), remote.CAS, name, 2<<20, body); err == nil {
		t.Fatalf("Put with a body that fails halfway succeeded")
	}
	wantNotFound(t, r, remote.CAS, name)

	// A body whose every byte arrives but whose end is an error (a blob
	// that fails verification at EOF) must not be stored either.
	b := []byte("all the bytes, then a verdict")
	atEnd := func() (io.ReadCloser, error) {
		return io.NopCloser(io.MultiReader(bytes.NewReader(b), &failingReader{err: boom})), nil
	}
	if err := r.Put(context.Background(), remote.CAS, Name(b), int64(len(b)), atEnd); err == nil {
		t.Errorf("Put with a body that fails at its end succeeded")
	}
	wantNotFound(t, r, remote.CAS, Name(b))

	opened := errors.New("cannot open")
	err := r.Put(context.Background(), remote.CAS, name, 10, func() (io.ReadCloser, error) { return nil, opened })
	if !errors.Is(err, opened) {
		t.Errorf("Put with a body that cannot open = %v, want it to wrap %v", err, opened)
	}
	wantNotFound(t, r, remote.CAS, name)
}

func (s *Suite) testShortBody(t *testing.T, r remote.Remote) {
	name := Name([]byte("short"))
	if err := r.Put(context.Background(), remote.CAS, name, 100, remote.BytesBody([]byte("only 20 bytes, not 1"))); err == nil {
		t.Errorf("Put of 20 bytes announced as 100 succeeded")
	}
	wantNotFound(t, r, remote.CAS, name)
	if err := r.Put(context.Background(), remote.CAS, name, 5, remote.BytesBody([]byte("more than five bytes"))); err == nil {
		t.Errorf("Put of 20 bytes announced as 5 succeeded")
	}
	wantNotFound(t, r, remote.CAS, name)
}

func (s *Suite) testCancel(t *testing.T, r remote.Remote) {
	ctx, cancel := context.WithCancel(context.Background())
	name := Name([]byte("cancelled"))
	body := func() (io.ReadCloser, error) {
		return io.NopCloser(&cancellingReader{n: 4 << 20, cancelAt: 1 << 20, cancel: cancel}), nil
	}
	if err := r.Put(ctx, remote.CAS, name, 4<<20, body); err == nil {
		t.Fatalf("Put cancelled halfway succeeded")
	}
	wantNotFound(t, r, remote.CAS, name)
	if rc, _, err := r.Get(ctx, remote.CAS, name); err == nil {
		rc.Close()
		t.Errorf("Get with a cancelled context succeeded")
	}
}

// cancellingReader returns n bytes and calls cancel after cancelAt.
type cancellingReader struct {
	n, done, cancelAt int
	cancel            func()
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	if c.done >= c.n {
		return 0, io.EOF
	}
	k := min(len(p), c.n-c.done, 32<<10)
	c.done += k
	if c.done >= c.cancelAt {
		c.cancel()
	}
	return k, nil
}

// testConcurrentWriters has several writers put the same entry while
// readers read it: every read sees one writer's complete bytes.
func (s *Suite) testConcurrentWriters(t *testing.T, r remote.Remote) {
	ctx := context.Background()
	const writers, rounds = 4, 5
	name := Name([]byte("contended"))
	versions := make([][]byte, writers)
	valid := map[string]bool{}
	for i := range versions {
		versions[i] = Bytes(uint64(100+i), 256<<10)
		valid[Name(versions[i])] = true
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	stop := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := r.Put(ctx, remote.AC, name, int64(len(versions[i])), remote.BytesBody(versions[i])); err != nil {
					errs <- fmt.Errorf("writer %d: %w", i, err)
					return
				}
			}
		}()
	}
	var rg sync.WaitGroup
	for i := range 2 {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				rc, _, err := r.Get(ctx, remote.AC, name)
				if errors.Is(err, remote.ErrNotFound) {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", i, err)
					return
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", i, err)
					return
				}
				if !valid[Name(b)] {
					errs <- fmt.Errorf("reader %d saw %d bytes that no writer wrote whole", i, len(b))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !valid[Name(get(t, r, remote.AC, name))] {
		t.Errorf("the final entry is no writer's bytes")
	}
}

// streamReader returns n deterministic bytes without holding them.
type streamReader struct {
	n, done int64
	x       uint64
}

func (s *streamReader) Read(p []byte) (int, error) {
	if s.done >= s.n {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), s.n-s.done))
	for i := range p[:k] {
		s.x = s.x*6364136223846793005 + 1442695040888963407
		p[i] = byte(s.x >> 56)
	}
	s.done += int64(k)
	return k, nil
}

func (s *Suite) testLarge(t *testing.T, r remote.Remote) {
	size := s.LargeSize
	if size == 0 {
		size = 48 << 20
	}
	h := sha256.New()
	io.Copy(h, &streamReader{n: size, x: 7})
	name := hex.EncodeToString(h.Sum(nil))
	ctx := context.Background()
	body := func() (io.ReadCloser, error) { return io.NopCloser(&streamReader{n: size, x: 7}), nil }
	if err := r.Put(ctx, remote.CAS, name, size, body); err != nil {
		t.Fatalf("Put of %d bytes: %v", size, err)
	}
	rc, n, err := r.Get(ctx, remote.CAS, name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h.Reset()
	got, err := io.Copy(h, rc)
	if err != nil || got != size || (n != size && n != -1) {
		t.Fatalf("Get of %d bytes: said %d, read %d, %v", size, n, got, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != name {
		t.Errorf("Get of %d bytes returned other bytes", size)
	}
}
