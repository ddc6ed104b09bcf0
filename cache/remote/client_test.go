package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/cache/cachetest"
	"dragonx/cache/remote"
	"dragonx/internal/nginxtest"
	"dragonx/internal/progress"
)

// entry stores, in st, a stage result with a file output, a directory
// output (a tree of files, one of them large enough to stream) and a log,
// and returns its manifest.
func entry(t *testing.T, st cache.Store, n int) *cache.Manifest {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tree", "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "tree", "a.txt"), fmt.Appendf(nil, "a of %d\n", n), 0o644)
	os.WriteFile(filepath.Join(dir, "tree", "sub", "big.bin"), cachetest.Bytes(uint64(n), 3<<20), 0o644)
	os.Symlink("a.txt", filepath.Join(dir, "tree", "link"))
	os.WriteFile(filepath.Join(dir, "file.txt"), fmt.Appendf(nil, "file of %d\n", n), 0o644)
	m := &cache.Manifest{
		Version: cache.ManifestVersion, Key: cachetest.Key(n), Stage: fmt.Sprintf("stage.s%d", n),
		Kind: "exec", KindVersion: "1", Outputs: map[string]cache.Output{},
		Started: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Duration: time.Second, Host: "h", Tool: "t",
	}
	for _, o := range []string{"tree", "file.txt"} {
		out, err := cache.PutPath(ctx, st, filepath.Join(dir, o))
		if err != nil {
			t.Fatal(err)
		}
		m.Outputs[strings.TrimSuffix(o, ".txt")] = out
	}
	m.Log = cachetest.Put(t, st, fmt.Appendf(nil, "log of %d\n", n))
	if err := st.PutManifest(ctx, m); err != nil {
		t.Fatal(err)
	}
	m, err := st.GetManifest(ctx, m.Key) // with the sizes PutManifest filled in
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// reached returns every blob m reaches in st.
func reached(t *testing.T, st cache.Store, m *cache.Manifest) []cache.Digest {
	t.Helper()
	ds := []cache.Digest{m.Log}
	for _, o := range m.Outputs {
		ds = append(ds, o.Digest)
		if o.Tree {
			tr, err := cache.ReadTree(context.Background(), st, o.Digest)
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, tr.Blobs()...)
		}
	}
	return ds
}

// blobCount returns how many blobs st holds.
func blobCount(t *testing.T, st cache.Store) int {
	t.Helper()
	n := 0
	if err := st.Blobs(context.Background(), func(cache.Digest, int64) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func hexOf(d cache.Digest) string { return strings.TrimPrefix(d.String(), cache.DigestPrefix) }

// remotes are the Remote implementations the client tests run against.
func remotes(t *testing.T) []struct {
	name string
	r    remote.Remote
	root string
} {
	out := []struct {
		name string
		r    remote.Remote
		root string
	}{}
	root := t.TempDir()
	out = append(out, struct {
		name string
		r    remote.Remote
		root string
	}{"dir", remote.NewDir(root), root})
	if nginxtest.Binary() != "" {
		s := nginxtest.StartT(t)
		r, err := remote.Open(s.URL, remote.Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, struct {
			name string
			r    remote.Remote
			root string
		}{"nginx", r, s.Root})
	} else {
		t.Log(nginxtest.SkipMessage)
	}
	return out
}

func TestClientPushFetch(t *testing.T) {
	ctx := context.Background()
	for _, rm := range remotes(t) {
		t.Run(rm.name, func(t *testing.T) {
			a, b := cache.NewMem(), cache.NewMem()
			m := entry(t, a, 1)
			ca := remote.NewClient(rm.r, a, remote.ClientOptions{})
			pushed, err := ca.Push(ctx, m.Key)
			if err != nil || !pushed {
				t.Fatalf("Push = %v, %v; want true, nil", pushed, err)
			}
			s := ca.Stats()
			// The blobs: the file, the tree, its two files, the log.
			if s.Pushed != 1 || s.BlobsUp != 5 || s.BytesUp < 3<<20 {
				t.Errorf("Stats after a push = %+v, want 1 entry and 5 blobs of over 3 MiB", s)
			}
			// A second client (a later run) finds everything there.
			if pushed, err := remote.NewClient(rm.r, a, remote.ClientOptions{}).Push(ctx, m.Key); err != nil || pushed {
				t.Errorf("second Push = %v, %v; want false, nil", pushed, err)
			}

			cb := remote.NewClient(rm.r, b, remote.ClientOptions{Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
			lm, err := cb.Lookup(ctx, m.Key)
			if err != nil {
				t.Fatalf("Lookup = %v", err)
			}
			cachetest.SameManifest(t, lm, m)
			if n := blobCount(t, b); n != 0 {
				t.Errorf("Lookup stored %d blobs locally, want none", n)
			}
			got, err := cb.Fetch(ctx, m.Key)
			if err != nil {
				t.Fatalf("Fetch = %v", err)
			}
			want := *m
			want.LastUsed = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			cachetest.SameManifest(t, got, &want)
			stored, err := b.GetManifest(ctx, m.Key)
			if err != nil {
				t.Fatal(err)
			}
			cachetest.SameManifest(t, stored, &want)
			for _, d := range reached(t, b, stored) {
				x, err := cachetest.Get(b, d)
				y, _ := cachetest.Get(a, d)
				if err != nil || !bytes.Equal(x, y) {
					t.Errorf("blob %s in the second cache: %v", d.Short(), err)
				}
			}
			dst := filepath.Join(t.TempDir(), "tree")
			if err := cache.Materialize(ctx, b, stored.Outputs["tree"], dst); err != nil {
				t.Fatal(err)
			}
			if l, err := os.Readlink(filepath.Join(dst, "link")); err != nil || l != "a.txt" {
				t.Errorf("the pulled tree's link: %q, %v", l, err)
			}
			if s := cb.Stats(); s.Pulled != 1 || s.BlobsDown != 5 {
				t.Errorf("Stats after a fetch = %+v, want 1 entry, 5 blobs", s)
			}
			e, err := cb.Inspect(ctx, m.Key)
			if err != nil || !e.Complete() || e.Blobs != 5 || e.Size < 3<<20 {
				t.Errorf("Inspect = %+v, %v; want complete, 5 blobs", e, err)
			}
		})
	}
}

func TestClientMiss(t *testing.T) {
	ctx := context.Background()
	c := remote.NewClient(remote.NewDir(t.TempDir()), cache.NewMem(), remote.ClientOptions{})
	for name, f := range map[string]func() error{
		"Fetch":   func() error { _, err := c.Fetch(ctx, cachetest.Key(9)); return err },
		"Lookup":  func() error { _, err := c.Lookup(ctx, cachetest.Key(9)); return err },
		"Inspect": func() error { _, err := c.Inspect(ctx, cachetest.Key(9)); return err },
	} {
		err := f()
		var me *cache.MissError
		if !errors.As(err, &me) || me.Reason != nil {
			t.Errorf("%s of an absent entry = %v, want a plain miss", name, err)
		}
	}
	if _, err := c.Push(ctx, cachetest.Key(9)); !errors.Is(err, cache.ErrMiss) {
		t.Errorf("Push of an entry the local cache lacks = %v, want a miss", err)
	}
}

// TestClientCorruptBlob: a blob whose bytes on the remote do not match its
// digest makes Fetch a corrupt miss; nothing enters the local store; a
// Push by the same client replaces the bad copy.
func TestClientCorruptBlob(t *testing.T) {
	ctx := context.Background()
	for _, rm := range remotes(t) {
		t.Run(rm.name, func(t *testing.T) {
			a, b := cache.NewMem(), cache.NewMem()
			m := entry(t, a, 2)
			if _, err := remote.NewClient(rm.r, a, remote.ClientOptions{}).Push(ctx, m.Key); err != nil {
				t.Fatal(err)
			}
			tr, _ := cache.ReadTree(ctx, a, m.Outputs["tree"].Digest)
			var big cache.Digest
			for _, e := range tr.Entries {
				if e.Size > 1<<20 {
					big = e.Digest
				}
			}
			p := filepath.Join(rm.root, "cas", hexOf(big))
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			raw[len(raw)-1] ^= 1 // the very last byte: verification must come at the end
			os.WriteFile(p, raw, 0o644)

			cb := remote.NewClient(rm.r, b, remote.ClientOptions{})
			_, err = cb.Fetch(ctx, m.Key)
			if !errors.Is(err, cache.ErrMiss) || !errors.Is(err, cache.ErrCorrupt) {
				t.Fatalf("Fetch with a corrupt blob = %v, want a corrupt miss", err)
			}
			if !strings.Contains(err.Error(), big.String()) {
				t.Errorf("the error does not name the blob %s: %v", big, err)
			}
			if ok, _ := b.HasBlob(ctx, big); ok {
				t.Errorf("the corrupt blob entered the local store")
			}
			if _, err := b.GetManifest(ctx, m.Key); err == nil {
				t.Errorf("the manifest entered the local store")
			}
			if n, _ := cache.Verify(ctx, b, cache.VerifyOptions{}); !n.OK() {
				t.Errorf("the local store has problems: %v", n.Problems)
			}
			// b holds the blob now (it ran the stage, say) and pushes:
			// the client knows the remote's copy is bad and replaces it.
			cachetest.Put(t, b, cachetest.Bytes(2, 3<<20))
			for _, d := range reached(t, a, m) {
				x, _ := cachetest.Get(a, d)
				cachetest.Put(t, b, x)
			}
			if err := b.PutManifest(ctx, m); err != nil {
				t.Fatal(err)
			}
			if pushed, err := cb.Push(ctx, m.Key); err != nil || !pushed {
				t.Fatalf("Push after finding a corrupt blob = %v, %v; want it to upload the blob again", pushed, err)
			}
			if _, err := remote.NewClient(rm.r, cache.NewMem(), remote.ClientOptions{}).Fetch(ctx, m.Key); err != nil {
				t.Errorf("Fetch after the repair = %v", err)
			}
		})
	}
}

// TestClientIncomplete: a manifest whose blob the remote lacks is a miss
// found before any download, and Push completes it.
func TestClientIncomplete(t *testing.T) {
	ctx := context.Background()
	for _, rm := range remotes(t) {
		t.Run(rm.name, func(t *testing.T) {
			a, b := cache.NewMem(), cache.NewMem()
			m := entry(t, a, 3)
			ca := remote.NewClient(rm.r, a, remote.ClientOptions{})
			if _, err := ca.Push(ctx, m.Key); err != nil {
				t.Fatal(err)
			}
			gone := m.Outputs["file"].Digest
			if err := os.Remove(filepath.Join(rm.root, "cas", hexOf(gone))); err != nil {
				t.Fatal(err)
			}
			cb := remote.NewClient(rm.r, b, remote.ClientOptions{})
			_, err := cb.Fetch(ctx, m.Key)
			if !errors.Is(err, remote.ErrIncomplete) || !errors.Is(err, cache.ErrMiss) {
				t.Fatalf("Fetch of an incomplete entry = %v, want an incomplete miss", err)
			}
			if n := blobCount(t, b); n != 0 {
				t.Errorf("Fetch of an incomplete entry downloaded %d blobs, want none", n)
			}
			e, err := cb.Inspect(ctx, m.Key)
			if err != nil || len(e.Missing) != 1 || e.Missing[0] != gone {
				t.Errorf("Inspect = %+v, %v; want %s missing", e, err, gone.Short())
			}
			// A later push (another run) completes the entry.
			if pushed, err := remote.NewClient(rm.r, a, remote.ClientOptions{}).Push(ctx, m.Key); err != nil || !pushed {
				t.Fatalf("Push of an entry the remote holds incomplete = %v, %v", pushed, err)
			}
			if _, err := remote.NewClient(rm.r, b, remote.ClientOptions{}).Fetch(ctx, m.Key); err != nil {
				t.Errorf("Fetch after the push = %v", err)
			}
		})
	}
}

func TestClientBadManifest(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	r := remote.NewDir(root)
	a := cache.NewMem()
	m := entry(t, a, 4)
	if _, err := remote.NewClient(r, a, remote.ClientOptions{}).Push(ctx, m.Key); err != nil {
		t.Fatal(err)
	}
	other := entry(t, a, 5)
	good, _ := cache.MarshalManifest(other)
	huge := bytes.Repeat([]byte(" "), 2<<20)
	for _, c := range []struct {
		name    string
		b       []byte
		corrupt bool
	}{
		{"garbage", []byte("not json"), true},
		{"another key", good, true},
		{"too large", huge, true},
		{"newer version", []byte(`{"version": 99}`), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := r.Put(ctx, remote.AC, m.Key.String(), int64(len(c.b)), remote.BytesBody(c.b)); err != nil {
				t.Fatal(err)
			}
			b := cache.NewMem()
			_, err := remote.NewClient(r, b, remote.ClientOptions{}).Fetch(ctx, m.Key)
			if !errors.Is(err, cache.ErrMiss) || errors.Is(err, cache.ErrCorrupt) != c.corrupt {
				t.Errorf("Fetch = %v; want a miss, corrupt %v", err, c.corrupt)
			}
			if n := blobCount(t, b); n != 0 {
				t.Errorf("Fetch stored %d blobs", n)
			}
		})
	}
}

// badStore is a store whose blob bad reads back with one byte changed
// (and so fails verification at its very end), as a failing disk would.
type badStore struct {
	cache.Store
	bad cache.Digest
}

func (s *badStore) OpenBlob(ctx context.Context, d cache.Digest) (io.ReadCloser, int64, error) {
	if d != s.bad {
		return s.Store.OpenBlob(ctx, d)
	}
	b, err := cachetest.Get(s.Store, d)
	if err != nil {
		return nil, 0, err
	}
	b[0] ^= 1
	return io.NopCloser(cache.VerifyingReader(bytes.NewReader(b), d, int64(len(b)))), int64(len(b)), nil
}

// TestClientPushCorruptLocal: a local blob that fails verification is not
// completed on the remote (the upload withholds its last bytes until the
// verdict), and the manifest is not pushed.
func TestClientPushCorruptLocal(t *testing.T) {
	ctx := context.Background()
	for _, rm := range remotes(t) {
		t.Run(rm.name, func(t *testing.T) {
			mem := cache.NewMem()
			m := entry(t, mem, 6)
			tr, _ := cache.ReadTree(ctx, mem, m.Outputs["tree"].Digest)
			var big cache.Digest
			for _, e := range tr.Entries {
				if e.Size > 1<<20 {
					big = e.Digest
				}
			}
			st := &badStore{Store: mem, bad: big}
			_, err := remote.NewClient(rm.r, st, remote.ClientOptions{Jobs: 1}).Push(ctx, m.Key)
			if !errors.Is(err, cache.ErrCorrupt) {
				t.Fatalf("Push of a corrupt local blob = %v, want a corrupt error", err)
			}
			if _, err := rm.r.Stat(ctx, remote.CAS, hexOf(big)); !errors.Is(err, remote.ErrNotFound) {
				t.Errorf("the corrupt blob is on the remote: Stat = %v", err)
			}
			if _, err := rm.r.Stat(ctx, remote.AC, m.Key.String()); !errors.Is(err, remote.ErrNotFound) {
				t.Errorf("the manifest is on the remote: Stat = %v", err)
			}
		})
	}
}

// TestClientProgress: a large transfer reports its bytes, ending at the
// total.
func TestClientProgress(t *testing.T) {
	ctx := context.Background()
	r := remote.NewDir(t.TempDir())
	a := cache.NewMem()
	m := entry(t, a, 7)
	var mu sync.Mutex
	var evs []progress.Event
	rep := progress.Func(func(e progress.Event) {
		mu.Lock()
		evs = append(evs, e)
		mu.Unlock()
	})
	if _, err := remote.NewClient(r, a, remote.ClientOptions{Progress: rep, ProgressMin: 1 << 20}).Push(ctx, m.Key); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(evs) < 2 {
			t.Fatalf("%s reported %d progress events", what, len(evs))
		}
		last := evs[len(evs)-1]
		if last.Done != last.Total || last.Total < 3<<20 || last.Unit != "B" || !strings.Contains(last.Note, "stage.s7") {
			t.Errorf("%s: last progress event %+v, want Done = Total > 3 MiB, in B, naming the stage", what, last)
		}
		evs = nil
	}
	check("Push")
	if _, err := remote.NewClient(r, cache.NewMem(), remote.ClientOptions{Progress: rep, ProgressMin: 1 << 20}).Fetch(ctx, m.Key); err != nil {
		t.Fatal(err)
	}
	check("Fetch")
	// Below ProgressMin, nothing.
	if _, err := remote.NewClient(r, cache.NewMem(), remote.ClientOptions{Progress: rep}).Fetch(ctx, m.Key); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(evs) != 0 {
		t.Errorf("a transfer below ProgressMin reported %d events", len(evs))
	}
	mu.Unlock()
}
