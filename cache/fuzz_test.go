package cache_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/cache/cachetest"
)

// FuzzRoundTrip puts arbitrary bytes into both stores and reads them back
// (cachetest.RoundTrip): the bytes, the digest and the listings must agree.
// The Badger store uses 1000-byte chunks so that short inputs cross chunk
// boundaries; the seed corpus in testdata/fuzz/FuzzRoundTrip covers the
// empty blob, the inline limit and chunk boundaries.
func FuzzRoundTrip(f *testing.F) {
	mem := cache.NewMem()
	bdg := openBadger(f, cache.Options{ChunkSize: 1000})
	f.Add([]byte("hello"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cachetest.RoundTrip(t, mem, b)
		cachetest.RoundTrip(t, bdg, b)
	})
}

// importSource builds the entries the import fuzz targets start from: a
// stage with a file output, a tree output (every kind of tree entry, a
// chunked file) and a log, in a source store.
func importSource(f *testing.F) (cache.Store, *cache.Manifest) {
	src := cache.NewMem()
	m := putStage(f, src, 1, makeTestDir(f), time.Now())
	m, err := src.GetManifest(context.Background(), m.Key)
	if err != nil {
		f.Fatal(err)
	}
	return src, m
}

// FuzzImportBundle imports arbitrary bytes as a bundle (checkImport).
func FuzzImportBundle(f *testing.F) {
	src, m := importSource(f)
	good := bundleOf(f, src, m.Key)
	f.Add(good)
	f.Add(good[:1024])           // cut after the VERSION entry
	f.Add(good[:len(good)/2])    // cut in the middle of a blob
	f.Add(good[:len(good)-1024]) // no end-of-archive blocks
	f.Add([]byte{})
	f.Add(editManifest(f, good, func(m *cache.Manifest) { m.LogSize = 30 << 30 }))
	f.Add(editManifest(f, good, func(m *cache.Manifest) { delete(m.Outputs, "file") }))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkImport(t, b)
	})
}

// FuzzImportManifest imports a bundle that holds every blob of a real
// entry and, as its manifest, arbitrary bytes (checkImport): the fuzzer
// reaches the checks past the tar layer at once.
func FuzzImportManifest(f *testing.F) {
	src, m := importSource(f)
	good := bundleOf(f, src, m.Key)
	mb, err := cache.MarshalManifest(m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(mb)
	f.Add(bytes.Replace(mb, []byte(`"log_size": `), []byte(`"log_size": 1`), 1))
	f.Add(bytes.Replace(mb, []byte(`"tree": true`), []byte(`"tree": false`), 1))
	f.Add([]byte(`{"version": 2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkImport(t, rewriteBundle(t, good, func(h *tar.Header, body []byte) (*tar.Header, []byte) {
			if strings.HasPrefix(h.Name, "manifests/") {
				return h, b
			}
			return h, body
		}))
	})
}

// checkImport imports bundle b into a Badger cache that already holds an
// entry, materialises what it imported into out/, and checks that
//
//   - nothing was written outside the cache directory and out/, and no
//     link under out/ leads out of it;
//   - a refused import left the cache as it was: the same blobs and
//     manifests, and (once the cache is closed) no leftover chunk;
//   - Verify and GC agree on what the database holds: GC reclaims nothing
//     that Verify did not report (no blob, no manifest when Verify is ok;
//     exactly the leftovers Verify counted), and Verify is ok after GC.
func checkImport(t *testing.T, b []byte) {
	ctx := context.Background()
	root := t.TempDir()
	cacheDir, outDir := filepath.Join(root, "cache"), filepath.Join(root, "out")
	sentinel := filepath.Join(root, "outside", "victim")
	if err := os.MkdirAll(filepath.Dir(sentinel), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sentinel, []byte("untouched\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := cache.Options{ChunkSize: 4096}
	cache.SmallValueLogs(&opts)
	s, err := cache.Open(ctx, cacheDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	pre := cachetest.NewManifest(t, s, 7, "kept")
	if err := s.PutManifest(ctx, pre); err != nil {
		t.Fatal(err)
	}
	blobs0, manifests0 := counts(t, s)

	rep, ierr := cache.Import(ctx, s, bytes.NewReader(b), nil)
	if ierr != nil {
		if blobs, manifests := counts(t, s); blobs != blobs0 || manifests != manifests0 {
			t.Fatalf("a refused import (%v) changed the cache: %d blobs, %d manifests; %d, %d before", ierr, blobs, manifests, blobs0, manifests0)
		}
		// Its chunks go when the cache is closed.
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = cache.Open(ctx, cacheDir, opts); err != nil {
			t.Fatal(err)
		}
		if lo, err := s.Leftovers(ctx, false); err != nil || lo.Chunks != 0 {
			t.Fatalf("a refused import (%v) left %+v, %v", ierr, lo, err)
		}
	} else {
		if rep.Manifests+rep.ManifestsPresent == 0 {
			t.Fatalf("an import that added no stage run succeeded: %+v", rep)
		}
		err := s.Manifests(ctx, func(m *cache.Manifest) error {
			for _, name := range m.OutputNames() {
				dst := filepath.Join(outDir, m.Key.String(), fmt.Sprintf("%x", name))
				if err := cache.Materialize(ctx, s, m.Outputs[name], dst); err != nil {
					return fmt.Errorf("materialising %s of an accepted entry: %w", name, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	checkConfined(t, root, sentinel)

	vrep, err := cache.Verify(ctx, s, cache.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ierr == nil && !vrep.OK() {
		t.Fatalf("an accepted bundle gives a cache that fails Verify: %+v", vrep.Problems)
	}
	du, err := cache.DiskUsage(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := cache.GC(ctx, s, cache.GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if vrep.OK() && (len(gc.Evicted) != 0 || gc.BlobsRemoved != 0) {
		t.Fatalf("Verify found nothing wrong, but GC evicted %v and removed %d blobs", gc.Evicted, gc.BlobsRemoved)
	}
	if gc.BlobsRemoved != du.Unreferenced || gc.Leftovers.Chunks != vrep.Leftovers.Chunks || gc.Leftovers.Chunks != du.Leftovers.Chunks {
		t.Fatalf("GC removed %d blobs and %+v; du counted %d unreferenced and %+v, Verify %+v", gc.BlobsRemoved, gc.Leftovers, du.Unreferenced, du.Leftovers, vrep.Leftovers)
	}
	after, err := cache.Verify(ctx, s, cache.VerifyOptions{})
	if err != nil || !after.OK() || after.Leftovers.Chunks != 0 {
		t.Fatalf("Verify after GC = %+v, %v", after, err)
	}
	if _, err := s.GetManifest(ctx, pre.Key); err != nil {
		t.Fatalf("the entry that was there before is gone: %v", err)
	}
}

// checkConfined fails t if anything under root is outside cache/ and out/
// (besides the sentinel, which must be intact), or if a link under out/
// resolves outside out/.
func checkConfined(t *testing.T, root, sentinel string) {
	t.Helper()
	if b, err := os.ReadFile(sentinel); err != nil || string(b) != "untouched\n" {
		t.Fatalf("the file outside the cache was changed: %q, %v", b, err)
	}
	out := filepath.Join(root, "out")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		top := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
		switch {
		case rel == ".", top == "cache", p == filepath.Dir(sentinel), p == sentinel:
		case top == "out":
			if d.Type()&fs.ModeSymlink != 0 {
				target, err := filepath.EvalSymlinks(p)
				if err != nil {
					return nil // dangling, inside the tree: nothing reached
				}
				if r, err := filepath.Rel(out, target); err != nil || r == ".." || strings.HasPrefix(r, "../") {
					t.Errorf("link %s under out/ resolves to %s, outside it", rel, target)
				}
			}
		default:
			t.Errorf("import or materialise wrote %s, outside the cache and out/", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
