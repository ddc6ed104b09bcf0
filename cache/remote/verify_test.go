package remote

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
	"time"
)

func TestHoldback(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 20_000) // several buffers
	for _, c := range []struct {
		name string
		r    func() io.Reader
	}{
		{"whole", func() io.Reader { return bytes.NewReader(data) }},
		{"one byte at a time", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }},
		{"data with EOF", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) }},
		{"half reads", func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := io.ReadAll(&holdback{r: c.r()})
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("ReadAll = %d bytes, %v; want the %d bytes", len(got), err, len(data))
			}
		})
	}
	// A source that fails at its very end: the last byte never passes.
	boom := errors.New("verification failed")
	for _, n := range []int{0, 1, 5, len(data)} {
		src := io.MultiReader(bytes.NewReader(data[:n]), iotest.ErrReader(boom))
		got, err := io.ReadAll(&holdback{r: src})
		if !errors.Is(err, boom) {
			t.Errorf("%d bytes then an error: err = %v, want %v", n, err, boom)
		}
		if want := max(n-1, 0); len(got) > want {
			t.Errorf("%d bytes then an error: %d bytes passed, want at most %d", n, len(got), want)
		}
	}
	if got, err := io.ReadAll(&holdback{r: bytes.NewReader(nil)}); err != nil || len(got) != 0 {
		t.Errorf("empty source: %d bytes, %v", len(got), err)
	}
}

func TestExactReader(t *testing.T) {
	for _, c := range []struct {
		n, size int64
		ok      bool
	}{{10, 10, true}, {0, 0, true}, {9, 10, false}, {11, 10, false}} {
		_, err := io.ReadAll(&exactReader{r: bytes.NewReader(make([]byte, c.n)), size: c.size})
		if (err == nil) != c.ok {
			t.Errorf("%d bytes announced as %d: err = %v, want ok %v", c.n, c.size, err, c.ok)
		}
	}
}

// TestDirRemovesStaleTemps: the first Put removes temporary files that a
// dead writer left over a day ago, and leaves younger ones (a writer still
// at work).
func TestDirRemovesStaleTemps(t *testing.T) {
	root := t.TempDir()
	d := NewDir(root)
	now := time.Now()
	d.now = func() time.Time { return now }
	tmp := filepath.Join(root, "tmp")
	os.Mkdir(tmp, 0o755)
	old, young := filepath.Join(tmp, "old.123"), filepath.Join(tmp, "young.456")
	os.WriteFile(old, []byte("left"), 0o644)
	os.WriteFile(young, []byte("busy"), 0o644)
	os.Chtimes(old, now.Add(-25*time.Hour), now.Add(-25*time.Hour))
	os.Chtimes(young, now.Add(-time.Hour), now.Add(-time.Hour))
	name := "aa" + string(bytes.Repeat([]byte("0"), 62))
	if err := d.Put(t.Context(), CAS, name, 1, BytesBody([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); err == nil {
		t.Errorf("a day-old temporary file is still there")
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a young temporary file was removed: %v", err)
	}
	ents, _ := os.ReadDir(tmp)
	if len(ents) != 1 {
		t.Errorf("tmp holds %d files after a Put, want only the young one", len(ents))
	}
	info, err := os.Stat(filepath.Join(root, "cas", name))
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("the entry: %v, %v; want mode 0644", info, err)
	}
}
