package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"dragonx/internal/safeio"
)

// PutPath stores the file or directory at path (following path itself if
// it is a symbolic link) and returns its Output: for a file, the blob of its
// bytes; for a directory, a tree (see Tree) whose files are stored as
// blobs. Files already stored are hashed but not written again. Links
// inside a directory are stored as links, and must stay inside it (see
// Tree).
func PutPath(ctx context.Context, s Store, path string) (Output, error) {
	info, err := os.Stat(path)
	if err != nil {
		return Output{}, fmt.Errorf("cache: %w", err)
	}
	return walkPath(ctx, osFS{}, path, info, putFileFn(ctx, s), putTreeFn(ctx, s))
}

// PutPathIn stores the file or directory rel (a clean, slash-separated
// path) inside the directory dir, as PutPath does, but follows no symbolic
// link to get there and reads nothing outside dir: every element of rel,
// the last one included, must be a directory or the output itself, not a
// link, and every read goes through an os.Root of dir, so that a link made
// or swapped in while it runs cannot take it outside. Stages store the
// outputs of a command with it: a command that leaves "sub -> /elsewhere"
// in its working directory cannot make dragonx read, or later move,
// /elsewhere/file.
func PutPathIn(ctx context.Context, s Store, dir, rel string) (Output, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Output{}, fmt.Errorf("cache: %w", err)
	}
	defer root.Close()
	info, err := LstatNoLinks(root, rel)
	if err != nil {
		return Output{}, err
	}
	return walkPath(ctx, rootFS{root}, rel, info, putFileFn(ctx, s), putTreeFn(ctx, s))
}

// LstatNoLinks returns the Lstat of rel (a clean, slash-separated path)
// inside root after checking that no element of rel is a symbolic link and
// that every element but the last is a directory.
func LstatNoLinks(root *os.Root, rel string) (fs.FileInfo, error) {
	if rel == "." || !validRel(rel) {
		return nil, fmt.Errorf("cache: %q is not a clean relative path", rel)
	}
	elems := strings.Split(rel, "/")
	var info fs.FileInfo
	for i := range elems {
		p := strings.Join(elems[:i+1], "/")
		var err error
		// Elements are checked in order, so Lstat never goes through a
		// link that was not already refused.
		if info, err = root.Lstat(p); err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, _ := root.Readlink(p)
			return nil, fmt.Errorf("cache: %s is a symbolic link (to %q); outputs are collected without following links: declare the file or directory it points to, or copy it in place of the link", p, target)
		}
		if i < len(elems)-1 && !info.IsDir() {
			return nil, fmt.Errorf("cache: %s is %s, not a directory", p, safeio.Describe(info.Mode()))
		}
	}
	return info, nil
}

// HashPath returns the Output that PutPath would return for path, without
// storing anything. Stages use it for local inputs.
func HashPath(ctx context.Context, path string) (Output, error) {
	info, err := os.Stat(path)
	if err != nil {
		return Output{}, fmt.Errorf("cache: %w", err)
	}
	return walkPath(ctx, osFS{}, path, info, func(f *os.File, _ fs.FileInfo) (Digest, int64, error) {
		return hashOpenFile(ctx, f)
	}, func(t *Tree) (Digest, error) {
		return DigestBytes(t.Encode()), nil
	})
}

func putFileFn(ctx context.Context, s Store) func(*os.File, fs.FileInfo) (Digest, int64, error) {
	return func(f *os.File, _ fs.FileInfo) (Digest, int64, error) { return putFile(ctx, s, f) }
}

func putTreeFn(ctx context.Context, s Store) func(*Tree) (Digest, error) {
	return func(t *Tree) (Digest, error) {
		d, _, err := s.PutBlob(ctx, bytes.NewReader(t.Encode()))
		return d, err
	}
}

// putFile stores the open file f unless a blob with its digest exists.
// Hashing first costs a read of the file but saves writing it again, which
// is the common case: a stage that reruns and produces the same bytes.
func putFile(ctx context.Context, s Store, f *os.File) (Digest, int64, error) {
	d, n, err := hashOpenFile(ctx, f)
	if err != nil {
		return d, n, err
	}
	if ok, err := s.HasBlob(ctx, d); err != nil || ok {
		return d, n, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return d, n, fmt.Errorf("cache: %w", err)
	}
	d2, n2, err := s.PutBlob(ctx, f)
	if err != nil {
		return d, n, err
	}
	if d2 != d {
		// The stored bytes are whatever was read; they are consistent with
		// d2. Report the change rather than return an Output for a file
		// that no longer has the contents it was hashed with.
		return d, n, fmt.Errorf("cache: %s changed while it was being stored (%d then %d bytes)", f.Name(), n, n2)
	}
	return d, n, nil
}

// pathFS is where walkPath reads: the operating system's paths (osFS), or
// the inside of an os.Root (rootFS), which nothing can leave.
type pathFS interface {
	Lstat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
	// OpenFile opens name read-only without blocking (a FIFO swapped in
	// for a file must not hang the walk).
	OpenFile(name string) (*os.File, error)
	Join(dir, elem string) string
}

type osFS struct{}

func (osFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }
func (osFS) Readlink(name string) (string, error)   { return os.Readlink(name) }
func (osFS) OpenFile(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
func (osFS) Join(dir, elem string) string { return filepath.Join(dir, elem) }

type rootFS struct{ r *os.Root }

func (f rootFS) Lstat(name string) (fs.FileInfo, error) { return f.r.Lstat(name) }
func (f rootFS) Readlink(name string) (string, error)   { return f.r.Readlink(name) }
func (f rootFS) OpenFile(name string) (*os.File, error) {
	return f.r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
func (rootFS) Join(dir, elem string) string { return path.Join(dir, elem) }

// openSame opens name in fsys and checks that what it opened is the file
// info describes (the result of a Stat or Lstat of it), so that a file
// replaced by a link, a FIFO or another file between the two is refused
// rather than read.
func openSame(fsys pathFS, name string, info fs.FileInfo) (*os.File, error) {
	f, err := fsys.OpenFile(name)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	got, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cache: %w", err)
	}
	if !os.SameFile(got, info) || got.Mode().Type() != info.Mode().Type() {
		f.Close()
		return nil, fmt.Errorf("cache: %s changed while it was being stored (replaced by another file or a link)", name)
	}
	return f, nil
}

// walkPath builds the Output of root in fsys, whose Stat or Lstat is info:
// fileFn digests an open file; treeFn digests (and perhaps stores) a
// finished tree.
func walkPath(ctx context.Context, fsys pathFS, root string, info fs.FileInfo, fileFn func(*os.File, fs.FileInfo) (Digest, int64, error), treeFn func(*Tree) (Digest, error)) (Output, error) {
	switch {
	case info.Mode().IsRegular():
		f, err := openSame(fsys, root, info)
		if err != nil {
			return Output{}, err
		}
		defer f.Close()
		d, n, err := fileFn(f, info)
		if err != nil {
			return Output{}, err
		}
		return Output{Digest: d, Size: n, Exec: info.Mode()&0o111 != 0}, nil
	case info.IsDir():
	default:
		return Output{}, fmt.Errorf("cache: %s is %s, not a file or directory", root, safeio.Describe(info.Mode()))
	}
	t := &Tree{}
	if err := walkDir(ctx, fsys, root, "", info, t, fileFn); err != nil {
		return Output{}, err
	}
	// The walk visits "a/b" before "a-b"; the encoding wants byte order.
	sort.Slice(t.Entries, func(i, j int) bool { return t.Entries[i].Path < t.Entries[j].Path })
	if err := checkLinks(t.Entries); err != nil {
		return Output{}, fmt.Errorf("cache: %s: %w", root, err)
	}
	d, err := treeFn(t)
	if err != nil {
		return Output{}, err
	}
	return Output{Digest: d, Size: t.Size(), Tree: true}, nil
}

// walkDir adds the entries of directory name (at rel in the tree, "" for
// its root; info is its Stat or Lstat) to t. Entries are Lstat'ed, never
// followed: a link is recorded as a link.
func walkDir(ctx context.Context, fsys pathFS, name, rel string, info fs.FileInfo, t *Tree, fileFn func(*os.File, fs.FileInfo) (Digest, int64, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, err := openSame(fsys, name, info)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := fsys.Join(name, n)
		erel := n
		if rel != "" {
			erel = rel + "/" + n
		}
		if err := checkTreePath(erel); err != nil {
			return fmt.Errorf("cache: %s: %w", p, err)
		}
		info, err := fsys.Lstat(p)
		if err != nil {
			return fmt.Errorf("cache: %w", err)
		}
		e := TreeEntry{Path: erel}
		switch mode := info.Mode(); {
		case mode.IsDir():
			e.Type = TypeDir
			t.Entries = append(t.Entries, e)
			if err := walkDir(ctx, fsys, p, erel, info, t, fileFn); err != nil {
				return err
			}
			continue
		case mode&fs.ModeSymlink != 0:
			e.Type = TypeSymlink
			if e.Target, err = fsys.Readlink(p); err != nil {
				return fmt.Errorf("cache: %w", err)
			}
			e.Target = filepath.ToSlash(e.Target)
			if err := checkLinkTarget(erel, e.Target); err != nil {
				return fmt.Errorf("cache: %s: %w", p, err)
			}
		case mode.IsRegular():
			e.Type = TypeFile
			e.Exec = mode&0o111 != 0
			f, err := openSame(fsys, p, info)
			if err != nil {
				return err
			}
			e.Digest, e.Size, err = fileFn(f, info)
			f.Close()
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("cache: %s is %s; a stored directory may hold only files, directories and links", p, safeio.Describe(mode))
		}
		t.Entries = append(t.Entries, e)
	}
	return nil
}

// racyWindow: a file modified this recently may still change within its
// timestamp's granularity (a second on some file systems, more on FAT)
// without its stat data changing, so its hash is not recorded in the stat
// cache (Git calls such entries "racily clean").
const racyWindow = 2 * time.Second

// HashPathCached is HashPath with the store's stat cache: if path's stat
// fingerprint (size, times, inode, device and mode of the file, or of every
// entry of the directory) is what was recorded with its Output, that Output
// is returned without reading the data. Otherwise the path is hashed, and
// the result recorded unless the path changed while it was hashed or was
// modified within the last racyWindow. Paths are recorded absolute.
func HashPathCached(ctx context.Context, s Store, path string) (Output, error) {
	return hashPathCached(ctx, s, path, time.Now())
}

// hashPathCached is HashPathCached at time now (tests move it forward, as
// files they create are otherwise always too recent to record).
func hashPathCached(ctx context.Context, s Store, path string, now time.Time) (Output, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Output{}, fmt.Errorf("cache: %w", err)
	}
	fp, racy, err := Fingerprint(abs, now)
	if err != nil {
		return Output{}, err
	}
	if e, ok, err := s.GetStat(ctx, abs); err != nil {
		return Output{}, err
	} else if ok && e.Fingerprint == fp && !e.Output.Digest.IsZero() {
		return e.Output, nil
	}
	out, err := HashPath(ctx, abs)
	if err != nil {
		return Output{}, err
	}
	if racy {
		return out, nil
	}
	if fp2, _, err := Fingerprint(abs, now); err != nil || fp2 != fp {
		return out, nil // changed while hashed: usable now, not worth recording
	}
	if err := s.PutStat(ctx, abs, StatEntry{Fingerprint: fp, Output: out}); err != nil {
		return Output{}, err
	}
	return out, nil
}

// Fingerprint returns the stat fingerprint of the file or directory at path
// (following path itself if it is a link), and whether any part of it was
// modified within racyWindow of now. For a file it is its stat data as text;
// for a directory, a hash over every entry's relative path and stat data.
func Fingerprint(path string, now time.Time) (fp string, racy bool, err error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", false, fmt.Errorf("cache: %w", err)
	}
	line, r := statLine(info, now)
	if !info.IsDir() {
		return "f " + line, r, nil
	}
	h := sha256.New()
	n := 0
	err = filepath.WalkDir(path, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("cache: %w", err)
		}
		info, err := de.Info()
		if err != nil {
			return fmt.Errorf("cache: %w", err)
		}
		rel, _ := filepath.Rel(path, p)
		line, r := statLine(info, now)
		racy = racy || r
		fmt.Fprintf(h, "%q %s\n", rel, line)
		n++
		return nil
	})
	if err != nil {
		return "", false, err
	}
	return fmt.Sprintf("d %d %s", n, hex.EncodeToString(h.Sum(nil))), racy, nil
}

// statLine formats what identifies one version of a file: size, mtime and
// ctime in nanoseconds, inode, device and mode. The second result says
// whether the file changed within racyWindow of now.
func statLine(info fs.FileInfo, now time.Time) (string, bool) {
	mtime := info.ModTime()
	racy := now.Sub(mtime) < racyWindow
	sys, ok := sysStat(info)
	if !ok {
		return fmt.Sprintf("%d %d %o", info.Size(), mtime.UnixNano(), info.Mode()), racy
	}
	racy = racy || now.Sub(sys.ctime) < racyWindow
	return fmt.Sprintf("%d %d %d %d %d %o", info.Size(), mtime.UnixNano(), sys.ctime.UnixNano(), sys.ino, sys.dev, info.Mode()), racy
}

// sysInfo is the stat data beyond fs.FileInfo (see sysStat).
type sysInfo struct {
	ctime     time.Time
	ino, dev  uint64
	allocated int64 // bytes of disk blocks
}

// Materialize writes out, read from s, to dst: a file, or for a tree a
// directory with every entry. It writes to a temporary name beside dst and
// renames it into place, replacing what was at dst, so dst is never seen
// half-written. If any blob is missing or corrupt (the error matches ErrMiss
// and, for corruption, ErrCorrupt), nothing is written and whatever was at
// dst before is left as it was.
func Materialize(ctx context.Context, s Store, out Output, dst string) error {
	dst = filepath.Clean(dst)
	parent, base := filepath.Dir(dst), filepath.Base(dst)
	if err := os.MkdirAll(parent, 0o777); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	var tmp string
	var err error
	if out.Tree {
		tmp, err = os.MkdirTemp(parent, "."+base+".tmp-")
		if err == nil {
			err = writeTree(ctx, s, out, tmp)
		}
	} else {
		var f *os.File
		f, err = os.CreateTemp(parent, "."+base+".tmp-")
		if err == nil {
			tmp = f.Name()
			mode := fs.FileMode(0o644)
			if out.Exec {
				mode = 0o755
			}
			err = writeBlob(ctx, s, out.Digest, f, mode)
		}
	}
	if err == nil {
		err = replace(tmp, dst)
	}
	if err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return err
	}
	return nil
}

// writeTree writes tree out's entries under dir (which exists).
func writeTree(ctx context.Context, s Store, out Output, dir string) error {
	t, err := ReadTree(ctx, s, out.Digest)
	if err != nil {
		return err
	}
	if t.Size() != out.Size {
		return corrupt("tree "+out.Digest.String(), "lists %d bytes of files, the output records %d", t.Size(), out.Size)
	}
	var links []TreeEntry
	for _, e := range t.Entries {
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		switch e.Type {
		case TypeDir:
			if err := os.Mkdir(p, 0o755); err != nil {
				return fmt.Errorf("cache: %w", err)
			}
		case TypeFile:
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return fmt.Errorf("cache: %w", err)
			}
			if err := writeBlob(ctx, s, e.Digest, f, e.Mode()); err != nil {
				return err
			}
		case TypeSymlink:
			links = append(links, e) // last, so nothing is written through one
		}
	}
	for _, e := range links {
		if err := os.Symlink(filepath.FromSlash(e.Target), filepath.Join(dir, filepath.FromSlash(e.Path))); err != nil {
			return fmt.Errorf("cache: %w", err)
		}
	}
	return os.Chmod(dir, 0o755)
}

// writeBlob copies blob d into f, verifying it, sets mode and closes f.
func writeBlob(ctx context.Context, s Store, d Digest, f *os.File, mode fs.FileMode) error {
	err := copyBlob(ctx, s, d, f)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("cache: %w", cerr)
	}
	return err
}

// copyBlob writes blob d to w, reading it to EOF so that it is verified.
func copyBlob(ctx context.Context, s Store, d Digest, w io.Writer) error {
	rc, size, err := s.OpenBlob(ctx, d)
	if err != nil {
		return err
	}
	defer rc.Close()
	buf := make([]byte, min(max(size, 512), hashBufferSize))
	if _, err := io.CopyBuffer(onlyWriter{w}, ctxReader{ctx, rc}, buf); err != nil {
		var me *MissError
		if errors.As(err, &me) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return fmt.Errorf("cache: writing %s: %w", d.Short(), err)
	}
	return nil
}

// onlyWriter hides a writer's ReadFrom, so io.CopyBuffer uses our buffer
// (and our reader's verification) instead of a sendfile path.
type onlyWriter struct{ io.Writer }

// replace renames tmp to dst. A file replaces a file atomically; when dst
// is a directory (or tmp is one and dst exists), the old dst is first moved
// aside and removed after, and moved back if the second rename fails.
func replace(tmp, dst string) error {
	if err := os.Rename(tmp, dst); err == nil {
		return nil
	}
	old, err := os.Lstat(dst)
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	aside := fmt.Sprintf("%s.old-%d", tmp, time.Now().UnixNano())
	if err := os.Rename(dst, aside); err != nil {
		return fmt.Errorf("cache: replacing %s: %w", dst, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Rename(aside, dst)
		return fmt.Errorf("cache: replacing %s: %w", dst, err)
	}
	if old.IsDir() {
		os.RemoveAll(aside)
	} else {
		os.Remove(aside)
	}
	return nil
}
