package cache_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"dragonx/cache"
)

// stores returns the two implementations, fresh, by name.
func stores(t *testing.T) map[string]cache.Store {
	return map[string]cache.Store{
		"mem":    cache.NewMem(),
		"badger": openBadger(t, cache.Options{ChunkSize: 4096}),
	}
}

// snapshotDir describes every entry under dir: type, mode, contents or
// link target.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			got[rel] = "link " + target
		case info.IsDir():
			got[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			exec := info.Mode()&0o111 != 0
			got[rel] = map[bool]string{true: "exec ", false: "file "}[exec] + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func sameDirs(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("entry %q = %.40q, want %.40q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected entry %q", k)
		}
	}
}

func TestPutPathMaterialize(t *testing.T) {
	ctx := t.Context()
	src := makeTestDir(t)
	file := filepath.Join(src, "run.sh")
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for _, p := range []string{src, file, filepath.Join(src, "empty"), filepath.Join(src, "emptydir")} {
				out, err := cache.PutPath(ctx, s, p)
				if err != nil {
					t.Fatalf("PutPath(%s): %v", p, err)
				}
				h, err := cache.HashPath(ctx, p)
				if err != nil || h != out {
					t.Fatalf("HashPath(%s) = %+v, %v; PutPath gave %+v", p, h, err, out)
				}
				info, _ := os.Stat(p)
				if out.Tree != info.IsDir() {
					t.Fatalf("PutPath(%s).Tree = %v", p, out.Tree)
				}
				dst := filepath.Join(t.TempDir(), "sub", "dst")
				if err := cache.Materialize(ctx, s, out, dst); err != nil {
					t.Fatalf("Materialize(%s): %v", p, err)
				}
				if out.Tree {
					sameDirs(t, snapshotDir(t, dst), snapshotDir(t, p))
				} else {
					want, _ := os.ReadFile(p)
					got, _ := os.ReadFile(dst)
					di, _ := os.Stat(dst)
					if !bytes.Equal(got, want) || (di.Mode()&0o111 != 0) != out.Exec {
						t.Fatalf("Materialize(file) = %q mode %v; want %q exec %v", got, di.Mode(), want, out.Exec)
					}
				}
				leftover, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".*tmp*"))
				if len(leftover) != 0 {
					t.Fatalf("Materialize left %v", leftover)
				}
			}
		})
	}
}

func TestPutPathSameContentSameDigest(t *testing.T) {
	ctx := t.Context()
	a, b := makeTestDir(t), makeTestDir(t)
	// Different permissions that map to the same modes, different mtimes.
	os.Chmod(filepath.Join(b, "run.sh"), 0o755)
	os.Chmod(filepath.Join(b, "a.txt"), 0o600)
	os.Chtimes(filepath.Join(b, "a.txt"), time.Unix(1, 0), time.Unix(1, 0))
	ha, err1 := cache.HashPath(ctx, a)
	hb, err2 := cache.HashPath(ctx, b)
	if err1 != nil || err2 != nil || ha != hb {
		t.Fatalf("HashPath of two equal trees = %+v, %+v (%v, %v); want equal", ha, hb, err1, err2)
	}
	os.WriteFile(filepath.Join(b, "a.txt"), []byte("changed"), 0o644)
	if hc, _ := cache.HashPath(ctx, b); hc.Digest == ha.Digest {
		t.Fatal("HashPath ignores a changed file")
	}
	os.Chmod(filepath.Join(a, "a.txt"), 0o755)
	if hd, _ := cache.HashPath(ctx, a); hd.Digest == ha.Digest {
		t.Fatal("HashPath ignores an executable bit")
	}
}

func TestPutPathRefuses(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	os.Symlink("/etc/passwd", filepath.Join(dir, "abs"))
	dir2 := t.TempDir()
	os.Symlink("../../x", filepath.Join(dir2, "up"))
	for _, p := range []string{dir, dir2, filepath.Join(t.TempDir(), "missing")} {
		if out, err := cache.HashPath(ctx, p); err == nil {
			t.Errorf("HashPath(%s) = %+v, want an error", p, out)
		}
	}
}

func TestMaterializeCorrupt(t *testing.T) {
	ctx := t.Context()
	src := makeTestDir(t)
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			out, err := cache.PutPath(ctx, s, src)
			if err != nil {
				t.Fatal(err)
			}
			big := cache.DigestBytes(bytes.Repeat([]byte("z"), 70000))
			bad := bytes.Repeat([]byte("y"), 70000)
			switch s := s.(type) {
			case *cache.Mem:
				cache.CorruptMemBlob(s, big, bad)
			case *cache.Badger:
				cache.CorruptBadgerBlob(s, big, bad)
			}
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			err = cache.Materialize(ctx, s, out, dst)
			if !errors.Is(err, cache.ErrCorrupt) || !errors.Is(err, cache.ErrMiss) {
				t.Fatalf("Materialize with a corrupt file blob: %v; want ErrCorrupt", err)
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 0 {
				t.Fatalf("Materialize left %v in %s", ents, parent)
			}
			// An existing destination is left as it was.
			os.WriteFile(dst, []byte("old"), 0o644)
			if err := cache.Materialize(ctx, s, out, dst); !errors.Is(err, cache.ErrCorrupt) {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(dst); string(b) != "old" {
				t.Fatalf("after a failed Materialize dst holds %q, want the old contents", b)
			}
			// A corrupt tree blob.
			tree := out
			tree.Digest = cache.DigestBytes([]byte("not a tree"))
			_, _, err = s.PutBlob(ctx, bytes.NewReader([]byte("not a tree")))
			if err != nil {
				t.Fatal(err)
			}
			if err := cache.Materialize(ctx, s, tree, filepath.Join(parent, "dst2")); !errors.Is(err, cache.ErrCorrupt) {
				t.Fatalf("Materialize of a blob that is not a tree: %v; want ErrCorrupt", err)
			}
		})
	}
}

func TestMaterializeReplaces(t *testing.T) {
	ctx := t.Context()
	s := cache.NewMem()
	src := makeTestDir(t)
	out, err := cache.PutPath(ctx, s, src)
	if err != nil {
		t.Fatal(err)
	}
	fileOut, err := cache.PutPath(ctx, s, filepath.Join(src, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	steps := []cache.Output{out, out, fileOut, out, fileOut, fileOut}
	for i, o := range steps {
		if err := cache.Materialize(ctx, s, o, dst); err != nil {
			t.Fatalf("step %d: Materialize: %v", i, err)
		}
		if o.Tree {
			sameDirs(t, snapshotDir(t, dst), snapshotDir(t, src))
		} else if b, _ := os.ReadFile(dst); string(b) != "alpha\n" {
			t.Fatalf("step %d: dst = %q", i, b)
		}
		if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 1 {
			t.Fatalf("step %d: parent holds %d entries, want 1", i, len(ents))
		}
	}
}

func TestHashPathCached(t *testing.T) {
	ctx := t.Context()
	s := cache.NewMem()
	dir := makeTestDir(t)
	file := filepath.Join(dir, "a.txt")
	later := time.Now().Add(time.Minute) // past the racy window of the new files
	for _, p := range []string{file, dir} {
		want, err := cache.HashPath(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		// Too recent: hashed, not recorded.
		if got, err := cache.HashPathCachedAt(ctx, s, p, time.Now()); err != nil || got != want {
			t.Fatalf("HashPathCached(%s) = %+v, %v; want %+v", p, got, err, want)
		}
		if _, ok, _ := s.GetStat(ctx, p); ok {
			t.Fatalf("a path modified just now was recorded in the stat cache")
		}
		if got, err := cache.HashPathCachedAt(ctx, s, p, later); err != nil || got != want {
			t.Fatalf("HashPathCached(%s) = %+v, %v; want %+v", p, got, err, want)
		}
		e, ok, _ := s.GetStat(ctx, p)
		if !ok || e.Output != want {
			t.Fatalf("stat cache entry for %s = %+v, %v", p, e, ok)
		}
		// The recorded entry is used: plant a different output under the
		// same fingerprint and it comes back without hashing.
		planted := e
		planted.Output.Size = 12345
		s.PutStat(ctx, p, planted)
		if got, _ := cache.HashPathCachedAt(ctx, s, p, later); got != planted.Output {
			t.Fatalf("HashPathCached with a matching fingerprint = %+v, want the recorded %+v", got, planted.Output)
		}
	}
	// A change to a file invalidates the file's and the directory's entry.
	os.WriteFile(file, []byte("ALPHA\n"), 0o644)
	for _, p := range []string{file, dir} {
		want, _ := cache.HashPath(ctx, p)
		if got, _ := cache.HashPathCachedAt(ctx, s, p, later.Add(time.Minute)); got != want || got.Size == 12345 {
			t.Fatalf("HashPathCached(%s) after a change = %+v, want %+v", p, got, want)
		}
	}
}
