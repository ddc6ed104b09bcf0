package runlog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"dragonx/cache"
	"dragonx/stages"
)

// Format is the first field of every entry; an entry of another format is
// skipped by List (and named in its Skipped list).
const Format = "dragonx run 1"

// DirName is the folder of the run log inside a cache directory.
const DirName = "runs"

// Dir returns the run log's folder inside the cache directory cacheDir.
func Dir(cacheDir string) string { return filepath.Join(cacheDir, DirName) }

// Entry is one recorded run.
type Entry struct {
	Format string `json:"format"`
	// File is the experiment file, relative to its project root (the
	// folder holding .git, go.mod or .dragonx) when it lies inside one;
	// FileAbs is its absolute path on the host that ran it.
	File    string       `json:"file"`
	FileAbs string       `json:"file_abs"`
	Digest  cache.Digest `json:"file_digest"` // of the file's bytes
	// Vars are the experiment's variables (their final values as JSON),
	// sorted by name.
	Vars     []Var         `json:"vars,omitempty"`
	Targets  []string      `json:"targets,omitempty"` // STAGE arguments, if any
	Stages   []Stage       `json:"stages"`
	OK       bool          `json:"ok"` // no stage failed or was skipped
	Tool     string        `json:"tool"`
	Host     string        `json:"host"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Metrics  []Metric      `json:"metrics,omitempty"`

	// ID is the entry's name, the hex SHA-256 of its stored bytes; set by
	// Write and Read, not stored.
	ID string `json:"-"`
}

// Var is one variable of the experiment.
type Var struct {
	Name  string `json:"name"`
	Value string `json:"value"` // JSON
	// Set is true when the value differs from the declared default (a
	// -var flag or a -var-file gave it).
	Set bool `json:"set,omitempty"`
}

// Stage is one stage of the run.
type Stage struct {
	Stage       string  `json:"stage"` // address: stage.rl or stage.rl["log"]
	Kind        string  `json:"kind"`
	KindVersion string  `json:"kind_version"`
	Key         string  `json:"key,omitempty"` // empty when it could not be computed
	Status      string  `json:"status"`        // ran, cached, failed, skipped, ...
	Params      []Param `json:"params"`
	// Outputs are the stage's outputs by name (a ran or cached stage).
	Outputs  map[string]cache.Digest `json:"outputs,omitempty"`
	Duration time.Duration           `json:"duration_ns,omitempty"`
}

// Param is one parameter of a stage: its name and canonical JSON value,
// as the stage's key has it.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func toParams(ps []stages.Param) []Param {
	out := make([]Param, len(ps))
	for i, p := range ps {
		out[i] = Param{p.Name, p.Value}
	}
	return out
}

func fromParams(ps []Param) []stages.Param {
	out := make([]stages.Param, len(ps))
	for i, p := range ps {
		out[i] = stages.Param{Name: p.Name, Value: p.Value}
	}
	return out
}

// Short returns the first 12 hex digits of the entry's id.
func (e *Entry) Short() string { return short(e.ID) }

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// StageByAddr returns the stage with address addr, or nil.
func (e *Entry) StageByAddr(addr string) *Stage {
	for i := range e.Stages {
		if e.Stages[i].Stage == addr {
			return &e.Stages[i]
		}
	}
	return nil
}

// Keys returns the cache keys of the entry's ran and cached stages: what
// `dragonx cache gc` keeps while the entry exists.
func (e *Entry) Keys() []cache.Key {
	var ks []cache.Key
	for _, s := range e.Stages {
		if s.Key == "" || len(s.Outputs) == 0 {
			continue
		}
		if k, err := cache.ParseKey(s.Key); err == nil {
			ks = append(ks, k)
		}
	}
	return ks
}

// Encode returns the bytes an entry is stored as: indented JSON ending in
// a newline.
func (e *Entry) Encode() ([]byte, error) {
	if e.Format == "" {
		e.Format = Format
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("runlog: encoding the entry: %w", err)
	}
	return append(b, '\n'), nil
}

// Decode parses a stored entry and checks that its bytes hash to id (when
// id is not empty).
func Decode(b []byte, id string) (*Entry, error) {
	if id != "" {
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != id {
			return nil, fmt.Errorf("runlog: run %s is corrupt: its bytes hash to %s", short(id), short(got))
		}
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("runlog: run %s: %w", short(id), err)
	}
	if e.Format != Format {
		return nil, fmt.Errorf("runlog: run %s has format %q, want %q", short(id), e.Format, Format)
	}
	e.ID = id
	return &e, nil
}

// Write stores e in dir (creating it) and sets e.ID. The entry is written
// to a temporary file in dir and renamed to <id>.json, so a crash leaves it
// whole or absent (or, after a power failure, detectably corrupt); writing
// an entry that exists changes nothing.
func Write(dir string, e *Entry) error {
	b, err := e.Encode()
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	id := hex.EncodeToString(sum[:])
	if err := writeBytes(dir, id, b); err != nil {
		return err
	}
	e.ID = id
	return nil
}

// writeBytes writes an entry's bytes as <id>.json in dir: to a temporary
// file, renamed into place.
func writeBytes(dir, id string, b []byte) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("runlog: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("runlog: %w", err)
	}
	tmp := f.Name()
	// No fsync: it would cost more than the rest of recording (2 to 8 ms
	// on the CI machine), and it buys no atomicity. The rename makes the
	// entry appear whole to every other process, also after the writer
	// crashes; after a power failure the file may be empty or torn, and
	// since its name is the hash of the bytes it should hold, List reports
	// it as corrupt and skips it: an entry is used whole or not at all.
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, id+".json"))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("runlog: writing run %s: %w", short(id), err)
	}
	return nil
}

// OfFile returns a filter that accepts the entries of the experiment file
// (by its absolute path).
func OfFile(file string) (func(*Entry) bool, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("runlog: %w", err)
	}
	return func(e *Entry) bool { return e.FileAbs == abs }, nil
}

// Log is the run entries of one folder, newest first.
type Log struct {
	Entries []*Entry
	// Skipped names the files that are not readable entries (corrupt, or
	// of another format), with why.
	Skipped []error
}

// List reads every entry in dir, newest first (by start time, then id). A
// folder that does not exist is an empty log.
func List(dir string) (*Log, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return &Log{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("runlog: %w", err)
	}
	l := &Log{}
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok || !isID(id) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			l.Skipped = append(l.Skipped, fmt.Errorf("runlog: %w", err))
			continue
		}
		e, err := Decode(b, id)
		if err != nil {
			l.Skipped = append(l.Skipped, err)
			continue
		}
		l.Entries = append(l.Entries, e)
	}
	sort.Slice(l.Entries, func(i, j int) bool {
		a, b := l.Entries[i], l.Entries[j]
		if !a.Started.Equal(b.Started) {
			return a.Started.After(b.Started)
		}
		return a.ID < b.ID
	})
	return l, nil
}

func isID(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// ErrNoRun is matched by Resolve's error when no entry answers the name.
var ErrNoRun = errors.New("runlog: no such run")

// Resolve finds the entry a name refers to: "last" (the newest), "last~N"
// (the Nth before it), a whole id, or a unique prefix of one.
func (l *Log) Resolve(name string) (*Entry, error) {
	if rest, ok := strings.CutPrefix(name, "last"); ok {
		n := 0
		if rest != "" {
			num, ok := strings.CutPrefix(rest, "~")
			v, err := strconv.Atoi(num)
			if !ok || err != nil || v < 0 {
				return nil, fmt.Errorf("runlog: %q: want last or last~N with N a count of runs back", name)
			}
			n = v
		}
		if n >= len(l.Entries) {
			return nil, fmt.Errorf("%w: %s (the log holds %d runs)", ErrNoRun, name, len(l.Entries))
		}
		return l.Entries[n], nil
	}
	p := strings.ToLower(name)
	if p == "" || strings.Trim(p, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("runlog: %q is not a run id (hex digits), last or last~N", name)
	}
	var found []*Entry
	for _, e := range l.Entries {
		if strings.HasPrefix(e.ID, p) {
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w: %s", ErrNoRun, name)
	case 1:
		return found[0], nil
	}
	ids := make([]string, 0, len(found))
	for _, e := range found {
		ids = append(ids, e.Short())
	}
	return nil, fmt.Errorf("runlog: %s is ambiguous: runs %s", name, strings.Join(ids, ", "))
}

// Remove deletes the entries of dir that started before t and returns how
// many it removed. It also removes temporary files that interrupted writes
// left (older than t).
func Remove(dir string, before time.Time) (int, error) {
	l, err := List(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range l.Entries {
		if e.Started.Before(before) {
			if err := os.Remove(filepath.Join(dir, e.ID+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
				return n, fmt.Errorf("runlog: %w", err)
			}
			n++
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	for _, t := range tmps {
		if fi, err := os.Stat(t); err == nil && fi.ModTime().Before(before) {
			// A leftover of a crash; failing to remove it loses nothing.
			_ = os.Remove(t)
		}
	}
	return n, nil
}
