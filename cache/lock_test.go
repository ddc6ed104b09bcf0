package cache_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"dragonx/cache"
	"dragonx/internal/safeio"
	"dragonx/internal/safeio/safeiotest"
)

// Two Opens in one process use two open file descriptions, so the flock
// excludes them just as it excludes two processes.
func TestLockWaitsAndTimesOut(t *testing.T) {
	dir := t.TempDir()
	first := openBadgerDir(t, dir, cache.Options{})
	var seen []cache.LockHolder
	start := time.Now()
	_, err := cache.Open(t.Context(), dir, cache.Options{
		LockTimeout: 300 * time.Millisecond,
		OnLockWait:  func(h cache.LockHolder) { seen = append(seen, h) },
	})
	var le *cache.LockedError
	if !errors.As(err, &le) || !errors.Is(err, cache.ErrLocked) {
		t.Fatalf("second Open = %v; want a *LockedError", err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond || waited > 3*time.Second {
		t.Fatalf("second Open gave up after %v, want about 300ms", waited)
	}
	if len(seen) != 1 || seen[0].PID != os.Getpid() {
		t.Fatalf("OnLockWait saw %+v; want one call naming pid %d", seen, os.Getpid())
	}
	msg := err.Error()
	for _, want := range []string{"cache: " + dir + " is locked by pid ", "since ", "; waited 300ms"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	// A negative timeout fails at once.
	if _, err := cache.Open(t.Context(), dir, cache.Options{LockTimeout: -1}); !errors.Is(err, cache.ErrLocked) {
		t.Fatalf("Open(LockTimeout -1) = %v", err)
	}
	// Released by Close: a waiting Open gets in.
	go func() {
		time.Sleep(200 * time.Millisecond)
		first.Close()
	}()
	s, err := cache.Open(t.Context(), dir, cache.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	s.Close()
}

func TestLockWaitCancelled(t *testing.T) {
	dir := t.TempDir()
	openBadgerDir(t, dir, cache.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := cache.Open(ctx, dir, cache.Options{LockTimeout: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "held by pid") {
		t.Fatalf("Open with a cancelled context = %v; want the context's error, naming the holder", err)
	}
}

func TestOpenWritesREADME(t *testing.T) {
	dir := t.TempDir()
	s := openBadgerDir(t, dir, cache.Options{})
	s.Close()
	b, err := os.ReadFile(dir + "/README")
	if err != nil || !strings.Contains(string(b), "dragonx cache verify") {
		t.Fatalf("README = %q, %v", b, err)
	}
}

func TestLockHolderString(t *testing.T) {
	since := time.Date(2025, 3, 1, 15, 4, 5, 0, time.Local)
	tests := []struct {
		h    cache.LockHolder
		want string
	}{
		{cache.LockHolder{}, "another process (it has not said who it is)"},
		{cache.LockHolder{PID: 7}, "pid 7"},
		{cache.LockHolder{PID: 7, Host: "h", Command: []string{"dragonx", "run", "x.hcl"}, Since: since},
			"pid 7 (dragonx run x.hcl on host h) since 2025-03-01 15:04:05"},
	}
	for _, tt := range tests {
		if got := tt.h.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.h, got, tt.want)
		}
	}
}

// TestForeignBadgerUser checks the message when some other program holds
// Badger's own lock on the database (dragonx processes never get there:
// they wait on dragonx's lock first).
func TestForeignBadgerUser(t *testing.T) {
	dir := t.TempDir()
	openBadgerDir(t, dir, cache.Options{}).Close()
	db, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, "db")).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = cache.Open(t.Context(), dir, cache.Options{LockTimeout: -1})
	if err == nil || !strings.Contains(err.Error(), "in use by a program that does not take dragonx's lock") {
		t.Fatalf("Open while another program has the database open = %v", err)
	}
	// dragonx's own lock was released again.
	if _, err := os.Stat(filepath.Join(dir, "lock")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := cache.Open(t.Context(), dir, cache.Options{LockTimeout: -1})
	if err != nil {
		t.Fatalf("Open after the other program closed: %v", err)
	}
	s.Close()
}

// TestLockHolderRedacts checks that a holder record written by an older
// dragonx, with a password in its command line, is printed redacted.
func TestLockHolderRedacts(t *testing.T) {
	h := cache.LockHolder{PID: 7, Command: []string{"dragonx", "run", "-remote", "https://alice:s3cr3t@h/x", "-remote=https://bob:s3cr3t@h/y"}}
	got := h.String()
	if strings.Contains(got, "s3cr3t") || !strings.Contains(got, "https://REDACTED@h/x") {
		t.Errorf("LockHolder.String() = %q, want the URLs redacted", got)
	}
}

// TestLockFilePlanted is the attack of issue 29 (item 5) on the cache's
// lock file, into which the holder's record is written: a link to a file
// outside, or a named pipe, planted at it is refused with an error that
// names it, never written through or waited on.
func TestLockFilePlanted(t *testing.T) {
	for _, kind := range []string{safeiotest.Symlink, safeiotest.DanglingSymlink, safeiotest.FIFO, safeiotest.HardLink} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			outside := safeiotest.Plant(t, kind, filepath.Join(dir, "lock"))
			safeiotest.NoHang(t, func() {
				s, err := cache.Open(t.Context(), dir, cache.Options{LockTimeout: -1})
				if err == nil {
					s.Close()
					t.Errorf("%s: the cache opened", kind)
					return
				}
				if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), "lock") {
					t.Errorf("%s: err = %v, want a not-regular lock file", kind, err)
				}
			})
			safeiotest.CheckOutside(t, kind, outside)
		})
	}
}
