package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"dragonx/cache"
	"dragonx/cache/remote"
)

// liar is a remote that holds real entries but streams an endless body, of
// unknown size, for one blob: a fake "30 GB log". It counts the bytes it
// sent and gives up (with an error) after limit, so that a client without
// a cap fails this test instead of filling the disk.
type liar struct {
	mu      sync.Mutex
	entries map[string][]byte
	endless string // the CAS name streamed without end
	sent    atomic.Int64
	limit   int64
}

func (l *liar) String() string { return "liar" }

func (l *liar) Get(ctx context.Context, a remote.Area, name string) (io.ReadCloser, int64, error) {
	if a == remote.CAS && name == l.endless {
		return io.NopCloser(&endless{l: l}), -1, nil
	}
	l.mu.Lock()
	b, ok := l.entries[string(a)+"/"+name]
	l.mu.Unlock()
	if !ok {
		return nil, 0, remote.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
}

func (l *liar) Stat(ctx context.Context, a remote.Area, name string) (int64, error) {
	if a == remote.CAS && name == l.endless {
		return -1, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.entries[string(a)+"/"+name]
	if !ok {
		return 0, remote.ErrNotFound
	}
	return int64(len(b)), nil
}

func (l *liar) Put(ctx context.Context, a remote.Area, name string, size int64, body remote.Body) error {
	rc, err := body()
	if err != nil {
		return err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries[string(a)+"/"+name] = b
	return nil
}

type endless struct{ l *liar }

func (e *endless) Read(p []byte) (int, error) {
	if e.l.sent.Load() >= e.l.limit {
		return 0, fmt.Errorf("liar: the client read %d bytes of a blob the manifest sizes much smaller", e.l.sent.Load())
	}
	n := copy(p, bytes.Repeat([]byte("x"), min(len(p), 64<<10)))
	e.l.sent.Add(int64(n))
	return n, nil
}

// TestFetchCapsBlobsAtManifestSize pulls an entry whose log (or tree) the
// remote streams without end and without a size: the client must stop
// reading right after the size the manifest records, refuse the entry,
// and leave nothing in the local cache. Before manifests recorded the
// log's size, the client trusted the remote's and read until the stream
// ended.
func TestFetchCapsBlobsAtManifestSize(t *testing.T) {
	for _, which := range []string{"log", "tree"} {
		t.Run(which, func(t *testing.T) {
			ctx := context.Background()
			a := cache.NewMem()
			m := entry(t, a, 1)
			l := &liar{entries: map[string][]byte{}, limit: 64 << 20}
			if _, err := remote.NewClient(l, a, remote.ClientOptions{}).Push(ctx, m.Key); err != nil {
				t.Fatal(err)
			}
			target, size := m.Log, m.LogSize
			if which == "tree" {
				target, size = m.Outputs["tree"].Digest, m.Outputs["tree"].TreeSize
			}
			l.endless = hexOf(target)

			b := openBadger(t)
			_, err := remote.NewClient(l, b, remote.ClientOptions{}).Fetch(ctx, m.Key)
			if !errors.Is(err, cache.ErrCorrupt) {
				t.Fatalf("Fetch of an entry whose %s is endless = %v, want a corrupt miss", which, err)
			}
			// The client reads in chunks: allow one past the cap.
			if sent := l.sent.Load(); sent > size+cache.DefaultChunkSize {
				t.Fatalf("the client read %d bytes of a %s the manifest records as %d bytes", sent, which, size)
			}
			if _, err := b.GetManifest(ctx, m.Key); !errors.Is(err, cache.ErrMiss) {
				t.Fatalf("the refused entry was stored: %v", err)
			}
			if lo, err := b.Leftovers(ctx, false); err != nil || lo.Chunks != 0 {
				t.Fatalf("after the refused fetch Leftovers = %+v, %v; want none", lo, err)
			}
		})
	}
}

func openBadger(t *testing.T) *cache.Badger {
	t.Helper()
	s, err := cache.Open(context.Background(), t.TempDir(), cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPushReplacesOlderManifest checks that a push replaces a remote
// manifest of version 1 (which recorded no log size, and which this dragonx
// treats as a miss) instead of leaving the remote entry unusable for good.
func TestPushReplacesOlderManifest(t *testing.T) {
	ctx := context.Background()
	a := cache.NewMem()
	m := entry(t, a, 1)
	l := &liar{entries: map[string][]byte{}}
	old, err := cache.MarshalManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	old = bytes.Replace(old, fmt.Appendf(nil, `"version": %d`, cache.ManifestVersion), []byte(`"version": 1`), 1)
	l.entries["ac/"+m.Key.String()] = old
	if _, err := remote.NewClient(l, a, remote.ClientOptions{}).Push(ctx, m.Key); err != nil {
		t.Fatal(err)
	}
	b := cache.NewMem()
	got, err := remote.NewClient(l, b, remote.ClientOptions{}).Fetch(ctx, m.Key)
	if err != nil {
		t.Fatalf("Fetch after pushing over a version 1 manifest: %v", err)
	}
	if got.Version != cache.ManifestVersion || got.LogSize != m.LogSize {
		t.Fatalf("the remote's manifest is %+v, want version %d with the log size", got, cache.ManifestVersion)
	}
	// A newer version is left alone.
	newer := bytes.Replace(old, []byte(`"version": 1`), []byte(`"version": 99`), 1)
	l.entries["ac/"+m.Key.String()] = newer
	if _, err := remote.NewClient(l, a, remote.ClientOptions{}).Push(ctx, m.Key); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(l.entries["ac/"+m.Key.String()], newer) {
		t.Fatal("a push replaced a manifest of a newer version")
	}
}

// TestFetchWrongSizeOfLocalBlob fetches an entry whose manifest records
// another size for a blob that the local store already holds (so nothing
// is downloaded to check it against): the entry is a corrupt miss, and no
// manifest is stored.
func TestFetchWrongSizeOfLocalBlob(t *testing.T) {
	ctx := context.Background()
	a := cache.NewMem()
	m := entry(t, a, 1)
	l := &liar{entries: map[string][]byte{}}
	if _, err := remote.NewClient(l, a, remote.ClientOptions{}).Push(ctx, m.Key); err != nil {
		t.Fatal(err)
	}
	bad := *m
	bad.LogSize++
	b, err := cache.MarshalManifest(&bad)
	if err != nil {
		t.Fatal(err)
	}
	l.entries["ac/"+m.Key.String()] = b
	local := cache.NewMem()
	if _, _, err := local.PutBlob(ctx, bytes.NewReader(fmt.Appendf(nil, "log of %d\n", 1))); err != nil {
		t.Fatal(err)
	}
	_, err = remote.NewClient(l, local, remote.ClientOptions{}).Fetch(ctx, m.Key)
	if !errors.Is(err, cache.ErrCorrupt) || !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("Fetch of a manifest with a wrong log size = %v, want a corrupt miss", err)
	}
	if _, err := local.GetManifest(ctx, m.Key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("the manifest was stored: %v", err)
	}
}
