package safeio

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"dragonx/internal/safeio/safeiotest"
)

func TestReadFileRefusesFIFO(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	safeiotest.NoHang(t, func() {
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

// TestOpenStateRefusesPlanted is the attack of issue 29 (item 5): a link,
// a pipe or a second name planted where dragonx keeps its resume state is
// neither followed, waited on nor written through.
func TestOpenStateRefusesPlanted(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix file kinds")
	}
	for _, kind := range []string{safeiotest.Symlink, safeiotest.DanglingSymlink, safeiotest.FIFO, safeiotest.HardLink, safeiotest.Dir} {
		t.Run(kind, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "groups.jsonl")
			outside := safeiotest.Plant(t, kind, path)
			safeiotest.NoHang(t, func() {
				f, err := OpenState(path, os.O_APPEND, 0o644)
				if err == nil {
					f.Write([]byte("overwritten\n"))
					f.Close()
					t.Errorf("%s: opened", kind)
					return
				}
				if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), path) {
					t.Errorf("%s: err = %v, want a not-regular error naming the path", kind, err)
				}
			})
			if kind != safeiotest.Dir {
				safeiotest.CheckOutside(t, kind, outside)
			}
		})
	}
}

func TestOpenStateRegular(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	f, err := OpenState(path, 0, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("a\n"))
	f.Close()
	f, err = OpenState(path, os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("b\n"))
	f.Close()
	if b, _ := os.ReadFile(path); string(b) != "a\nb\n" {
		t.Errorf("file holds %q, want a, then b appended", b)
	}
}

// TestWriteAtomicReplacesPlanted: a whole-file write replaces what was
// planted at the path and never writes through it.
func TestWriteAtomicReplacesPlanted(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix file kinds")
	}
	for _, kind := range []string{safeiotest.Symlink, safeiotest.DanglingSymlink, safeiotest.FIFO, safeiotest.HardLink} {
		t.Run(kind, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trainer.ckpt")
			outside := safeiotest.Plant(t, kind, path)
			safeiotest.NoHang(t, func() {
				err := WriteAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err })
				if err != nil {
					t.Error(err)
				}
			})
			safeiotest.CheckOutside(t, kind, outside)
			if b, err := ReadFile(path, 10, Options{NoFollow: true}); err != nil || string(b) != "new\n" {
				t.Errorf("%s: the path now holds %q (%v), want the new regular file", kind, b, err)
			}
		})
	}
}

func TestOpenLimited(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ckpt")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limit int64
		ok    bool
	}{{10, true}, {100, true}, {9, false}} {
		f, err := OpenLimited(p, c.limit, Options{NoFollow: true})
		if !c.ok {
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), p) {
				t.Errorf("limit %d: err = %v, want too large naming the file", c.limit, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil || string(b) != "0123456789" {
			t.Errorf("limit %d: read %q, %v", c.limit, b, err)
		}
	}
	// A file that grows past the limit after the open.
	f, err := OpenLimited(p, 12, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.WriteFile(p, []byte("0123456789abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(f); !errors.Is(err, ErrTooLarge) || len(b) > 12 {
		t.Errorf("grown: read %d bytes, %v; want at most 12 and too large", len(b), err)
	}
	if runtime.GOOS != "windows" {
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o644); err == nil {
			safeiotest.NoHang(t, func() {
				if _, err := OpenLimited(fifo, 10, Options{NoFollow: true}); !errors.Is(err, ErrNotRegular) {
					t.Errorf("fifo: err = %v", err)
				}
			})
		}
	}
}

func TestReadLine(t *testing.T) {
	for _, c := range []struct {
		in    string
		max   int
		lines []string
		err   bool
	}{
		{"a\nbc\n", 2, []string{"a", "bc"}, false},
		{"a\nbc", 2, []string{"a", "bc"}, false},
		{"a\nbcd\n", 2, []string{"a"}, true},
		{"a\nbcd", 2, []string{"a"}, true},
		{"\n\n", 0, []string{"", ""}, false},
	} {
		br := bufio.NewReaderSize(strings.NewReader(c.in), 16)
		var got []string
		var err error
		for {
			var line []byte
			line, err = ReadLine(br, c.max)
			if err != nil && !errors.Is(err, io.EOF) {
				break
			}
			if err == nil || len(line) > 0 {
				got = append(got, string(line))
			}
			if err != nil {
				err = nil
				break
			}
		}
		if !slices.Equal(got, c.lines) || (err != nil) != c.err || (err != nil && !errors.Is(err, ErrLineTooLong)) {
			t.Errorf("%q (max %d): lines %q, err %v", c.in, c.max, got, err)
		}
	}
}

// TestReadLineMemory: a line of 1 GiB without a newline (a sparse file, so
// the test costs no disk) fails at the cap, having used memory of the
// order of the cap, not of the line.
func TestReadLineMemory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 30); err != nil {
		t.Skip("sparse file:", err)
	}
	const max = 1 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ReadLine(bufio.NewReaderSize(f, 64<<10), max)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("err = %v, want a line too long over 1 MiB", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*max {
		t.Errorf("allocated %d bytes for a capped line of %d", alloc, max)
	}
	if off, _ := f.Seek(0, io.SeekCurrent); off > 2*max {
		t.Errorf("read %d bytes of the line, want about the cap of %d", off, max)
	}
}
