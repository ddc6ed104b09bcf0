package sft

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"dragonx/internal/safeio"
)

// TestCheckpointPlanted is the attack of issue 29 (item 5) on sft's and
// rl's trainer.ckpt: a symbolic link to a file outside the cache or a named
// pipe planted there is refused on reading (OpenCheckpoint, without
// blocking: the trainer logs it and starts from step 0), and the next
// checkpoint replaces it (safeio.WriteAtomic) without writing through it.
func TestCheckpointPlanted(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix file kinds")
	}
	const precious = "precious\n"
	for _, kind := range []string{"symlink", "fifo"} {
		t.Run(kind, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trainer.ckpt")
			outside := filepath.Join(t.TempDir(), "outside")
			if err := os.WriteFile(outside, []byte(precious), 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			if kind == "symlink" {
				err = os.Symlink(outside, path)
			} else {
				err = syscall.Mkfifo(path, 0o644)
			}
			if err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() {
				f, err := OpenCheckpoint(path)
				if err == nil {
					f.Close()
					done <- errors.New("opened")
					return
				}
				if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), path) {
					done <- err
					return
				}
				if _, err := ReadStateFile(path); !errors.Is(err, safeio.ErrNotRegular) {
					done <- err
					return
				}
				done <- safeio.WriteAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "checkpoint\n"); return err })
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("blocked for 10s on the planted checkpoint")
			}
			if b, _ := os.ReadFile(outside); string(b) != precious {
				t.Errorf("the outside file now holds %q", b)
			}
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
