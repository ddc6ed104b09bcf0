package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/internal/safeio/safeiotest"
)

// TestResumeStatePlanted is the attack of issue 29 (item 5): a symbolic
// link to a file outside the cache, a named pipe or a second hard link of
// an outside file planted at <state>/groups.jsonl is not followed, waited
// on or written through: the state is ignored, the thing removed and the
// state rebuilt as a regular file; the outside file is unchanged. A run
// over a planted link writes the same outputs as a fresh run.
func TestResumeStatePlanted(t *testing.T) {
	sp := testSpec()
	for _, kind := range []string{safeiotest.Symlink, safeiotest.FIFO, safeiotest.HardLink} {
		t.Run(kind, func(t *testing.T) {
			state := t.TempDir()
			path := filepath.Join(state, stateFile)
			outside := safeiotest.Plant(t, kind, path)
			var log strings.Builder
			logf := func(format string, args ...any) { fmt.Fprintf(&log, format+"\n", args...) }
			safeiotest.NoHang(t, func() {
				st, err := openState(state, sp, logf)
				if err == nil {
					err = st.put([]*Attempt{{Policy: "sft", Task: "construction", Index: 0}})
					st.close()
				}
				if err != nil {
					t.Errorf("openState: %v", err)
				}
			})
			safeiotest.CheckOutside(t, kind, outside)
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
		outside := safeiotest.Plant(t, safeiotest.Symlink, filepath.Join(state, stateFile))
		out, _ := runFake(t, sp, state)
		for name, b := range fresh {
			if !bytes.Equal(b, out[name]) {
				t.Errorf("%s differs from a fresh run's", name)
			}
		}
		safeiotest.CheckOutside(t, safeiotest.Symlink, outside)
	})
}
