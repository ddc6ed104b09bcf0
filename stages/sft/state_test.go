package sft

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/internal/safeio"
	"dragonx/internal/safeio/safeiotest"
)

// TestCheckpointPlanted is the attack of issue 29 (item 5) on sft's and
// rl's trainer.ckpt: a symbolic link to a file outside the cache or a named
// pipe planted there is refused on reading (OpenCheckpoint, without
// blocking: the trainer logs it and starts from step 0), and the next
// checkpoint replaces it (safeio.WriteAtomic) without writing through it.
func TestCheckpointPlanted(t *testing.T) {
	for _, kind := range []string{safeiotest.Symlink, safeiotest.FIFO} {
		t.Run(kind, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trainer.ckpt")
			outside := safeiotest.Plant(t, kind, path)
			safeiotest.NoHang(t, func() {
				f, err := OpenCheckpoint(path)
				if err == nil {
					f.Close()
					t.Errorf("%s: opened", kind)
					return
				}
				if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), path) {
					t.Errorf("OpenCheckpoint: err = %v, want a not-regular error naming the path", err)
				}
				if _, err := ReadStateFile(path); !errors.Is(err, safeio.ErrNotRegular) {
					t.Errorf("ReadStateFile: err = %v, want a not-regular error", err)
				}
				if err := safeio.WriteAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "checkpoint\n"); return err }); err != nil {
					t.Error(err)
				}
			})
			safeiotest.CheckOutside(t, kind, outside)
			f, err := OpenCheckpoint(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if b, err := io.ReadAll(f); err != nil || string(b) != "checkpoint\n" {
				t.Errorf("the checkpoint reads %q (%v)", b, err)
			}
		})
	}
}
