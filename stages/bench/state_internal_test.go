package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestResumeStatePlanted is the attack of issue 29 (item 5): a symbolic
// link to a file outside the cache, a named pipe or a second hard link of
// an outside file planted at <state>/groups.jsonl is not followed, waited
// on or written through: the state is ignored, the thing removed and the
// state rebuilt as a regular file; the outside file is unchanged. A run
// over a planted link writes the same outputs as a fresh run.
func TestResumeStatePlanted(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix file kinds")
	}
	sp := testSpec()
	const precious = "precious\n"
	for _, kind := range []string{"symlink", "fifo", "hard link"} {
		t.Run(kind, func(t *testing.T) {
			state := t.TempDir()
			path := filepath.Join(state, stateFile)
			outside := filepath.Join(t.TempDir(), "outside")
			if err := os.WriteFile(outside, []byte(precious), 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			switch kind {
			case "symlink":
				err = os.Symlink(outside, path)
			case "fifo":
				err = syscall.Mkfifo(path, 0o644)
			case "hard link":
				err = os.Link(outside, path)
			}
			if err != nil {
				t.Skip(err)
			}
			var log strings.Builder
			logf := func(format string, args ...any) { fmt.Fprintf(&log, format+"\n", args...) }
			done := make(chan error, 1)
			go func() {
				st, err := openState(state, sp, logf)
				if err == nil {
					err = st.put("sft", &Task{Kind: "construction", Index: 0}, []*Attempt{{Policy: "sft"}})
					st.close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("openState: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("blocked for 10s on the planted state file")
			}
			if b, _ := os.ReadFile(outside); string(b) != precious {
				t.Errorf("the outside file now holds %q", b)
			}
			if !strings.Contains(log.String(), "not resuming") || !strings.Contains(log.String(), "not a regular file") {
				t.Errorf("log %q does not say why the state was ignored", log.String())
			}
			info, err := os.Lstat(path)
			if err != nil || !info.Mode().IsRegular() {
				t.Fatalf("the state's path is %v (%v), want a regular file", info.Mode(), err)
			}
			if b, _ := os.ReadFile(path); !bytes.HasPrefix(b, []byte(`{"bench_state":`)) || bytes.Count(b, []byte("\n")) != 2 {
				t.Errorf("the rebuilt state holds %q, want the header and one group", b)
			}
		})
	}
	t.Run("run", func(t *testing.T) {
		fresh, _ := runFake(t, sp, "")
		state := t.TempDir()
		outside := filepath.Join(t.TempDir(), "outside")
		if err := os.WriteFile(outside, []byte(precious), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(state, stateFile)); err != nil {
			t.Skip(err)
		}
		out, _ := runFake(t, sp, state)
		for name, b := range fresh {
			if !bytes.Equal(b, out[name]) {
				t.Errorf("%s differs from a fresh run's", name)
			}
		}
		if b, _ := os.ReadFile(outside); string(b) != precious {
			t.Errorf("the outside file now holds %q", b)
		}
	})
}
