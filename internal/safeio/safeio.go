// Package safeio opens files that come from outside the engine's control
// (an experiment file, a -var-file, a path given to HCL's file(), an entry
// of a shared-directory remote, a credentials file) so that no such file
// can hang or exhaust the process.
//
// A file is opened without blocking (O_NONBLOCK: opening a named pipe with
// no writer would otherwise wait forever, deaf to signals), checked with
// fstat on the opened descriptor to be a regular file (so a device, pipe,
// socket or directory is refused, and nothing can swap the file between a
// check and the open), and read through a limit: /dev/zero or a huge file
// fails with an error naming the file and the limit instead of taking all
// memory.
package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
