package cache

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// DefaultChunkSize is the size of the chunks a large blob is stored in.
// Chunks are values in Badger's value log; 1 MiB keeps a 2 GB blob at 2048
// keys (a few hundred KB of index) while each chunk stays a single cheap
// value-log write, and bounds the memory a streaming put or read holds to a
// few chunks.
const DefaultChunkSize = 1 << 20

// inlineMax is the largest blob stored inside its header (in the LSM tree,
// read with the header in one lookup) instead of in chunks. Most manifests'
// logs and small outputs fit; 16 KiB stays well under valueThreshold.
const inlineMax = 16 << 10

// putPipeline is how many chunks a PutBlob may have in flight to Badger
// while it reads and hashes the next one.
const putPipeline = 4

// dbDirName is the Badger database inside a cache directory.
const dbDirName = "db"

// Options configure Open. The zero value is ready to use.
type Options struct {
	// LockTimeout is how long Open waits while another process holds the
	// cache directory: 0 means DefaultLockTimeout, a negative value fails at
	// once.
	LockTimeout time.Duration
	// OnLockWait, if set, is called when Open starts waiting for another
	// process, and again if the holder changes, so the caller can tell its
	// user ("waiting for pid 1234 (dragonx run paper.hcl) since ...").
	OnLockWait func(LockHolder)
	// Logger receives Badger's warnings and errors (its info and debug
	// messages at debug level). Nil discards them: Badger never writes to
	// the terminal.
	Logger *slog.Logger
	// ChunkSize is the chunk size for new blobs; 0 means DefaultChunkSize.
	// Stored blobs record theirs, so it may change between opens. Tests use
	// small values to exercise chunk boundaries.
	ChunkSize int
	// Now is the clock (for the lock's "since"); nil means time.Now.
	Now func() time.Time

	vlogFileSize int64 // tests shrink the value-log files (export_test.go)
}

// Badger is the Store used by real runs: a Badger database in a cache
// directory, guarded by a process lock. It is safe for concurrent use by the
// goroutines of one process; a second process waits for the lock (see Open).
type Badger struct {
	dir       string
	lock      *dirLock
	chunkSize int
	logger    *slog.Logger
	// vlogFileSize overrides the value-log file size (tests); 0: default.
	vlogFileSize int64

	// dbmu guards db and writable. Every operation holds it shared while it
	// uses db; the one switch from a read-only to a writable database holds
	// it exclusively. The store opens Badger read-only, which costs well
	// under a millisecond, because a writable open creates (and Close
	// syncs and deletes) a value-log file and a memtable even when nothing
	// is written: about 10 ms, most of a no-op run's budget. The first
	// operation that must write reopens it writable.
	dbmu     sync.RWMutex
	db       *badger.DB // nil after Close or a failed reopen
	writable bool
	dbErr    error // why db is nil

	// maint is the write lock: held shared by every write (a PutBlob while
	// it writes chunks, every update transaction) and exclusively by a drop
	// of chunks (dropPending, the leftover sweep). Badger's DropPrefix makes
	// concurrent writes fail, and a sweep must never take the chunks of a
	// blob that is still being written for those of an abandoned one.
	maint sync.RWMutex
	// pmu guards pending: the blob ids of failed writes whose chunks are
	// still to be dropped (dropPending).
	pmu     sync.Mutex
	pending []blobID

	closeOnce sync.Once
	closeErr  error
}

var _ Store = (*Badger)(nil)

// Open opens (creating it if needed) the cache in dir. It first takes the
// directory's process lock: if another process holds it, Open waits up to
// opts.LockTimeout, reporting the holder through opts.OnLockWait, then fails
// with a *LockedError. The lock is released by Close, or by the kernel if
// the process dies. A cache on a network file system is not supported:
// flock(2) there may not exclude other machines.
func Open(ctx context.Context, dir string, opts Options) (*Badger, error) {
	if dir == "" {
		return nil, errors.New("cache: Open: empty directory name")
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	timeout := opts.LockTimeout
	if timeout == 0 {
		timeout = DefaultLockTimeout
	}
	lock, err := acquireLock(ctx, dir, lockOptions{timeout: timeout, onWait: opts.OnLockWait, now: now})
	if err != nil {
		return nil, err
	}
	writeREADME(dir)
	chunk := opts.ChunkSize
	if chunk == 0 {
		chunk = DefaultChunkSize
	}
	if chunk < 1 || chunk > 64<<20 {
		lock.release()
		return nil, fmt.Errorf("cache: chunk size %d out of range [1, 64 MiB]", chunk)
	}
	s := &Badger{dir: dir, lock: lock, chunkSize: chunk, logger: opts.Logger, vlogFileSize: opts.vlogFileSize}
	// A database that does not exist yet opens writable, and so does one
	// that a crash left needing recovery: Badger replays (and truncates) a
	// memtable's write-ahead file, which a clean Close removes, only when
	// writable. The read-only attempt is a fast path; if it fails for any
	// other reason, the writable open reports the problem.
	dbDir := filepath.Join(dir, dbDirName)
	_, noManifest := os.Stat(filepath.Join(dbDir, "MANIFEST"))
	wals, _ := filepath.Glob(filepath.Join(dbDir, "*.mem"))
	if noManifest == nil && len(wals) == 0 {
		if db, err := s.openDB(true); err == nil {
			s.db = db
		}
	}
	if s.db == nil {
		if s.db, err = s.openDB(false); err != nil {
			lock.release()
			return nil, err
		}
		s.writable = true
	}
	return s, nil
}

// openDB opens the Badger database, read-only or writable.
func (s *Badger) openDB(readOnly bool) (*badger.DB, error) {
	o := badgerOptions(filepath.Join(s.dir, dbDirName), s.logger).WithReadOnly(readOnly)
	if s.vlogFileSize > 0 {
		o = o.WithValueLogFileSize(s.vlogFileSize)
	}
	db, err := badger.Open(o)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("cache: %s is in use by a program that does not take dragonx's lock (%w): %w", s.dir, errBadgerLocked, err)
		}
		return nil, fmt.Errorf("cache: opening %s: %w", s.dir, err)
	}
	return db, nil
}

// reader returns the database for reading, held until done is called.
func (s *Badger) reader() (db *badger.DB, done func(), err error) {
	s.dbmu.RLock()
	if s.db == nil {
		err := s.dbErr
		s.dbmu.RUnlock()
		return nil, nil, err
	}
	return s.db, s.dbmu.RUnlock, nil
}

// writer returns the database for writing (reopening it writable first if
// needed), held until done is called.
func (s *Badger) writer() (db *badger.DB, done func(), err error) {
	for {
		db, done, err := s.reader()
		if err != nil {
			return nil, nil, err
		}
		if s.writable {
			return db, done, nil
		}
		done()
		if err := s.makeWritable(); err != nil {
			return nil, nil, err
		}
	}
}

// makeWritable reopens the read-only database writable.
func (s *Badger) makeWritable() error {
	s.dbmu.Lock()
	defer s.dbmu.Unlock()
	if s.db == nil || s.writable {
		return nil
	}
	if err := s.db.Close(); err != nil {
		s.db, s.dbErr = nil, fmt.Errorf("cache: closing %s to reopen it writable: %w", s.dir, err)
		return s.dbErr
	}
	// Badger's directory lock is a flock on a descriptor of the database
	// directory. A child that a stage's command is being started in (after
	// fork, before exec closes the descriptor) still holds the read-only
	// open's shared lock for a moment after Close, so the exclusive lock
	// is retried briefly before the cache counts as in use by another
	// program.
	var db *badger.DB
	var err error
	for wait := time.Millisecond; ; wait *= 2 {
		db, err = s.openDB(false)
		if err == nil || !errors.Is(err, errBadgerLocked) || wait > 512*time.Millisecond {
			break
		}
		time.Sleep(wait)
	}
	if err != nil {
		s.db, s.dbErr = nil, err
		return err
	}
	s.db, s.writable = db, true
	return nil
}

// errBadgerLocked is matched by openDB's error when Badger's own directory
// lock is held.
var errBadgerLocked = errors.New("Badger's own directory lock is held")

// badgerOptions tunes Badger for a command-line tool that opens the cache,
// does a few lookups and exits, and now and then streams gigabytes of blobs:
//
//   - Small memtables (8 MiB, 2 of them): Badger sizes each memtable's
//     arena and write-ahead file up front, and a no-op run writes nothing;
//     big blobs go to the value log and add only ~50 bytes per chunk to
//     the memtable.
//   - valueThreshold 64 KiB: manifests, snapshots, stat entries and inline
//     blobs live in the LSM tree; chunks in the value log.
//   - No compression and no block cache: values are hashes, JSON and
//     already-dense artifacts, and a short-lived process never warms a cache.
//   - Two compactors (Badger's minimum short of none) and no L0 compaction
//     on close: Close stays cheap, and a table flushed by one run is merged
//     in the background of a later one.
//   - 256 MiB value-log files: space freed by gc is returned a file at a
//     time, and the newest file never is, so smaller files return it sooner;
//     larger ones keep the number of files Open must map small.
//   - Metrics off, logging routed to opts.Logger or dropped.
func badgerOptions(dir string, logger *slog.Logger) badger.Options {
	o := badger.DefaultOptions(dir).
		WithMemTableSize(8 << 20).
		WithNumMemtables(2).
		WithNumLevelZeroTables(4).
		WithNumLevelZeroTablesStall(12).
		WithBaseTableSize(2 << 20).
		WithBaseLevelSize(8 << 20).
		WithValueThreshold(64 << 10).
		WithValueLogFileSize(256 << 20).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithNumCompactors(2).
		WithCompactL0OnClose(false).
		WithMetricsEnabled(false).
		WithNumGoroutines(2).
		WithLogger(nil)
	if logger != nil {
		o = o.WithLogger(badgerLogger{logger})
	}
	return o
}

// badgerLogger routes Badger's messages to a slog.Logger.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, args ...any) {
	b.l.Error("badger: " + strings.TrimSpace(fmt.Sprintf(f, args...)))
}
func (b badgerLogger) Warningf(f string, args ...any) {
	b.l.Warn("badger: " + strings.TrimSpace(fmt.Sprintf(f, args...)))
}
func (b badgerLogger) Infof(f string, args ...any) {
	b.l.Debug("badger: " + strings.TrimSpace(fmt.Sprintf(f, args...)))
}
func (b badgerLogger) Debugf(f string, args ...any) {
	b.l.Debug("badger: " + strings.TrimSpace(fmt.Sprintf(f, args...)))
}

// Dir returns the cache directory.
func (s *Badger) Dir() string { return s.dir }

// Close closes the database and releases the process lock. Later calls
// return the first call's result.
func (s *Badger) Close() error {
	s.closeOnce.Do(func() {
		// The chunks of failed writes go now, not at the next gc.
		dropErr := s.dropPending(true)
		s.dbmu.Lock()
		defer s.dbmu.Unlock()
		var err error
		if s.db != nil {
			err = s.db.Close()
		}
		s.db, s.dbErr = nil, errClosed
		if lerr := s.lock.release(); err == nil {
			err = lerr
		}
		if err == nil {
			err = dropErr
		}
		if err != nil {
			s.closeErr = fmt.Errorf("cache: closing %s: %w", s.dir, err)
		}
	})
	return s.closeErr
}

// update runs fn in a read-write transaction, retrying when it conflicts
// with a concurrent one.
func (s *Badger) update(ctx context.Context, fn func(txn *badger.Txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.maint.RLock()
	defer s.maint.RUnlock()
	db, done, err := s.writer()
	if err != nil {
		return err
	}
	defer done()
	return update(ctx, db, fn)
}

func update(ctx context.Context, db *badger.DB, fn func(txn *badger.Txn) error) error {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := db.Update(fn)
		if !errors.Is(err, badger.ErrConflict) || attempt == 100 {
			return err
		}
	}
}

// view runs fn in a read-only transaction after checking ctx.
func (s *Badger) view(ctx context.Context, fn func(txn *badger.Txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	db, done, err := s.reader()
	if err != nil {
		return err
	}
	defer done()
	return db.View(fn)
}

// wrapErr prefixes a Badger error with the package and operation.
func wrapErr(op string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var me *MissError
	if errors.As(err, &me) || errors.Is(err, ErrMissingBlob) || errors.Is(err, ErrSizeMismatch) {
		return err
	}
	return fmt.Errorf("cache: %s: %w", op, err)
}

// isMiss reports whether err is a *MissError (an unreadable entry).
func isMiss(err error) bool {
	var me *MissError
	return errors.As(err, &me)
}

// getHeader reads and decodes blob d's header in txn; (nil, nil) when absent.
func getHeader(txn *badger.Txn, d Digest) (*blobHeader, error) {
	item, err := txn.Get(blobKey(d))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, err
	}
	return decodeHeader(d, v)
}

func newBlobID() blobID {
	var id blobID
	rand.Read(id[:])
	return id
}

// PutBlob implements Store. It streams: r is read a chunk at a time, each
// chunk hashed and handed to Badger while the next one is read, so memory
// stays at a few chunks whatever the blob's size. The blob's header, the
// only key that names its digest, is written after every chunk, so a crash
// or a failed read leaves no visible blob. The chunks of a write that fails
// (a read error, a rejected stream, a cancelled context) or that turns out
// to duplicate a stored blob are dropped as one operation (see dropPending);
// a crash leaves them as leftovers, which gc drops.
func (s *Badger) PutBlob(ctx context.Context, r io.Reader) (Digest, int64, error) {
	if err := ctx.Err(); err != nil {
		return Digest{}, 0, err
	}
	h := sha256.New()
	cr := ctxReader{ctx, r}
	first := make([]byte, s.chunkSize)
	n, err := io.ReadFull(cr, first)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return Digest{}, 0, fmt.Errorf("cache: reading blob: %w", err)
	}
	if err != nil && n <= inlineMax { // the whole blob, and small
		h.Write(first[:n])
		var d Digest
		h.Sum(d[:0])
		// Storing what is already there writes nothing (and so does not
		// make a read-only database writable).
		if ok, err := s.HasBlob(ctx, d); err != nil || ok {
			return d, int64(n), err
		}
		err := s.update(ctx, func(txn *badger.Txn) error {
			if old, err := getHeader(txn, d); err != nil || old != nil {
				if isMiss(err) { // an unreadable header: replace it
					return txn.Set(blobKey(d), encodeInlineHeader(first[:n]))
				}
				return err
			}
			return txn.Set(blobKey(d), encodeInlineHeader(first[:n]))
		})
		if err != nil {
			return Digest{}, 0, wrapErr("storing blob", err)
		}
		return d, int64(n), nil
	}
	d, size, err := s.putChunked(ctx, cr, h, first, n, err)
	// Drop the chunks of this write if it failed, now that it holds no
	// lock; another write still running leaves them to the last one.
	s.dropPending(false)
	return d, size, err
}

// putChunked stores a blob too large to be inline: first[:n] is its first
// chunk, and readErr the error that reading it returned (nil if more
// follows). It holds the store's write lock shared while it writes, so no
// drop of leftovers runs meanwhile; a failed write's chunks are queued for
// dropPending.
func (s *Badger) putChunked(ctx context.Context, cr io.Reader, h hash.Hash, first []byte, n int, readErr error) (Digest, int64, error) {
	s.maint.RLock()
	defer s.maint.RUnlock()
	db, done, err := s.writer()
	if err != nil {
		return Digest{}, 0, err
	}
	defer done()
	w := newChunkWriter(db, s.chunkSize, newBlobID())
	abort := func() {
		w.wg.Wait()
		if w.next > 0 {
			s.pmu.Lock()
			s.pending = append(s.pending, w.id)
			s.pmu.Unlock()
		}
	}
	size := int64(0)
	buf, err := first, readErr
	for {
		h.Write(buf[:n])
		size += int64(n)
		if n > 0 {
			w.write(buf[:n])
		}
		if err != nil { // io.EOF or io.ErrUnexpectedEOF after a read above
			break
		}
		if w.failed() {
			break // wait reports why
		}
		buf = w.buffer()
		n, err = io.ReadFull(cr, buf)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			abort()
			return Digest{}, 0, fmt.Errorf("cache: reading blob: %w", err)
		}
	}
	if err := w.wait(); err != nil {
		abort()
		return Digest{}, 0, wrapErr("storing blob chunks", err)
	}
	var d Digest
	h.Sum(d[:0])
	dup := false
	err = update(ctx, db, func(txn *badger.Txn) error {
		old, err := getHeader(txn, d)
		if err != nil && !isMiss(err) {
			return err
		}
		if dup = old != nil; dup {
			return nil
		}
		return txn.Set(blobKey(d), encodeChunkedHeader(size, s.chunkSize, w.id))
	})
	if err != nil || dup {
		abort() // the stored copy stays; ours is surplus
	}
	if err != nil {
		return Digest{}, 0, wrapErr("storing blob header", err)
	}
	return d, size, nil
}

// dropPending drops the chunks of the failed writes queued by putChunked,
// all at once with Badger's DropPrefix: unlike tombstones written key by
// key, which an interruption can leave half done and which hide the chunks
// from the leftover sweep while their bytes stay in the value log,
// DropPrefix removes them from every level and records the value-log space
// they held as garbage, so the next Compact (gc) returns it. DropPrefix
// blocks Badger's writes while it runs, so it needs the write lock
// exclusively: with wait false it gives up (leaving the queue to the next
// caller) if another write holds it. Whatever a crash leaves queued is
// found by the leftover sweep.
func (s *Badger) dropPending(wait bool) error {
	s.pmu.Lock()
	empty := len(s.pending) == 0
	s.pmu.Unlock()
	if empty {
		return nil
	}
	if wait {
		s.maint.Lock()
	} else if !s.maint.TryLock() {
		return nil
	}
	defer s.maint.Unlock()
	s.pmu.Lock()
	ids := s.pending
	s.pending = nil
	s.pmu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	db, done, err := s.writer()
	if err != nil {
		return err
	}
	defer done()
	prefixes := make([][]byte, len(ids))
	for i, id := range ids {
		prefixes[i] = chunkPrefix(id)
	}
	if err := db.DropPrefix(prefixes...); err != nil {
		s.pmu.Lock()
		s.pending = append(s.pending, ids...)
		s.pmu.Unlock()
		return wrapErr("dropping the chunks of failed writes", err)
	}
	return nil
}

// chunkWriter writes one blob's chunks with up to putPipeline commits in
// flight, recycling their buffers as Badger finishes with them.
type chunkWriter struct {
	db   *badger.DB
	size int // chunk size
	id   blobID
	next uint32
	free chan []byte
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
	made int
}

func newChunkWriter(db *badger.DB, chunkSize int, id blobID) *chunkWriter {
	return &chunkWriter{db: db, size: chunkSize, id: id, free: make(chan []byte, putPipeline)}
}

// buffer returns a chunk buffer, waiting for an in-flight one if the
// pipeline is full.
func (w *chunkWriter) buffer() []byte {
	if w.made < putPipeline {
		select {
		case b := <-w.free:
			return b
		default:
		}
		w.made++
		return make([]byte, w.size)
	}
	return <-w.free
}

// write commits b as the next chunk; b is returned to the pool once Badger
// has copied it into the value log and memtable.
func (w *chunkWriter) write(b []byte) {
	txn := w.db.NewTransaction(true)
	if err := txn.Set(chunkKey(w.id, w.next), b); err != nil {
		txn.Discard()
		w.fail(err)
		w.free <- b[:cap(b)]
		return
	}
	w.next++
	w.wg.Add(1)
	txn.CommitWith(func(err error) {
		if err != nil {
			w.fail(err)
		}
		w.free <- b[:cap(b)]
		w.wg.Done()
	})
}

func (w *chunkWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// failed reports whether a commit has failed already.
func (w *chunkWriter) failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err != nil
}

// wait waits for every commit and returns the first error.
func (w *chunkWriter) wait() error {
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// OpenBlob implements Store. The reader fetches one chunk at a time and
// verifies the digest at the end (see Store.OpenBlob); a missing or
// short chunk is reported as corruption.
func (s *Badger) OpenBlob(ctx context.Context, d Digest) (io.ReadCloser, int64, error) {
	var h *blobHeader
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		h, err = getHeader(txn, d)
		return err
	})
	if err != nil {
		return nil, 0, wrapErr("reading blob header", err)
	}
	if h == nil {
		return nil, 0, missing(blobWhat(d), nil)
	}
	if h.inline != nil {
		return newVerifyingReader(bytes.NewReader(h.inline), nil, d, h.size), h.size, nil
	}
	cr := &chunkReader{ctx: ctx, s: s, d: d, h: h}
	return newVerifyingReader(cr, cr, d, h.size), h.size, nil
}

// chunkReader reads a chunked blob's bytes in order.
type chunkReader struct {
	ctx  context.Context
	s    *Badger
	d    Digest
	h    *blobHeader
	next uint32 // next chunk to fetch
	buf  []byte
	off  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.off == len(c.buf) {
		if c.next == c.h.chunks() {
			return 0, io.EOF
		}
		if err := c.fetch(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.buf[c.off:])
	c.off += n
	return n, nil
}

// fetch loads chunk c.next into c.buf.
func (c *chunkReader) fetch() error {
	want := int64(c.h.chunkSize)
	if rest := c.h.size - int64(c.next)*want; rest < want {
		want = rest
	}
	if c.buf == nil {
		c.buf = make([]byte, 0, c.h.chunkSize)
	}
	err := c.s.view(c.ctx, func(txn *badger.Txn) error {
		item, err := txn.Get(chunkKey(c.h.id, c.next))
		if err != nil {
			return err
		}
		c.buf, err = item.ValueCopy(c.buf[:0])
		return err
	})
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, badger.ErrKeyNotFound):
		return corrupt(blobWhat(c.d), "chunk %d of %d is missing", c.next, c.h.chunks())
	case err != nil:
		return corrupt(blobWhat(c.d), "reading chunk %d: %v", c.next, err)
	}
	if int64(len(c.buf)) != want {
		return corrupt(blobWhat(c.d), "chunk %d holds %d bytes, want %d", c.next, len(c.buf), want)
	}
	c.next++
	c.off = 0
	return nil
}

func (c *chunkReader) Close() error { return nil }

// HasBlob implements Store.
func (s *Badger) HasBlob(ctx context.Context, d Digest) (bool, error) {
	var h *blobHeader
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		h, err = getHeader(txn, d)
		return err
	})
	if err != nil {
		var me *MissError
		if errors.As(err, &me) { // an unreadable header is no blob
			return false, nil
		}
		return false, wrapErr("reading blob header", err)
	}
	return h != nil, nil
}

// DeleteBlob implements Store. It removes the header, which makes the blob
// invisible at once; the chunks become leftovers that the sweep removes (gc
// does), returning their space.
//
// The chunks are also queued to be dropped at Close (see dropPending), so a
// command that takes back what it stored (a refused import) leaves nothing
// behind; gc's sweep drops them sooner.
func (s *Badger) DeleteBlob(ctx context.Context, d Digest) error {
	if ok, err := s.exists(ctx, blobKey(d)); err != nil || !ok {
		return wrapErr("deleting blob", err)
	}
	var h *blobHeader
	err := s.update(ctx, func(txn *badger.Txn) error {
		h, _ = getHeader(txn, d)
		return txn.Delete(blobKey(d))
	})
	if err == nil && h != nil && h.inline == nil {
		s.pmu.Lock()
		s.pending = append(s.pending, h.id)
		s.pmu.Unlock()
	}
	return wrapErr("deleting blob", err)
}

// Blobs implements Store, in digest order. A blob whose header cannot be
// decoded is listed with size -1 (OpenBlob reports it as corrupt).
func (s *Badger) Blobs(ctx context.Context, fn func(d Digest, size int64) error) error {
	type entry struct {
		d    Digest
		size int64
	}
	var es []entry
	err := s.iterate(ctx, nsPrefix(nsBlob), true, func(item *badger.Item) error {
		var e entry
		k := item.Key()
		if len(k) != 2+len(e.d) {
			return nil // not a header key of this format: ignore
		}
		copy(e.d[:], k[2:])
		e.size = -1
		item.Value(func(v []byte) error {
			if h, err := decodeHeader(e.d, v); err == nil {
				e.size = h.size
			}
			return nil
		})
		es = append(es, e)
		return nil
	})
	if err != nil {
		return wrapErr("listing blobs", err)
	}
	return each(ctx, es, func(e entry) error { return fn(e.d, e.size) })
}

// iterate calls fn for every item under prefix in one read transaction.
func (s *Badger) iterate(ctx context.Context, prefix []byte, values bool, fn func(*badger.Item) error) error {
	return s.view(ctx, func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.Prefix = prefix
		o.PrefetchValues = values
		it := txn.NewIterator(o)
		defer it.Close()
		n := 0
		for it.Rewind(); it.Valid(); it.Next() {
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if err := fn(it.Item()); err != nil {
				return err
			}
		}
		return nil
	})
}

// GetManifest implements Store.
func (s *Badger) GetManifest(ctx context.Context, k Key) (*Manifest, error) {
	var m *Manifest
	err := s.view(ctx, func(txn *badger.Txn) error {
		var err error
		m, err = getManifest(txn, k)
		return err
	})
	if err != nil {
		return nil, wrapErr("reading manifest", err)
	}
	return m, nil
}

func getManifest(txn *badger.Txn, k Key) (*Manifest, error) {
	item, err := txn.Get(manifestKey(k))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, missing(manifestWhat(k), nil)
	}
	if err != nil {
		return nil, err
	}
	var m *Manifest
	err = item.Value(func(v []byte) error {
		var err error
		m, err = decodeManifest(k, v)
		return err
	})
	return m, err
}

// PutManifest implements Store: one transaction checks that every blob the
// manifest names has a header and writes the manifest; a concurrent
// DeleteBlob of one of them makes it retry and fail.
func (s *Badger) PutManifest(ctx context.Context, m *Manifest) error {
	err := s.update(ctx, func(txn *badger.Txn) error {
		c, err := prepareManifest(m) // afresh: a retry fills the sizes again
		if err != nil {
			return err
		}
		err = completeSizes(c, func(d Digest) (int64, bool, error) {
			h, err := getHeader(txn, d)
			if h == nil && (err == nil || isMiss(err)) {
				return 0, false, nil
			}
			if err != nil {
				return 0, false, err
			}
			return h.size, true, nil
		})
		if err != nil {
			return err
		}
		v, err := encodeManifest(c)
		if err != nil {
			return err
		}
		return txn.Set(manifestKey(c.Key), v)
	})
	return wrapErr("storing manifest", err)
}

// DeleteManifest implements Store.
func (s *Badger) DeleteManifest(ctx context.Context, k Key) error {
	if ok, err := s.exists(ctx, manifestKey(k)); err != nil || !ok {
		return wrapErr("deleting manifest", err)
	}
	return wrapErr("deleting manifest", s.update(ctx, func(txn *badger.Txn) error {
		return txn.Delete(manifestKey(k))
	}))
}

// Manifests implements Store, in key order.
func (s *Badger) Manifests(ctx context.Context, fn func(*Manifest) error) error {
	var ms []*Manifest
	err := s.iterate(ctx, nsPrefix(nsManifest), true, func(item *badger.Item) error {
		var k Key
		if len(item.Key()) != 2+len(k) {
			return nil
		}
		copy(k[:], item.Key()[2:])
		return item.Value(func(v []byte) error {
			if m, err := decodeManifest(k, v); err == nil {
				ms = append(ms, m)
			}
			return nil
		})
	})
	if err != nil {
		return wrapErr("listing manifests", err)
	}
	return each(ctx, ms, fn)
}

// ManifestKeys implements Store, in key order.
func (s *Badger) ManifestKeys(ctx context.Context, fn func(Key) error) error {
	var ks []Key
	err := s.iterate(ctx, nsPrefix(nsManifest), false, func(item *badger.Item) error {
		var k Key
		if len(item.Key()) == 2+len(k) {
			copy(k[:], item.Key()[2:])
			ks = append(ks, k)
		}
		return nil
	})
	if err != nil {
		return wrapErr("listing manifests", err)
	}
	return each(ctx, ks, fn)
}

// TouchManifest implements Store.
func (s *Badger) TouchManifest(ctx context.Context, k Key, t time.Time) error {
	// A read-only look first: most touches are within the hour and write
	// nothing, so a no-op run opens no write transaction.
	m, err := s.GetManifest(ctx, k)
	if err != nil {
		return err
	}
	if !needsTouch(m.LastUsed, t) {
		return nil
	}
	err = s.update(ctx, func(txn *badger.Txn) error {
		m, err := getManifest(txn, k)
		if err != nil {
			return err
		}
		if !needsTouch(m.LastUsed, t) {
			return nil
		}
		m.LastUsed = t
		v, err := encodeManifest(m)
		if err != nil {
			return err
		}
		return txn.Set(manifestKey(k), v)
	})
	return wrapErr("touching manifest", err)
}

// exists reports whether key is present.
func (s *Badger) exists(ctx context.Context, key []byte) (bool, error) {
	ok := false
	err := s.view(ctx, func(txn *badger.Txn) error {
		_, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		ok = err == nil
		return err
	})
	return ok, err
}

// getValue reads the value under key; a plain miss when absent.
func (s *Badger) getValue(ctx context.Context, key []byte, what string) ([]byte, error) {
	var v []byte
	err := s.view(ctx, func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return missing(what, nil)
		}
		if err != nil {
			return err
		}
		v, err = item.ValueCopy(nil)
		return err
	})
	if err != nil {
		return nil, wrapErr("reading "+what, err)
	}
	return v, nil
}

// setValue stores v under key unless it is already there: a no-op run that
// records the same snapshots and stat entries writes nothing.
func (s *Badger) setValue(ctx context.Context, key, v []byte, what string) error {
	if old, err := s.getValue(ctx, key, what); err == nil && bytes.Equal(old, v) {
		return nil
	}
	return wrapErr("storing "+what, s.update(ctx, func(txn *badger.Txn) error {
		return txn.Set(key, v)
	}))
}

// GetSnapshot implements Store.
func (s *Badger) GetSnapshot(ctx context.Context, stage string) ([]byte, error) {
	what := "snapshot of " + stage
	v, err := s.getValue(ctx, stringKey(nsSnapshot, stage), what)
	if err != nil {
		return nil, err
	}
	return decodeValue(what, v)
}

// PutSnapshot implements Store.
func (s *Badger) PutSnapshot(ctx context.Context, stage string, snapshot []byte) error {
	return s.setValue(ctx, stringKey(nsSnapshot, stage), encodeValue(snapshot), "snapshot of "+stage)
}

// GetMeta implements Store.
func (s *Badger) GetMeta(ctx context.Context, name string) ([]byte, error) {
	what := "meta " + name
	v, err := s.getValue(ctx, stringKey(nsMeta, name), what)
	if err != nil {
		return nil, err
	}
	return decodeValue(what, v)
}

// PutMeta implements Store.
func (s *Badger) PutMeta(ctx context.Context, name string, value []byte) error {
	return s.setValue(ctx, stringKey(nsMeta, name), encodeValue(value), "meta "+name)
}

// GetStat implements Store. An entry that does not decode is no entry.
func (s *Badger) GetStat(ctx context.Context, path string) (StatEntry, bool, error) {
	v, err := s.getValue(ctx, stringKey(nsStat, path), "stat entry "+path)
	if errors.Is(err, ErrMiss) {
		return StatEntry{}, false, nil
	}
	if err != nil {
		return StatEntry{}, false, err
	}
	e, err := decodeStat(path, v)
	if err != nil {
		return StatEntry{}, false, nil
	}
	return e, true, nil
}

// PutStat implements Store.
func (s *Badger) PutStat(ctx context.Context, path string, e StatEntry) error {
	v, err := encodeStat(e)
	if err != nil {
		return err
	}
	return s.setValue(ctx, stringKey(nsStat, path), v, "stat entry "+path)
}

// Leftovers implements Housekeeper: chunks that no blob header names, left
// by interrupted writes (kill -9 during PutBlob) and by DeleteBlob. With
// remove, it drops them and their space becomes reclaimable by Compact.
func (s *Badger) Leftovers(ctx context.Context, remove bool) (Leftovers, error) {
	if remove {
		s.maint.Lock()
		defer s.maint.Unlock()
	} else {
		s.maint.RLock()
		defer s.maint.RUnlock()
	}
	var lo Leftovers
	named := map[blobID]bool{}
	dead := map[blobID]bool{}
	err := s.view(ctx, func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.Prefix = nsPrefix(nsBlob)
		it := txn.NewIterator(o)
		for it.Rewind(); it.Valid(); it.Next() {
			var d Digest
			copy(d[:], it.Item().Key()[2:])
			it.Item().Value(func(v []byte) error {
				if h, err := decodeHeader(d, v); err == nil && h.inline == nil {
					named[h.id] = true
				}
				return nil
			})
		}
		it.Close()
		o = badger.DefaultIteratorOptions
		o.Prefix = nsPrefix(nsChunk)
		o.PrefetchValues = false
		it = txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			id, _, ok := parseChunkKey(it.Item().Key())
			if !ok || named[id] {
				continue
			}
			if !dead[id] {
				dead[id] = true
				lo.Blobs++
			}
			lo.Chunks++
			lo.Bytes += it.Item().ValueSize()
		}
		return nil
	})
	if err != nil {
		return lo, wrapErr("finding leftover chunks", err)
	}
	if !remove {
		return lo, nil
	}
	// The sweep sees every chunk of a failed write still queued for
	// dropPending (they are ordinary keys until dropped).
	s.pmu.Lock()
	s.pending = nil
	s.pmu.Unlock()
	if len(dead) == 0 {
		return lo, nil
	}
	// DropPrefix rather than per-key deletes: it removes the keys from
	// every level at once and tells the value log how much of each file is
	// now garbage, which is what lets Compact return the space.
	prefixes := make([][]byte, 0, len(dead))
	for id := range dead {
		prefixes = append(prefixes, chunkPrefix(id))
	}
	db, done, err := s.writer()
	if err != nil {
		return lo, err
	}
	defer done()
	if err := db.DropPrefix(prefixes...); err != nil {
		return lo, wrapErr("dropping leftover chunks", err)
	}
	lo.Removed = true
	return lo, nil
}

// Compact implements Housekeeper: it rewrites value-log files that are at
// least half garbage, returning their space to the file system. The newest
// value-log file is never rewritten.
func (s *Badger) Compact(ctx context.Context) error {
	db, done, err := s.writer()
	if err != nil {
		return err
	}
	defer done()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := db.RunValueLogGC(0.5)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return nil
		}
		if err != nil {
			return wrapErr("compacting value log", err)
		}
	}
}

// DiskSize implements Housekeeper: the bytes the cache directory occupies
// on disk (allocated blocks, so sparse value-log files count as written).
func (s *Badger) DiskSize() (int64, error) {
	var total int64
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // a file Badger just removed
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if sys, ok := sysStat(info); ok {
			total += sys.allocated
		} else {
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cache: measuring %s: %w", s.dir, err)
	}
	return total, nil
}

// putRawBlob stores b as blob d without checking that d is b's digest (a
// test hook: see export_test.go). It writes b in chunks when it is larger
// than inlineMax, as PutBlob would.
func (s *Badger) putRawBlob(d Digest, b []byte) error {
	db, done, err := s.writer()
	if err != nil {
		return err
	}
	defer done()
	if len(b) <= inlineMax {
		return db.Update(func(txn *badger.Txn) error {
			return txn.Set(blobKey(d), encodeInlineHeader(b))
		})
	}
	id := newBlobID()
	w := newChunkWriter(db, s.chunkSize, id)
	for off := 0; off < len(b); off += s.chunkSize {
		buf := w.buffer()
		n := copy(buf, b[off:])
		w.write(buf[:n])
	}
	if err := w.wait(); err != nil {
		return err
	}
	return db.Update(func(txn *badger.Txn) error {
		return txn.Set(blobKey(d), encodeChunkedHeader(int64(len(b)), s.chunkSize, id))
	})
}
