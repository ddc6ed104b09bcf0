package fscopy

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestCopyTree(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "a", "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "a", "b", "f.txt"), []byte("hello"), 0o640))
	must(t, os.WriteFile(filepath.Join(src, "ro.txt"), []byte("ro"), 0o444))
	must(t, os.Symlink("a/b/f.txt", filepath.Join(src, "link")))
	dst := filepath.Join(t.TempDir(), "dst")
	must(t, Copy(src, dst))
	b, err := os.ReadFile(filepath.Join(dst, "a", "b", "f.txt"))
	if err != nil || string(b) != "hello" {
		t.Fatalf("copied file: %q, %v", b, err)
	}
	fi, err := os.Stat(filepath.Join(dst, "a", "b", "f.txt"))
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v (%v), want 0640", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "ro.txt")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("read-only file: mode %v (%v), want 0644 (owner write added)", fi.Mode().Perm(), err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "link")); err != nil || l != "a/b/f.txt" {
		t.Fatalf("link: %q, %v", l, err)
	}
	if err := Copy(src, dst); err == nil {
		t.Fatal("copying onto an existing destination succeeded")
	}
}

func TestCopyFileAndRefusals(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "f")
	must(t, os.WriteFile(src, []byte("x"), 0o600))
	must(t, Copy(src, filepath.Join(dir, "g")))
	if b, _ := os.ReadFile(filepath.Join(dir, "g")); string(b) != "x" {
		t.Fatalf("single file copy: %q", b)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	err := Copy(dir, filepath.Join(t.TempDir(), "out"))
	if err == nil || !strings.Contains(err.Error(), "fifo is neither") {
		t.Fatalf("a tree with a FIFO: %v, want an error naming it", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
