package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"dragonx/cache"
	"dragonx/internal/safeio"
)

// Dir is a Remote in a directory, for teams on a shared file system:
// entries are the files ROOT/cas/<hex> and ROOT/ac/<hex>, the layout of
// the HTTP paths, so a web server can serve the same directory.
//
// A Put writes a temporary file in ROOT/tmp, flushes it to disk and renames
// it into place. A rename within one file system is atomic (on NFS too), so
// any number of writers on any number of machines may put at once: a
// reader sees an old entry or a complete new one, never a partial file.
// The root must exist: a missing one (a share that is not mounted) makes
// every operation fail with ErrUnavailable instead of silently writing to
// the local disk. Operations on a hung network file system cannot be timed
// out; the kernel's own timeouts apply.
type Dir struct {
	root string
	now  func() time.Time

	cleanOnce sync.Once
}

// NewDir returns the directory remote at root (an absolute path). It
// touches nothing until the first operation.
func NewDir(root string) *Dir {
	return &Dir{root: filepath.Clean(root), now: time.Now}
}

// staleTemp is the age after which a temporary file in ROOT/tmp is taken
// for the leftover of a writer that died, and removed by the next Put. A
// day is far longer than any upload takes.
const staleTemp = 24 * time.Hour

// String implements Remote.
func (d *Dir) String() string { return "file://" + filepath.ToSlash(d.root) }

func (d *Dir) path(a Area, name string) string {
	return filepath.Join(d.root, string(a), name)
}

// fail classifies an error of operation op on the entry at p.
func (d *Dir) fail(op, p string, err error) error {
	e := &Error{Op: op, Target: p, Err: err}
	switch {
	case errors.Is(err, safeio.ErrNotRegular):
		// Only regular files are entries. Anything else (a directory, a
		// named pipe, a link) is something the protocol never writes: it
		// is ignored as absent, so that the stage that needs it is a miss
		// (and the next push replaces it) while the rest of the remote
		// stays in use.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is the Target already
		}
		e.Err = fmt.Errorf("%w; ignored as a missing entry", err)
		e.Kind = ErrNotFound
	case errors.Is(err, fs.ErrNotExist):
		if _, rerr := os.Stat(d.root); rerr != nil {
			e.Err = fmt.Errorf("the remote directory %s is not there (is the shared file system mounted?)", d.root)
			e.Kind = ErrUnavailable
		} else {
			e.Kind = ErrNotFound
		}
	case errors.Is(err, fs.ErrPermission):
		e.Kind = ErrDenied
	}
	return e
}

// notAnEntry returns, for an ErrNotFound error, why the entry counts as
// missing when something that is not an entry holds its name (a miss to
// report), and nil for a plain absence.
func notAnEntry(err error) error {
	if errors.Is(err, safeio.ErrNotRegular) {
		return fmt.Errorf("%w: %w", cache.ErrCorrupt, err)
	}
	return nil
}

// Get implements Remote.
func (d *Dir) Get(ctx context.Context, a Area, name string) (io.ReadCloser, int64, error) {
	if err := checkEntry(a, name); err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	p := d.path(a, name)
	// Opened without blocking and without following a link, then checked
	// on the descriptor: a named pipe planted in the directory would
	// otherwise block the open forever.
	f, info, err := safeio.Open(p, safeio.Options{NoFollow: true})
	if err != nil {
		return nil, 0, d.fail("open", p, err)
	}
	return &ctxFile{ctx: ctx, f: f}, info.Size(), nil
}

// Stat implements Remote.
func (d *Dir) Stat(ctx context.Context, a Area, name string) (int64, error) {
	if err := checkEntry(a, name); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	p := d.path(a, name)
	info, err := os.Lstat(p)
	if err != nil {
		return 0, d.fail("stat", p, err)
	}
	if !info.Mode().IsRegular() {
		return 0, d.fail("stat", p, fmt.Errorf("%w: %s", safeio.ErrNotRegular, safeio.Describe(info.Mode())))
	}
	return info.Size(), nil
}

// Put implements Remote.
func (d *Dir) Put(ctx context.Context, a Area, name string, size int64, body Body) (err error) {
	if err := checkEntry(a, name); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("remote: put %s: negative size %d", d.path(a, name), size)
	}
	p := d.path(a, name)
	tmpDir := filepath.Join(d.root, "tmp")
	// Mkdir, not MkdirAll: a missing root must fail, not be created.
	for _, dir := range []string{filepath.Dir(p), tmpDir} {
		if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
			return d.fail("mkdir", dir, err)
		}
	}
	d.cleanOnce.Do(func() { d.removeStale(tmpDir) })
	f, err := os.CreateTemp(tmpDir, name+".*")
	if err != nil {
		return d.fail("create", tmpDir, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	var n int64
	if size > 0 {
		rc, err := body()
		if err != nil {
			return &Error{Op: "put", Target: p, Err: err}
		}
		n, err = io.Copy(f, &ctxReader{ctx: ctx, r: io.LimitReader(rc, size+1)})
		rc.Close()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &Error{Op: "put", Target: p, Err: err}
		}
	}
	if n != size {
		return &Error{Op: "put", Target: p, Err: fmt.Errorf("the body has %d bytes, want %d", n, size)}
	}
	if err := f.Chmod(0o644); err != nil {
		return d.fail("chmod", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return d.fail("sync", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return d.fail("close", f.Name(), err)
	}
	if info, err := os.Lstat(p); err == nil && !info.Mode().IsRegular() {
		// Something that is not an entry holds the name (see fail): set
		// it aside in tmp, where people can look at it, so that the
		// rename can put the real entry in its place.
		aside := fmt.Sprintf("%s.not-an-entry.%d", filepath.Join(tmpDir, name), d.now().UnixNano())
		if err := os.Rename(p, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return d.fail("rename", p, err)
		}
	}
	if err := os.Rename(f.Name(), p); err != nil {
		return d.fail("rename", p, err)
	}
	return nil
}

// removeStale removes temporary files that writers which died left behind.
// Errors are ignored: another writer may be removing the same files, and a
// leftover only costs space.
func (d *Dir) removeStale(tmpDir string) {
	ents, err := os.ReadDir(tmpDir)
	if err != nil {
		return
	}
	cutoff := d.now().Add(-staleTemp)
	for _, e := range ents {
		info, err := e.Info()
		if err == nil && info.Mode().IsRegular() && info.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(tmpDir, e.Name()))
		}
	}
}

// ctxFile is an open entry whose reads stop when ctx is cancelled.
type ctxFile struct {
	ctx context.Context
	f   *os.File
}

func (c *ctxFile) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.f.Read(p)
}

func (c *ctxFile) Close() error { return c.f.Close() }

// ctxReader stops reading when ctx is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
