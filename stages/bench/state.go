package bench

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"dragonx/internal/safeio"
)

// stateFile is the resume state in the job's state directory: a header
// naming the parameters, then one line per finished (policy, task) group
// with its attempts. An interrupted run resumes after its last whole line.
//
// The file is read and written through safeio: anything at its path but a
// regular file of its own (a symbolic link, a named pipe, a second hard
// link to another file, a directory) is never followed, waited on or
// written through; the state is ignored, the thing removed (a link is
// removed, not its target) and the state rebuilt, as for a state of other
// parameters, with a line in the log.
const stateFile = "groups.jsonl"

// maxState bounds the state file (a full bench's groups are tens of MB).
const maxState = 1 << 30

// stateHeader is the state file's first line.
type stateHeader struct {
	Bench string `json:"bench_state"`
}

// stateGroup is one finished group.
type stateGroup struct {
	Policy   string     `json:"policy"`
	Decoding string     `json:"decoding,omitempty"`
	Task     string     `json:"task"`
	Index    int        `json:"index"`
	Attempts []*Attempt `json:"attempts"`
}

// state holds the finished groups, in memory and (with a state directory)
// in the state file.
type state struct {
	mu     sync.Mutex
	groups map[string][]*Attempt
	f      *os.File
}

// groupKey is a group's key: the task first, so that a task's groups
// share a prefix (taskPrefix).
func groupKey(policy, mode, kind string, index int) string {
	return taskPrefix(kind, index) + policy + "\x00" + mode
}

func taskPrefix(kind string, index int) string { return fmt.Sprintf("%s\x00%d\x00", kind, index) }

// groupOf is the state line of a group of attempts (all of one policy,
// mode and task).
func groupOf(atts []*Attempt) stateGroup {
	a := atts[0]
	return stateGroup{Policy: a.Policy, Decoding: a.Decoding, Task: a.Task, Index: a.Index, Attempts: atts}
}

// stateID names what the state's groups depend on: the kind's version and
// the parameters (the state directory is the stage key's, so the inputs
// are the same).
func stateID(sp Spec) string {
	b, _ := json.Marshal(struct {
		V string
		P Params
		N []Policy
	}{Version, sp.Params, sp.Policies})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// openState reads the groups an earlier attempt finished in dir and opens
// the state file to append to ("" dir: no resume, memory only).
func openState(dir string, sp Spec, logf func(string, ...any)) (*state, error) {
	st := &state{groups: map[string][]*Attempt{}}
	if dir == "" {
		return st, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, stateFile)
	id := stateID(sp)
	f, err := safeio.OpenState(path, 0, 0o644)
	if errors.Is(err, safeio.ErrNotRegular) {
		logf("not resuming: %v; removing it", err)
		if err := os.RemoveAll(path); err != nil {
			return nil, fmt.Errorf("the resume state: %w", err)
		}
		f, err = safeio.OpenState(path, 0, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("the resume state: %w", err)
	}
	good, err := readState(f, id, st.groups)
	if err != nil {
		logf("not resuming: %s: %v", path, err)
		st.groups = map[string][]*Attempt{}
		good = 0
	}
	// Drop a torn last line (and a stale file).
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	if good == 0 {
		b, _ := json.Marshal(stateHeader{Bench: id})
		if _, err := f.Write(append(b, '\n')); err != nil {
			f.Close()
			return nil, err
		}
	} else {
		logf("resuming: %d (policy, task) groups finished by an earlier attempt", len(st.groups))
	}
	st.f = f
	return st, nil
}

// readState reads the state file f into groups and returns the length of
// its whole, valid lines; an error when the file is another run's or
// larger than maxState.
func readState(f *os.File, id string, groups map[string][]*Attempt) (int64, error) {
	b, err := io.ReadAll(io.LimitReader(f, maxState+1))
	if err != nil {
		return 0, err
	}
	if len(b) > maxState {
		return 0, fmt.Errorf("the state file is larger than %s", safeio.FormatSize(maxState))
	}
	var good int64
	r := bufio.NewReader(bytes.NewReader(b))
	for n := 0; ; n++ {
		line, err := r.ReadBytes('\n')
		if err != nil {
			break // EOF: a line without its newline is torn
		}
		if n == 0 {
			var h stateHeader
			if json.Unmarshal(line, &h) != nil || h.Bench != id {
				return 0, errors.New("the state file is of other parameters")
			}
		} else {
			var g stateGroup
			if json.Unmarshal(line, &g) != nil || len(g.Attempts) == 0 {
				break
			}
			groups[groupKey(g.Policy, g.Decoding, g.Task, g.Index)] = g.Attempts
		}
		good += int64(len(line))
	}
	return good, nil
}

// get returns the attempts of policy under decoding mode at task t, if
// finished.
func (s *state) get(policy, mode string, t *Task) ([]*Attempt, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[groupKey(policy, mode, t.Kind, t.Index)]
	return g, ok
}

// baseline returns the baseline latency that the finished groups of task t
// recorded (every attempt of a task carries it), so that a resumed run
// does not judge it again; false when no group of t is finished.
func (s *state) baseline(t *Task) (*float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := taskPrefix(t.Kind, t.Index)
	for k, g := range s.groups {
		if strings.HasPrefix(k, prefix) && len(g) > 0 {
			if b := g[0].BaselineUS; b != nil {
				v := *b
				return &v, true
			}
			return nil, true
		}
	}
	return nil, false
}

// count is the number of finished groups.
func (s *state) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.groups)
}

// put records a finished group (its attempts are of one policy, mode and
// task; at least one).
func (s *state) put(atts []*Attempt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := groupOf(atts)
	s.groups[groupKey(g.Policy, g.Decoding, g.Task, g.Index)] = atts
	if s.f == nil {
		return nil
	}
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if _, err := s.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("the resume state: %w", err)
	}
	return nil
}

func (s *state) close() {
	if s.f != nil {
		s.f.Close()
	}
}
