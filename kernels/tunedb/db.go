package tunedb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"dragonx/internal/safeio"
	"dragonx/kernels/workload"
)

// The two files of a database directory, named as TVM's JSONDatabase names them.
const (
	WorkloadFile = "database_workload.json"
	RecordFile   = "database_tuning_record.json"
)

// Options tune how a database is written.
type Options struct {
	// SyncRecords fsyncs the record file after every record. Off, records
	// are fsynced by Sync and Close only (see the package doc).
	SyncRecords bool
}

// Problem is a line a reader skipped.
type Problem struct {
	File   string // WorkloadFile or RecordFile
	Line   int    // 1-based
	Reason string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Reason) }

// DB is a tuning database (see the package doc). Open one with Open or Load.
type DB struct {
	dir  string
	opts Options

	mu        sync.Mutex
	wf, rf    *os.File         // nil for a read-only DB
	workloads []*workload.Spec // by index; nil for a corrupt line
	byHash    map[string]int   // first index of each hash
	records   map[string][]*Record
	problems  []Problem
	buf       []byte
	// lazyWorkloads skips the fsync of each workload line (Merge).
	lazyWorkloads bool
}

// Open opens the database in dir for reading and appending, creating the
// directory and its files if needed, with default Options.
func Open(dir string) (*DB, error) { return OpenWith(dir, Options{}) }

// OpenWith is Open with options.
func OpenWith(dir string, opts Options) (*DB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tunedb: %w", err)
	}
	db := newDB(dir, opts)
	var err error
	if db.wf, err = openAppend(filepath.Join(dir, WorkloadFile)); err != nil {
		return nil, err
	}
	if db.rf, err = openAppend(filepath.Join(dir, RecordFile)); err != nil {
		db.wf.Close()
		return nil, err
	}
	if err := db.read(true); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Load reads the database in dir without changing it. Missing files read
// as empty; a DB returned by Load refuses commits.
func Load(dir string) (*DB, error) {
	db := newDB(dir, Options{})
	if err := db.read(false); err != nil {
		return nil, err
	}
	return db, nil
}

func newDB(dir string, opts Options) *DB {
	return &DB{dir: dir, opts: opts, byHash: map[string]int{}, records: map[string][]*Record{}}
}

// openAppend opens a database file to append to: a regular file of its
// own, never a link, a pipe or a second name of another file (safeio).
func openAppend(path string) (*os.File, error) {
	f, err := safeio.OpenState(path, os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tunedb: %w", err)
	}
	return f, nil
}

// Dir returns the database's directory.
func (db *DB) Dir() string { return db.dir }

// read loads both files. With repair, an incomplete last line is cut off.
func (db *DB) read(repair bool) error {
	err := eachLine(filepath.Join(db.dir, WorkloadFile), db.wf, repair, func(n int, line []byte, complete bool) {
		s, err := parseWorkload(line)
		if err != nil {
			if complete {
				// A complete but corrupt line keeps its index.
				db.workloads = append(db.workloads, nil)
			}
			db.problems = append(db.problems, Problem{WorkloadFile, n, lineReason(err, complete)})
			return
		}
		db.addWorkload(s)
	})
	if err != nil {
		return err
	}
	return eachLine(filepath.Join(db.dir, RecordFile), db.rf, repair, func(n int, line []byte, complete bool) {
		r, err := parseRecord(line)
		if err != nil {
			db.problems = append(db.problems, Problem{RecordFile, n, lineReason(err, complete)})
			return
		}
		if r.Workload >= len(db.workloads) || db.workloads[r.Workload] == nil {
			db.problems = append(db.problems, Problem{RecordFile, n, fmt.Sprintf("names workload %d, which the workload file does not hold", r.Workload)})
			return
		}
		db.addRecord(r)
	})
}

func lineReason(err error, complete bool) string {
	if !complete {
		return "incomplete last line (no newline), skipped: " + err.Error()
	}
	return err.Error()
}

// MaxLineBytes bounds one line of a database file (a tuning record is a
// trace of a few KB). A longer line is an error naming the file and line,
// found after reading MaxLineBytes of it, not the whole line.
const MaxLineBytes = 16 << 20

// eachLine calls fn for every line of the file at path (f, when not nil, is
// the same file opened for appending). complete says whether the line ended
// with a newline. With repair, an incomplete last line that does not parse is
// cut off the file, and one that parses gets its newline. The file must be
// a regular file, not a link (safeio).
func eachLine(path string, f *os.File, repair bool, fn func(n int, line []byte, complete bool)) error {
	rf, _, err := safeio.Open(path, safeio.Options{NoFollow: true})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tunedb: %w", err)
	}
	defer rf.Close()
	br := bufio.NewReaderSize(rf, 1<<16)
	var off int64
	for n := 1; ; n++ {
		line, err := safeio.ReadLine(br, MaxLineBytes)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("tunedb: %s:%d: %w", path, n, err)
		}
		complete := err == nil
		body := bytes.TrimRight(line, "\r")
		switch {
		case complete && len(bytes.TrimSpace(body)) == 0:
		case complete:
			fn(n, body, true)
		case len(line) > 0:
			// Decide what to do with the tail: it is an interrupted write
			// unless it parses.
			if err := handleTail(path, f, repair, off, body, n, fn); err != nil {
				return err
			}
		}
		if !complete {
			return nil
		}
		off += int64(len(line)) + 1
	}
}

func handleTail(path string, f *os.File, repair bool, off int64, body []byte, n int, fn func(int, []byte, bool)) error {
	var parses bool
	if filepath.Base(path) == WorkloadFile {
		_, err := parseWorkload(body)
		parses = err == nil
	} else {
		_, err := parseRecord(body)
		parses = err == nil
	}
	if parses {
		fn(n, body, true)
		if repair && f != nil {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				return fmt.Errorf("tunedb: terminating the last line of %s: %w", path, err)
			}
		}
		return nil
	}
	fn(n, body, false)
	if repair && f != nil {
		if err := f.Truncate(off); err != nil {
			return fmt.Errorf("tunedb: cutting the incomplete last line of %s: %w", path, err)
		}
	}
	return nil
}

func (db *DB) addWorkload(s *workload.Spec) int {
	idx := len(db.workloads)
	db.workloads = append(db.workloads, s)
	if _, ok := db.byHash[s.Hash()]; !ok {
		db.byHash[s.Hash()] = idx
	}
	return idx
}

func (db *DB) addRecord(r *Record) {
	h := db.workloads[r.Workload].Hash()
	db.records[h] = append(db.records[h], r)
}

// Problems returns the lines the reader skipped, in file order (workload
// file first).
func (db *DB) Problems() []Problem {
	db.mu.Lock()
	defer db.mu.Unlock()
	return append([]Problem(nil), db.problems...)
}

// CommitWorkload adds a workload and returns its index; a workload with the
// same spec hash that is already there keeps its index.
func (db *DB) CommitWorkload(s *workload.Spec) (int, error) {
	if s == nil {
		return 0, errors.New("tunedb: commit of a nil workload")
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if i, ok := db.byHash[s.Hash()]; ok {
		return i, nil
	}
	if db.wf == nil {
		return 0, errors.New("tunedb: the database was loaded read-only")
	}
	db.buf = appendWorkloadLine(db.buf[:0], s)
	if _, err := db.wf.Write(db.buf); err != nil {
		return 0, fmt.Errorf("tunedb: writing workload %s: %w", s.Label(), err)
	}
	if db.lazyWorkloads {
		return db.addWorkload(s), nil
	}
	if err := db.wf.Sync(); err != nil {
		return 0, fmt.Errorf("tunedb: syncing %s: %w", WorkloadFile, err)
	}
	return db.addWorkload(s), nil
}

// CommitRecord appends a record of a committed workload.
func (db *DB) CommitRecord(r *Record) error {
	if r == nil {
		return errors.New("tunedb: commit of a nil record")
	}
	if err := r.check(); err != nil {
		return fmt.Errorf("tunedb: %w", err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.rf == nil {
		return errors.New("tunedb: the database was loaded read-only")
	}
	if r.Workload < 0 || r.Workload >= len(db.workloads) || db.workloads[r.Workload] == nil {
		return fmt.Errorf("tunedb: record names workload %d, which is not in the database", r.Workload)
	}
	var err error
	if db.buf, err = r.appendLine(db.buf[:0]); err != nil {
		return fmt.Errorf("tunedb: %w", err)
	}
	if _, err := db.rf.Write(db.buf); err != nil {
		return fmt.Errorf("tunedb: writing a record: %w", err)
	}
	if db.opts.SyncRecords {
		if err := db.rf.Sync(); err != nil {
			return fmt.Errorf("tunedb: syncing %s: %w", RecordFile, err)
		}
	}
	db.addRecord(r)
	return nil
}

// Workloads returns the workloads by index (nil where a line was corrupt).
func (db *DB) Workloads() []*workload.Spec {
	db.mu.Lock()
	defer db.mu.Unlock()
	return append([]*workload.Spec(nil), db.workloads...)
}

// Lookup returns the index of a workload with s's hash.
func (db *DB) Lookup(s *workload.Spec) (int, bool) {
	db.mu.Lock()
	defer db.mu.Unlock()
	i, ok := db.byHash[s.Hash()]
	return i, ok
}

// Records returns the records of workload i in commit order (those of
// lines holding the same workload included), failures too.
func (db *DB) Records(i int) []*Record {
	db.mu.Lock()
	defer db.mu.Unlock()
	if i < 0 || i >= len(db.workloads) || db.workloads[i] == nil {
		return nil
	}
	return append([]*Record(nil), db.records[db.workloads[i].Hash()]...)
}

// TopK returns the k valid records of workload i with the smallest mean run
// time, best first; ties keep commit order. k <= 0 returns all valid ones.
func (db *DB) TopK(i, k int) []*Record {
	var valid []*Record
	for _, r := range db.Records(i) {
		if r.Valid() {
			valid = append(valid, r)
		}
	}
	sort.SliceStable(valid, func(a, b int) bool { return valid[a].Mean() < valid[b].Mean() })
	if k > 0 && len(valid) > k {
		valid = valid[:k]
	}
	return valid
}

// Sync flushes both files to stable storage.
func (db *DB) Sync() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, f := range []*os.File{db.wf, db.rf} {
		if f == nil {
			continue
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("tunedb: %w", err)
		}
	}
	return nil
}

// Close syncs and closes the files.
func (db *DB) Close() error {
	err := db.Sync()
	if cerr := db.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

// closeFiles closes the files without syncing them.
func (db *DB) closeFiles() error {
	var err error
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, f := range []*os.File{db.wf, db.rf} {
		if f != nil {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("tunedb: %w", cerr)
			}
		}
	}
	db.wf, db.rf = nil, nil
	return err
}
