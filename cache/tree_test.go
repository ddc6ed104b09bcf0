package cache_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/cache"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func TestDecodeTree(t *testing.T) {
	d := cache.DigestBytes([]byte("x")).String()
	tests := []struct {
		name string
		in   string
		err  string // substring of the error; "" for success
	}{
		{"empty", "dragonx tree 1\n", ""},
		{"full", "dragonx tree 1\nd \"a\"\nf 644 1 " + d + " \"a/b\"\nf 755 1 " + d + " \"a/c\"\nl \"a/d\" \"b\"\n", ""},
		{"odd name", "dragonx tree 1\nf 644 1 " + d + " \"sp ace\\n\\xff\"\n", ""},
		{"link to root", "dragonx tree 1\nd \"a\"\nl \"a/up\" \"..\"\n", ""},
		{"no header", "f 644 1 " + d + " \"a\"\n", "not a tree"},
		{"other version", "dragonx tree 2\n", "not a tree"},
		{"no newline", "dragonx tree 1\nd \"a\"", "no final newline"},
		{"unsorted", "dragonx tree 1\nd \"b\"\nd \"a\"\n", "is not after"},
		{"duplicate", "dragonx tree 1\nd \"a\"\nd \"a\"\n", "is not after"},
		{"no parent", "dragonx tree 1\nf 644 1 " + d + " \"a/b\"\n", "not a listed directory"},
		{"file as parent", "dragonx tree 1\nf 644 1 " + d + " \"a\"\nf 644 1 " + d + " \"a/b\"\n", "not a listed directory"},
		{"link as parent", "dragonx tree 1\nl \"a\" \"b\"\nd \"a/x\"\n", "not a listed directory"},
		{"mode", "dragonx tree 1\nf 600 1 " + d + " \"a\"\n", "not 644 or 755"},
		{"size", "dragonx tree 1\nf 644 01 " + d + " \"a\"\n", "bad file size"},
		{"negative size", "dragonx tree 1\nf 644 -1 " + d + " \"a\"\n", "bad file size"},
		{"digest", "dragonx tree 1\nf 644 1 sha256:00 \"a\"\n", "bad digest"},
		{"upper digest", "dragonx tree 1\nf 644 1 " + strings.ToUpper(d[7:]) + " \"a\"\n", "bad digest"},
		{"unquoted", "dragonx tree 1\nd a\n", "expected a quoted string"},
		{"raw quote", "dragonx tree 1\nd `a`\n", "expected a quoted string"},
		{"noncanonical quote", "dragonx tree 1\nd \"\\x61\"\n", "canonical"},
		{"dotdot", "dragonx tree 1\nd \"..\"\n", "invalid path"},
		{"dot", "dragonx tree 1\nd \".\"\n", "invalid path"},
		{"absolute", "dragonx tree 1\nd \"/a\"\n", "invalid path"},
		{"trailing slash", "dragonx tree 1\nd \"a/\"\n", "invalid path"},
		{"nul", "dragonx tree 1\nd \"a\\x00\"\n", "invalid path"},
		{"escaping link", "dragonx tree 1\nd \"a\"\nl \"a/up\" \"../..\"\n", "leaves the tree"},
		{"absolute link", "dragonx tree 1\nl \"a\" \"/etc/passwd\"\n", "only relative links"},
		{"trailing text", "dragonx tree 1\nd \"a\" x\n", "trailing text"},
		{"unknown type", "dragonx tree 1\nx \"a\"\n", "unknown entry type"},
		{"short line", "dragonx tree 1\nd\n", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecodeTree(t, tt.in, tt.err)
		})
	}
}

// makeTestDir builds a directory with every kind of entry the tree
// encoding handles.
func makeTestDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	files := map[string]string{
		"a.txt":           "alpha\n",
		"a-b.txt":         "sorts before a/ but is walked after it\n",
		"a/nested.txt":    "nested\n",
		"a/deeper/z.bin":  strings.Repeat("z", 70000),
		"dup1":            "same bytes\n",
		"dup2":            "same bytes\n",
		"empty":           "",
		"space name.txt":  "spaces\n",
		"run.sh":          "#!/bin/sh\necho hi\n",
		"newline\nname":   "odd\n",
		"latin1-\xe9.txt": "not utf-8 name\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o700); err != nil { // any x bit: 755
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "emptydir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a/nested.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTreeGolden pins the tree encoding: a change to it changes every
// directory's digest, and so every downstream stage key.
func TestTreeGolden(t *testing.T) {
	ctx := t.Context()
	dir := makeTestDir(t)
	s := cache.NewMem()
	out, err := cache.PutPath(ctx, s, dir)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := cache.ReadTree(ctx, s, out.Digest)
	if err != nil {
		t.Fatal(err)
	}
	got := tree.Encode()
	golden := filepath.Join("testdata", "tree.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("tree encoding changed:\n%s\nwant (%s):\n%s", got, golden, want)
	}
	if out.Digest != cache.DigestBytes(want) {
		t.Fatalf("PutPath digest %s is not the digest of the tree blob", out.Digest)
	}
}

func FuzzDecodeTree(f *testing.F) {
	d := cache.DigestBytes([]byte("x")).String()
	f.Add([]byte("dragonx tree 1\n"))
	f.Add([]byte("dragonx tree 1\nd \"a\"\nf 644 1 " + d + " \"a/b\"\nl \"a/c\" \"b\"\n"))
	f.Add([]byte("dragonx tree 1\nf 755 12 " + d + " \"\\xff\\n\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tree, err := cache.DecodeTree(b)
		if err != nil {
			return
		}
		if got := tree.Encode(); !bytes.Equal(got, b) {
			t.Fatalf("DecodeTree(%q).Encode() = %q; a decoded tree must re-encode to its input", b, got)
		}
	})
}

// checkDecodeTree decodes in: with wantErr empty it must decode and
// encode back to in, otherwise fail with an error containing wantErr.
func checkDecodeTree(t *testing.T, in, wantErr string) {
	t.Helper()
	tree, err := cache.DecodeTree([]byte(in))
	if wantErr == "" {
		if err != nil {
			t.Fatalf("DecodeTree(%q): %v", in, err)
		}
		if got := string(tree.Encode()); got != in {
			t.Fatalf("DecodeTree(%q).Encode() = %q, want the input back", in, got)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("DecodeTree(%q) error = %v, want one containing %q", in, err, wantErr)
	}
}
