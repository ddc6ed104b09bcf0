// Package safeiotest plants, for tests, what someone could leave where
// dragonx keeps a file of its own (a symbolic link to a file outside, a
// named pipe, a second hard link of an outside file, a directory), and
// checks afterwards that nothing was written through it. It is the
// standing attack suite of issue 29 (item 5), shared by the packages whose
// files go through safeio.
package safeiotest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The kinds of things Plant makes.
const (
	Symlink         = "symlink"
	DanglingSymlink = "dangling symlink"
	FIFO            = "fifo"
	HardLink        = "hard link"
	Dir             = "directory"
)

// Precious is what the outside file holds.
const Precious = "precious\n"

// Plant makes a thing of kind at path and returns the outside file it
// points to (for a link or a hard link; made, holding Precious, for every
// kind but a dangling link, whose target does not exist). It skips the
// test where the system cannot make it.
func Plant(t testing.TB, kind, path string) (outside string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("unix file kinds")
	}
	outside = filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte(Precious), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	switch kind {
	case Symlink:
		err = os.Symlink(outside, path)
	case DanglingSymlink:
		outside = filepath.Join(filepath.Dir(outside), "not-yet")
		err = os.Symlink(outside, path)
	case FIFO:
		err = mkfifo(path)
	case HardLink:
		err = os.Link(outside, path)
	case Dir:
		err = os.Mkdir(path, 0o755)
	default:
		t.Fatalf("safeiotest: unknown kind %q", kind)
	}
	if err != nil {
		t.Skipf("%s: %v", kind, err)
	}
	return outside
}

// CheckOutside fails the test if the outside file of Plant was changed
// (or, for a dangling link, created).
func CheckOutside(t testing.TB, kind, outside string) {
	t.Helper()
	b, err := os.ReadFile(outside)
	switch {
	case kind == DanglingSymlink:
		if err == nil {
			t.Errorf("%s: the link's target %s was created", kind, outside)
		}
	case err != nil || string(b) != Precious:
		t.Errorf("%s: the outside file now holds %q (%v)", kind, b, err)
	}
}

// NoHang runs f and fails the test if it has not returned within 10
// seconds: a regression that blocks on a planted pipe must fail, not hang
// the suite. f must not call t.Fatal (it runs on another goroutine).
func NoHang(t testing.TB, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("blocked for 10s (a named pipe must not be waited on)")
	}
}
