package safeio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// withTimeout runs f and fails the test if it has not returned within a
// few seconds: a regression that blocks must fail, not hang the suite.
func withTimeout(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("blocked for 5s (opening a FIFO must not wait for a writer)")
	}
}

func TestReadFileRefusesFIFO(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	withTimeout(t, func() {
		_, err := ReadFile(p, MaxSource, Options{})
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "named pipe") || !strings.Contains(err.Error(), p) {
			t.Errorf("err = %v, want a not-regular error naming the pipe", err)
		}
	})
}

func TestReadFileLimits(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := ReadFile("/dev/zero", MaxSource, Options{})
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "character device") {
			t.Errorf("/dev/zero: err = %v, want a refused character device", err)
		}
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(big, 1024, Options{})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1 KiB") || !strings.Contains(err.Error(), big) {
		t.Errorf("big: err = %v, want too large naming the file and 1 KiB", err)
	}
	if b, err := ReadFile(big, 2048, Options{}); err != nil || len(b) != 2048 {
		t.Errorf("at the limit: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFile(dir, 1024, Options{}); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("dir: err = %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), 1024, Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: err = %v, want ErrNotExist", err)
	}
}

func TestOpenNoFollow(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	if err := os.WriteFile(target, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skip("symlink:", err)
	}
	if b, err := ReadFile(link, 10, Options{}); err != nil || string(b) != "x" {
		t.Errorf("following: %q, %v", b, err)
	}
	if runtime.GOOS != "windows" {
		if _, err := ReadFile(link, 10, Options{NoFollow: true}); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("NoFollow: err = %v, want a refused symbolic link", err)
		}
	}
}
