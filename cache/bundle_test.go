package cache_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/cache/cachetest"
)

// bundleOf exports keys from s.
func bundleOf(t testing.TB, s cache.Store, keys ...cache.Key) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := cache.Export(context.Background(), s, keys, &buf, nil); err != nil {
		t.Fatalf("Export: %v", err)
	}
	return buf.Bytes()
}

// counts returns the numbers of blobs and manifests in s.
func counts(t testing.TB, s cache.Store) (blobs, manifests int) {
	t.Helper()
	ctx := context.Background()
	s.Blobs(ctx, func(cache.Digest, int64) error { blobs++; return nil })
	s.ManifestKeys(ctx, func(cache.Key) error { manifests++; return nil })
	return blobs, manifests
}

func TestExportImport(t *testing.T) {
	ctx := t.Context()
	dir := makeTestDir(t)
	for name, src := range stores(t) {
		t.Run(name, func(t *testing.T) {
			m1 := putStage(t, src, 1, dir, time.Now())
			m2 := cachetest.NewManifest(t, src, 2, "big")
			m2.Outputs["big"] = cache.Output{Digest: cachetest.Put(t, src, cachetest.Bytes(5, 200000)), Size: 200000}
			if err := src.PutManifest(ctx, m2); err != nil {
				t.Fatal(err)
			}
			other := putStage(t, src, 3, t.TempDir(), time.Now()) // not exported
			b := bundleOf(t, src, m1.Key, m2.Key)
			if again := bundleOf(t, src, m2.Key, m1.Key, m1.Key); !bytes.Equal(again, b) {
				t.Fatal("exporting the same entries twice gives different bundles")
			}
			path := filepath.Join(t.TempDir(), "b.tar")
			rep, err := cache.ExportFile(ctx, src, []cache.Key{m1.Key, m2.Key}, path, nil)
			if err != nil || rep.Manifests != 2 {
				t.Fatalf("ExportFile = %+v, %v", rep, err)
			}
			for dstName, dst := range stores(t) {
				t.Run(dstName, func(t *testing.T) {
					rep, err := cache.ImportFile(ctx, dst, path, nil)
					if err != nil || rep.Manifests != 2 || rep.BlobsPresent != 0 {
						t.Fatalf("Import = %+v, %v", rep, err)
					}
					for _, m := range []*cache.Manifest{m1, m2} {
						got, err := dst.GetManifest(ctx, m.Key)
						if err != nil {
							t.Fatal(err)
						}
						if time.Since(got.LastUsed) > time.Minute {
							t.Fatalf("imported LastUsed = %v, want now", got.LastUsed)
						}
						want, err := src.GetManifest(ctx, m.Key) // with the sizes PutManifest filled in
						if err != nil {
							t.Fatal(err)
						}
						got.LastUsed = want.LastUsed
						cachetest.SameManifest(t, got, want)
					}
					if _, err := dst.GetManifest(ctx, other.Key); !errors.Is(err, cache.ErrMiss) {
						t.Fatal("an entry that was not exported was imported")
					}
					out := filepath.Join(t.TempDir(), "out")
					if err := cache.Materialize(ctx, dst, m1.Outputs["tree"], out); err != nil {
						t.Fatal(err)
					}
					sameDirs(t, snapshotDir(t, out), snapshotDir(t, dir))
					if v, err := cache.Verify(ctx, dst, cache.VerifyOptions{}); err != nil || !v.OK() {
						t.Fatalf("Verify after import = %+v, %v", v, err)
					}
					// Importing again adds nothing.
					rep, err = cache.Import(ctx, dst, bytes.NewReader(b), nil)
					if err != nil || rep.Manifests != 0 || rep.ManifestsPresent != 2 || rep.Blobs != 0 {
						t.Fatalf("second Import = %+v, %v", rep, err)
					}
				})
			}
		})
	}
}

func TestExportRefuses(t *testing.T) {
	ctx := t.Context()
	s := cache.NewMem()
	m := cachetest.NewManifest(t, s, 1, "a")
	s.PutManifest(ctx, m)
	if _, err := cache.Export(ctx, s, []cache.Key{cachetest.Key(9)}, io.Discard, nil); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("Export of a missing key: %v; want a miss", err)
	}
	cache.CorruptMemBlob(s, m.Outputs["a"].Digest, []byte("bad"))
	if _, err := cache.Export(ctx, s, []cache.Key{m.Key}, io.Discard, nil); !errors.Is(err, cache.ErrCorrupt) {
		t.Fatalf("Export of a corrupt blob: %v; want ErrCorrupt", err)
	}
	path := filepath.Join(t.TempDir(), "b.tar")
	if _, err := cache.ExportFile(ctx, s, []cache.Key{m.Key}, path, nil); err == nil {
		t.Fatal("ExportFile of a corrupt blob succeeded")
	}
	if ents, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*")); len(ents) != 0 {
		t.Fatalf("a failed ExportFile left %v", ents)
	}
}

// rewriteBundle applies edit to every entry of bundle b.
func rewriteBundle(t testing.TB, b []byte, edit func(h *tar.Header, body []byte) (*tar.Header, []byte)) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		h, body = edit(h, body)
		if h == nil {
			continue
		}
		h.Size = int64(len(body))
		tw.WriteHeader(h)
		tw.Write(body)
	}
	tw.Close()
	return out.Bytes()
}

func TestImportRefuses(t *testing.T) {
	ctx := t.Context()
	src := cache.NewMem()
	m := putStage(t, src, 1, makeTestDir(t), time.Now())
	good := bundleOf(t, src, m.Key)
	big := cache.DigestBytes(bytes.Repeat([]byte("z"), 70000))
	isBlob := func(h *tar.Header, d cache.Digest) bool {
		return strings.HasSuffix(h.Name, d.String()[7:])
	}
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"corrupt blob", rewriteBundle(t, good, func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if isBlob(h, big) {
				b[100] ^= 1
			}
			return h, b
		}), "hash to"},
		{"missing tree file", rewriteBundle(t, good, func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if isBlob(h, big) {
				return nil, nil
			}
			return h, b
		}), "neither in the bundle nor in the cache"},
		{"missing tree", rewriteBundle(t, good, func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if isBlob(h, m.Outputs["tree"].Digest) {
				return nil, nil
			}
			return h, b
		}), "tree"},
		{"extra blob", rewriteBundle(t, good, func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if isBlob(h, big) {
				h.Name = "blobs/sha256/" + cache.DigestBytes([]byte("x")).String()[7:]
				return h, []byte("x")
			}
			return h, b
		}), "not used by any manifest"},
		{"foreign manifest", rewriteBundle(t, good, func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if strings.HasPrefix(h.Name, "manifests/") {
				b = bytes.Replace(b, fmt.Appendf(nil, `"version": %d`, cache.ManifestVersion), []byte(`"version": 7`), 1)
			}
			return h, b
		}), "manifest version 7"},
		{"bad manifest", rewriteBundle(t, good, func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if strings.HasPrefix(h.Name, "manifests/") {
				b = b[:len(b)/2]
			}
			return h, b
		}), "manifest"},
		{"other version", rewriteBundle(t, good, func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if h.Name == "VERSION" {
				b = []byte("dragonx bundle 1\n")
			}
			return h, b
		}), "bundle format"},
		{"not a bundle", []byte("hello"), "reading bundle"},
		{"truncated", good[:len(good)/2], "reading bundle"},
		// Cut after the VERSION entry (a header block and a data block):
		// it used to import "0 stage runs" and succeed.
		{"truncated after header", good[:1024], "no stage run"},
		{"empty", nil, "empty bundle"},
		// The manifest records another size for an output than its blob
		// has: it used to be imported as it was.
		{"output size", editManifest(t, good, func(m *cache.Manifest) {
			o := m.Outputs["file"]
			o.Size++
			m.Outputs["file"] = o
		}), "the bundle holds"},
		{"log size", editManifest(t, good, func(m *cache.Manifest) { m.LogSize = 30 << 30 }), "the bundle holds"},
		{"tree size", editManifest(t, good, func(m *cache.Manifest) {
			o := m.Outputs["tree"]
			o.TreeSize--
			m.Outputs["tree"] = o
		}), "the bundle holds"},
		// A blob longer than recorded is refused without being read.
		{"long blob", rewriteBundle(t, good, func(h *tar.Header, b []byte) (*tar.Header, []byte) {
			if isBlob(h, m.Log) {
				b = append(b, bytes.Repeat([]byte("x"), 1<<20)...)
			}
			return h, b
		}), "the bundle holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, dst := range stores(t) {
				pre := cachetest.Put(t, dst, []byte("already here"))
				_, err := cache.Import(ctx, dst, bytes.NewReader(tt.b), nil)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("%s: Import = %v, want an error containing %q", name, err, tt.want)
				}
				// All or nothing: a refused bundle leaves no blob (a
				// mislabelled one used to stay), no manifest, and, once
				// the store is closed, no chunk.
				if blobs, manifests := counts(t, dst); manifests != 0 || blobs != 1 {
					t.Fatalf("%s: a refused import left %d blobs, %d manifests; want 1 (the one there before), 0", name, blobs, manifests)
				}
				if ok, _ := dst.HasBlob(ctx, pre); !ok {
					t.Fatalf("%s: a refused import removed a blob that was there before", name)
				}
				if b, ok := dst.(*cache.Badger); ok {
					dir := b.Dir()
					b.Close()
					b = openBadgerDir(t, dir, cache.Options{})
					if lo, err := b.Leftovers(ctx, false); err != nil || lo.Chunks != 0 {
						t.Fatalf("%s: a refused import left %+v, %v", name, lo, err)
					}
				}
			}
		})
	}
}

// editManifest applies edit to every manifest of bundle b.
func editManifest(t testing.TB, b []byte, edit func(m *cache.Manifest)) []byte {
	t.Helper()
	return rewriteBundle(t, b, func(h *tar.Header, body []byte) (*tar.Header, []byte) {
		if !strings.HasPrefix(h.Name, "manifests/") {
			return h, body
		}
		k, err := cache.ParseKey(strings.TrimSuffix(strings.TrimPrefix(h.Name, "manifests/"), ".json"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := cache.UnmarshalManifest(k, body)
		if err != nil {
			t.Fatal(err)
		}
		edit(m)
		body, err = cache.MarshalManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		return h, body
	})
}

func FuzzImport(f *testing.F) {
	src := cache.NewMem()
	m := cachetest.NewManifest(f, src, 1, "a", "b")
	src.PutManifest(context.Background(), m)
	f.Add(bundleOf(f, src, m.Key))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx := context.Background()
		dst := cache.NewMem()
		if _, err := cache.Import(ctx, dst, bytes.NewReader(b), nil); err != nil {
			if _, manifests := counts(t, dst); manifests != 0 {
				t.Fatalf("a failed import left %d manifests", manifests)
			}
			return
		}
		if rep, err := cache.Verify(ctx, dst, cache.VerifyOptions{}); err != nil || !rep.OK() {
			t.Fatalf("an accepted bundle gives a store that fails Verify: %+v, %v", rep, err)
		}
	})
}
