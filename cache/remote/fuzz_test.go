package remote_test

import (
	"context"
	"errors"
	"testing"

	"dragonx/cache"
	"dragonx/cache/cachetest"
	"dragonx/cache/remote"
)

// FuzzFetchManifest puts arbitrary bytes where a remote keeps a stage's
// manifest and fetches it: the result is a miss, or a manifest under the
// right key whose every blob is then in the local store. Never a panic,
// never a manifest with missing blobs.
func FuzzFetchManifest(f *testing.F) {
	src := cache.NewMem()
	seedManifest := cachetest.NewManifest(f, src, 1, "out")
	if err := src.PutManifest(context.Background(), seedManifest); err != nil {
		f.Fatal(err)
	}
	good, err := cache.MarshalManifest(seedManifest)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version": 1, "key": "` + seedManifest.Key.String() + `", "outputs": {"x": {"digest": "sha256:` + hexOf(cache.DigestBytes([]byte("none"))) + `", "size": 4, "tree": true}}}`))
	f.Add([]byte(`{"version": 2}`))
	f.Add([]byte("\x00\xff"))
	root := f.TempDir()
	r := remote.NewDir(root)
	ctx := context.Background()
	if _, err := remote.NewClient(r, src, remote.ClientOptions{}).Push(ctx, seedManifest.Key); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k := seedManifest.Key
		if err := r.Put(ctx, remote.AC, k.String(), int64(len(b)), remote.BytesBody(b)); err != nil {
			t.Fatal(err)
		}
		dst := cache.NewMem()
		m, err := remote.NewClient(r, dst, remote.ClientOptions{}).Fetch(ctx, k)
		if err != nil {
			if !errors.Is(err, cache.ErrMiss) {
				t.Fatalf("Fetch = %v, want a miss or a manifest", err)
			}
			if _, err := dst.GetManifest(ctx, k); err == nil {
				t.Fatalf("a failed Fetch stored a manifest")
			}
			return
		}
		if m.Key != k {
			t.Fatalf("Fetch returned the manifest of %s, want %s", m.Key, k)
		}
		rep, err := cache.Verify(ctx, dst, cache.VerifyOptions{})
		if err != nil || !rep.OK() {
			t.Fatalf("after Fetch the local store has problems: %v %v", err, rep.Problems)
		}
	})
}
