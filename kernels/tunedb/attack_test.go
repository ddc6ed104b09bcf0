package tunedb

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"dragonx/internal/safeio"
	"dragonx/internal/safeio/safeiotest"
)

// TestOverlongLine is the attack of issue 29 (item 4): a record file whose
// second line is 1 GiB without a newline (sparse: no disk) fails with the
// file and line, having read about MaxLineBytes of it, not the gigabyte.
func TestOverlongLine(t *testing.T) {
	dir := t.TempDir()
	writeDB(t, dir, benchSpecs(t, 1), 1)
	path := filepath.Join(dir, RecordFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()+1<<30); err != nil {
		t.Skip("sparse file:", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for name, open := range map[string]func(string) (*DB, error){"Load": Load, "Open": Open} {
		_, err := open(dir)
		if !errors.Is(err, safeio.ErrLineTooLong) || !strings.Contains(err.Error(), RecordFile+":2:") || !strings.Contains(err.Error(), "16 MiB") {
			t.Errorf("%s: err = %v, want a line too long at %s:2", name, err, RecordFile)
		}
	}
	runtime.ReadMemStats(&after)
	// Growing a slice to the cap allocates a few times the cap in all (the
	// attack took 3.1 GB); the reads stop at the cap.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2*8*MaxLineBytes {
		t.Errorf("two reads allocated %d MiB in all for a line capped at %d MiB", alloc>>20, MaxLineBytes>>20)
	}
	if st2, _ := os.Stat(path); st2.Size() != st.Size()+1<<30 {
		t.Errorf("Open changed the file (size %d)", st2.Size())
	}
}

// TestPlantedFiles is the attack of issue 29 (item 5) on a database: a
// symbolic link at a database file is neither read nor appended through
// (the outside file is unchanged), and a named pipe does not hang Open or
// Load; each is an error naming the file.
func TestPlantedFiles(t *testing.T) {
	for _, kind := range []string{safeiotest.Symlink, safeiotest.FIFO} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			writeDB(t, dir, benchSpecs(t, 1), 1)
			path := filepath.Join(dir, RecordFile)
			os.Remove(path)
			outside := safeiotest.Plant(t, kind, path)
			safeiotest.NoHang(t, func() {
				for name, open := range map[string]func(string) (*DB, error){"Load": Load, "Open": Open} {
					db, err := open(dir)
					if err == nil {
						db.CommitRecord(record(t, 0, 1))
						db.Close()
						t.Errorf("%s: opened the database", name)
						continue
					}
					if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), path) {
						t.Errorf("%s: err = %v, want a not-regular error naming %s", name, err, path)
					}
				}
			})
			safeiotest.CheckOutside(t, kind, outside)
		})
	}
}
