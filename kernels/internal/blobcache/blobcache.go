// Package blobcache is the content-addressed file cache and the
// process-group command runner shared by the tools that compile generated
// code: the numerical gate (kernels/numeric: C binaries, reference outputs)
// and kernels/ptxas (nvcc resource reports).
//
// A Cache is a directory of entries: NAME holds the data, NAME.sum the hex
// SHA-256 of the data. Both are written to a temporary file and renamed,
// data first, so a reader sees either no entry, an old one or a complete
// one; an entry whose data does not match its sum (a crash between the two
// renames, a truncated or edited file) is not trusted: the caller rebuilds
// it. Two processes filling the same entry at once both write complete
// files and the last rename wins.
package blobcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Cache is a cache directory (see the package doc).
type Cache struct{ Dir string }

// Key returns the hex SHA-256 of the parts, each length-prefixed.
func Key(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Path returns the path of entry name's data.
func (c *Cache) Path(name string) string { return filepath.Join(c.Dir, name) }

// Get returns the data of entry name, or nil when there is no valid entry.
func (c *Cache) Get(name string) []byte {
	want, err := os.ReadFile(filepath.Join(c.Dir, name+".sum"))
	if err != nil {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(c.Dir, name))
	if err != nil || sum(data) != strings.TrimSpace(string(want)) {
		return nil
	}
	return data
}

// Valid reports whether entry name exists and matches its sum.
func (c *Cache) Valid(name string) bool { return c.Get(name) != nil }

// Put writes entry name with data.
func (c *Cache) Put(name string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if err := c.writeAtomic(name, data, mode); err != nil {
		return err
	}
	return c.writeAtomic(name+".sum", []byte(sum(data)+"\n"), 0o644)
}

// TempFile creates an empty temporary file in the cache directory for a
// tool to write entry name's data into (Put it afterwards); the caller
// removes it.
func (c *Cache) TempFile(name string) (string, error) {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	f, err := os.CreateTemp(c.Dir, name+".tmp*")
	if err != nil {
		return "", fmt.Errorf("cache: %w", err)
	}
	f.Close()
	return f.Name(), nil
}

func (c *Cache) writeAtomic(name string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(c.Dir, name+".tmp*")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if e := f.Close(); err == nil {
		err = e
	}
	if err == nil {
		err = os.Chmod(tmp, mode)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(c.Dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// Command returns the command of path with args in a process group of its
// own: cancelling ctx kills the group (a compiler driver and the tools it
// started, not just the driver), and so does the death of this process
// (Pdeathsig).
func Command(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// TailBuffer keeps the last TailMax bytes written to it.
type TailBuffer struct{ b []byte }

// TailMax is how much of a tool's output a TailBuffer keeps.
const TailMax = 2048

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*TailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-TailMax:]...)
	}
	return len(p), nil
}

// Tail returns the kept output, trimmed, or "(no output)".
func (t *TailBuffer) Tail() string {
	b := t.b
	if len(b) > TailMax {
		b = b[len(b)-TailMax:]
	}
	s := strings.TrimSpace(string(bytes.ToValidUTF8(b, []byte("?"))))
	if s == "" {
		return "(no output)"
	}
	return s
}
