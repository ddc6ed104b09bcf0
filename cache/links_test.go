package cache_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/cache"
)

// TestTreeLinksResolved: a tree's links are checked after following the
// other links of the tree, not as text (issue 9, case 6). e/f/y -> ../..
// is the root of the tree, so e/f/z -> y/../../../etc/passwd reads as
// etc/passwd inside the tree but resolves three levels above it.
func TestTreeLinksResolved(t *testing.T) {
	chain := func(n int) string {
		// l0 -> l1 -> ... -> l(n-1) -> x
		var b strings.Builder
		b.WriteString("dragonx tree 1\n")
		for i := range n {
			target := fmt.Sprintf("l%02d", i+1)
			if i == n-1 {
				target = "x"
			}
			fmt.Fprintf(&b, "l \"l%02d\" %q\n", i, target)
		}
		return b.String()
	}
	tests := []struct {
		name string
		in   string
		err  string // substring of the error; "" for success
	}{
		{"chain escapes", "dragonx tree 1\nd \"e\"\nd \"e/f\"\nl \"e/f/y\" \"../..\"\nl \"e/f/z\" \"y/../../../etc/passwd\"\n", `link "e/f/z" has target "y/../../../etc/passwd", which leaves the tree`},
		{"chain escapes by one", "dragonx tree 1\nd \"e\"\nd \"e/f\"\nl \"e/f/y\" \"../..\"\nl \"e/f/z\" \"y/..\"\n", "leaves the tree"},
		{"two hops", "dragonx tree 1\nd \"a\"\nd \"a/b\"\nl \"a/b/top\" \"../..\"\nl \"a/b/up\" \"top/a\"\nl \"a/b/w\" \"up/../../x\"\n", "leaves the tree"},
		{"link to link dir escapes", "dragonx tree 1\nd \"d\"\nl \"d/r\" \"..\"\nl \"s\" \"d/r/d/r/..\"\n", "leaves the tree"},
		{"cycle", "dragonx tree 1\nl \"a\" \"b\"\nl \"b\" \"a\"\n", "cycle"},
		{"self", "dragonx tree 1\nl \"a\" \"a/x\"\n", "cycle"},
		{"too deep", chain(41), "more than 40 links"},
		{"deep enough", chain(40), ""},
		{"chain inside", "dragonx tree 1\nd \"e\"\nd \"e/f\"\nl \"e/f/y\" \"../..\"\nl \"e/f/z\" \"y/e/f/y/e\"\n", ""},
		{"dangling inside", "dragonx tree 1\nd \"a\"\nl \"a/l\" \"missing/../../b\"\n", ""},
		{"through a file", "dragonx tree 1\nf 644 0 " + cache.DigestBytes(nil).String() + " \"f\"\nl \"l\" \"f/../f\"\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecodeTree(t, tt.in, tt.err)
		})
	}
}

// TestLinkChainRefusedBothWays: a directory with an escaping chain of links
// is refused when stored, and a tree blob with one (from a remote, a
// bundle, or an older dragonx) is a corrupt miss when materialised, with
// nothing written.
func TestLinkChainRefusedBothWays(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(filepath.Join(dir, "e", "f"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink("../..", filepath.Join(dir, "e", "f", "y"))
	os.Symlink("y/../../../etc/passwd", filepath.Join(dir, "e", "f", "z"))
	s := cache.NewMem()
	if out, err := cache.PutPath(ctx, s, dir); err == nil || !strings.Contains(err.Error(), "leaves the tree") {
		t.Fatalf("PutPath of a directory with an escaping chain of links = %+v, %v; want an error", out, err)
	}
	if out, err := cache.HashPath(ctx, dir); err == nil {
		t.Fatalf("HashPath of a directory with an escaping chain of links = %+v; want an error", out)
	}

	blob := []byte("dragonx tree 1\nd \"e\"\nd \"e/f\"\nl \"e/f/y\" \"../..\"\nl \"e/f/z\" \"y/../../../etc/passwd\"\n")
	d, _, err := s.PutBlob(ctx, bytes.NewReader(blob))
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	err = cache.Materialize(ctx, s, cache.Output{Digest: d, Tree: true}, filepath.Join(parent, "dst"))
	if !errors.Is(err, cache.ErrCorrupt) {
		t.Fatalf("Materialize of a tree whose links escape: %v; want ErrCorrupt", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("Materialize left %v in %s", ents, parent)
	}
}

// TestPutPathIn: an output is collected without following any link on its
// path or the output itself (issue 9, case 1), and nothing outside the
// working directory is read.
func TestPutPathIn(t *testing.T) {
	ctx := t.Context()
	victim := t.TempDir()
	if err := os.WriteFile(filepath.Join(victim, "file"), []byte("not yours\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	mk := func(p, body string) {
		t.Helper()
		p = filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("real.txt", "real\n")
	mk("plain/a.txt", "a\n")
	os.Symlink("a.txt", filepath.Join(work, "plain", "l"))
	os.Symlink(victim, filepath.Join(work, "sub"))
	os.Symlink(filepath.Join(victim, "file"), filepath.Join(work, "stolen.txt"))
	os.Symlink("real.txt", filepath.Join(work, "inside.txt"))
	os.Symlink("plain", filepath.Join(work, "dirlink"))
	os.Symlink("../..", filepath.Join(work, "plain", "up"))

	s := cache.NewMem()
	for _, tt := range []struct{ rel, err string }{
		{"sub/file", "sub is a symbolic link"},
		{"stolen.txt", "stolen.txt is a symbolic link"},
		{"inside.txt", "inside.txt is a symbolic link"},
		{"dirlink/a.txt", "dirlink is a symbolic link"},
		{"dirlink", "dirlink is a symbolic link"},
		{"plain/up/etc", "plain/up is a symbolic link"},
		{"real.txt/x", "not a directory"},
		{"missing", "no such file"},
		{"../x", "not a clean relative path"},
		{"/etc/passwd", "not a clean relative path"},
	} {
		out, err := cache.PutPathIn(ctx, s, work, tt.rel)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("PutPathIn(%q) = %+v, %v; want an error containing %q", tt.rel, out, err, tt.err)
		}
	}
	n := 0
	if err := s.Blobs(ctx, func(cache.Digest, int64) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("refused outputs stored %d blobs", n)
	}

	// What is not a link is stored as PutPath stores it; links inside a
	// directory output stay links.
	for _, rel := range []string{"real.txt", "plain/a.txt"} {
		got, err := cache.PutPathIn(ctx, s, work, rel)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cache.HashPath(ctx, filepath.Join(work, rel))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("PutPathIn(%q) = %+v, HashPath = %+v", rel, got, want)
		}
	}
	os.Remove(filepath.Join(work, "plain", "up"))
	out, err := cache.PutPathIn(ctx, s, work, "plain")
	if err != nil {
		t.Fatal(err)
	}
	tree, err := cache.ReadTree(ctx, s, out.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(tree.Encode()); !strings.Contains(got, "l \"l\" \"a.txt\"\n") {
		t.Fatalf("tree of plain/ = %q, want the link l kept as a link", got)
	}
	if b, _ := os.ReadFile(filepath.Join(victim, "file")); string(b) != "not yours\n" {
		t.Fatalf("victim file now holds %q", b)
	}
}

// FuzzTreeLinksStayInside uses the kernel as the oracle: every tree that
// decodes is written out (files empty), and every link of it that the
// kernel can resolve must resolve inside it.
func FuzzTreeLinksStayInside(f *testing.F) {
	f.Add([]byte("dragonx tree 1\nd \"e\"\nd \"e/f\"\nl \"e/f/y\" \"../..\"\nl \"e/f/z\" \"y/../../../etc/passwd\"\n"))
	f.Add([]byte("dragonx tree 1\nd \"e\"\nd \"e/f\"\nl \"e/f/y\" \"../..\"\nl \"e/f/z\" \"y/..\"\n"))
	f.Add([]byte("dragonx tree 1\nd \"e\"\nd \"e/f\"\nl \"e/f/y\" \"../..\"\nl \"e/f/z\" \"y/e/f/y/e\"\n"))
	f.Add([]byte("dragonx tree 1\nd \"a\"\nd \"a/b\"\nl \"a/b/top\" \"../..\"\nl \"a/b/up\" \"top/a\"\nl \"a/b/w\" \"up/../../x\"\n"))
	f.Add([]byte("dragonx tree 1\nd \"d\"\nl \"d/r\" \"..\"\nl \"s\" \"d/r/d/r/..\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tree, err := cache.DecodeTree(b)
		if err != nil || len(tree.Entries) > 64 {
			return
		}
		root := filepath.Join(t.TempDir(), "t")
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range tree.Entries {
			p := filepath.Join(root, filepath.FromSlash(e.Path))
			switch e.Type {
			case cache.TypeDir:
				err = os.Mkdir(p, 0o755)
			case cache.TypeFile:
				err = os.WriteFile(p, nil, 0o644)
			}
			if err != nil {
				t.Skip(err) // a name this file system does not take
			}
		}
		for _, e := range tree.Entries {
			if e.Type == cache.TypeSymlink {
				if err := os.Symlink(filepath.FromSlash(e.Target), filepath.Join(root, filepath.FromSlash(e.Path))); err != nil {
					t.Skip(err)
				}
			}
		}
		realRoot, err := filepath.EvalSymlinks(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range tree.Entries {
			if e.Type != cache.TypeSymlink {
				continue
			}
			to, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(e.Path)))
			if err != nil {
				continue // dangling, or through a file: nothing to read
			}
			if to != realRoot && !strings.HasPrefix(to, realRoot+string(filepath.Separator)) {
				t.Fatalf("tree %q decodes, but link %q resolves to %s, outside %s", b, e.Path, to, realRoot)
			}
		}
	})
}
