// Package safeio opens files that come from outside the engine's control
// (an experiment file, a -var-file, a path given to HCL's file(), an entry
// of a shared-directory remote, a credentials file) and the files dragonx
// keeps for itself where someone else could plant one (a stage's resume
// state under the cache's state directory, a tuning database, a training
// checkpoint), so that no such file can hang or exhaust the process or
// make it write outside where it means to.
//
// A file is opened without blocking (O_NONBLOCK: opening a named pipe with
// no writer would otherwise wait forever, deaf to signals), checked with
// fstat on the opened descriptor to be a regular file (so a device, pipe,
// socket or directory is refused, and nothing can swap the file between a
// check and the open), and read through a limit: /dev/zero or a huge file
// fails with an error naming the file and the limit instead of taking all
// memory. Lines are read through a cap too (ReadLine), so that one line
// without a newline cannot take all memory either.
//
// Files dragonx writes in such places are opened with OpenState (no link
// followed, no pipe, no second hard link: nothing written lands outside)
// or replaced whole with WriteAtomic (a temporary file renamed over the
// path, which replaces a planted link instead of writing through it).
package safeio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// MaxSource is the size limit of the HCL files dragonx reads: experiment
// files, -var-files and files read by file(). Real ones are kilobytes.
const MaxSource = 64 << 20

// ErrNotRegular is matched by the error for a file that is not a regular
// file (a directory, a named pipe, a device, a socket, or a symbolic link
// opened with NoFollow).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is matched by the error for a file over the read limit.
var ErrTooLarge = errors.New("file too large")

// Options say how Open treats a path.
type Options struct {
	// NoFollow refuses a symbolic link as the last element of the path
	// (links in the directories above it are followed).
	NoFollow bool
}

// Open opens the regular file at path for reading and returns it with its
// information. Anything else is refused with an error that matches
// ErrNotRegular and says what the file is; errors from the system keep
// their causes (errors.Is(err, fs.ErrNotExist) works).
func Open(path string, o Options) (*os.File, fs.FileInfo, error) {
	flags := os.O_RDONLY | openFlags
	if o.NoFollow {
		flags |= noFollowFlag
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if o.NoFollow && isLoopErr(err) {
			return nil, nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: a symbolic link", ErrNotRegular)}
		}
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: %s", ErrNotRegular, Describe(info.Mode()))}
	}
	if err := clearNonblock(f); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// ReadFile reads the regular file at path, refusing one of more than limit
// bytes with an error that names the file and the limit and matches
// ErrTooLarge.
func ReadFile(path string, limit int64, o Options) ([]byte, error) {
	f, info, err := Open(path, o)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func() error {
		return &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than the limit of %s", ErrTooLarge, FormatSize(limit))}
	}
	if info.Size() > limit {
		return nil, tooLarge()
	}
	// The size may change while reading (a file being appended to): the
	// limit holds whatever it says.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge()
	}
	return b, nil
}

// LimitedFile is a regular file read through a limit (OpenLimited).
type LimitedFile struct {
	f     *os.File
	path  string
	limit int64
	left  int64 // bytes that may still be read, +1 to detect going over
}

// OpenLimited opens the regular file at path as Open does and reads it
// through limit: a file of more than limit bytes is refused, and a read past
// limit bytes (a file that grows) fails, both with an error that names the
// file and the limit and matches ErrTooLarge. It is for files read as a
// stream, such as a checkpoint.
func OpenLimited(path string, limit int64, o Options) (*LimitedFile, error) {
	f, info, err := Open(path, o)
	if err != nil {
		return nil, err
	}
	lf := &LimitedFile{f: f, path: path, limit: limit, left: limit + 1}
	if info.Size() > limit {
		f.Close()
		return nil, lf.tooLarge()
	}
	return lf, nil
}

func (lf *LimitedFile) tooLarge() error {
	return &os.PathError{Op: "read", Path: lf.path, Err: fmt.Errorf("%w: more than the limit of %s", ErrTooLarge, FormatSize(lf.limit))}
}

// Read reads from the file, failing once more than the limit was read.
func (lf *LimitedFile) Read(p []byte) (int, error) {
	if lf.left <= 0 {
		return 0, lf.tooLarge()
	}
	if int64(len(p)) > lf.left {
		p = p[:lf.left]
	}
	n, err := lf.f.Read(p)
	lf.left -= int64(n)
	if lf.left <= 0 {
		return n - 1, lf.tooLarge()
	}
	return n, err
}

// Close closes the file.
func (lf *LimitedFile) Close() error { return lf.f.Close() }

// OpenState opens the file at path for reading and writing (flag may add
// os.O_APPEND), creating it with perm when it does not exist, so that
// nothing written through it lands outside path: a symbolic link at path is
// refused, not followed (O_NOFOLLOW, a dangling one included), a named pipe
// neither blocks the open nor is accepted, and a regular file with more
// than one hard link (one that is also some other file) is refused. The
// error for each matches ErrNotRegular and names path. The file is not
// truncated: a caller that wants to rewrite it truncates it after the
// checks, through the descriptor.
func OpenState(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|flag|openFlags|noFollowFlag, perm)
	if err != nil {
		switch {
		case isLoopErr(err):
			return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: a symbolic link", ErrNotRegular)}
		case isDirErr(err):
			return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: a directory", ErrNotRegular)}
		}
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	why := ""
	if !info.Mode().IsRegular() {
		why = Describe(info.Mode())
	} else if n := links(info); n > 1 {
		why = fmt.Sprintf("a regular file with %d hard links", n)
	}
	if why != "" {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: %s", ErrNotRegular, why)}
	}
	if err := clearNonblock(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteAtomic replaces the file at path with what write writes: into a new
// temporary file in path's directory (created exclusively, mode 0600),
// synced, then renamed over path. An interruption leaves the old file or the
// new one, never half of one, and whatever was at path (a symbolic link, a
// named pipe, a hard link to another file) is replaced, never written
// through.
func WriteAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	werr := write(tmp)
	if werr == nil {
		werr = tmp.Sync()
	}
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// ErrLineTooLong is matched by ReadLine's error for a line over its cap.
var ErrLineTooLong = errors.New("line too long")

// ReadLine returns the next line of br without its newline, and io.EOF
// with the last one when it has no newline (possibly empty, at the end of
// the input). A line of more than max bytes is an error matching
// ErrLineTooLong, returned once max bytes and at most one buffer of br more
// were read: a line without end costs max bytes of memory, not its length.
// The line is a new slice, the caller's to keep.
func ReadLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 || (len(line)+len(chunk) == max+1 && err != nil) {
			return nil, fmt.Errorf("%w: more than %s", ErrLineTooLong, FormatSize(int64(max)))
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return line, err
		}
	}
}

// Describe names the kind of file a mode is, for messages.
func Describe(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file (mode " + m.String() + ")"
}

// FormatSize writes a byte count in binary units, as limits are documented.
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
