//go:build unix

package safeio

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openFlags open a named pipe without waiting for a writer.
const openFlags = syscall.O_NONBLOCK

const noFollowFlag = syscall.O_NOFOLLOW

// isLoopErr reports whether an open with O_NOFOLLOW failed on a link.
func isLoopErr(err error) bool { return errors.Is(err, syscall.ELOOP) }

// isDirErr reports whether an open for writing failed on a directory.
func isDirErr(err error) bool { return errors.Is(err, syscall.EISDIR) }

// clearNonblock puts a regular file back in blocking mode (O_NONBLOCK means
// nothing for regular files on Linux, but other systems may differ).
func clearNonblock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) })
	if err != nil {
		return err
	}
	return serr
}

// links is the number of hard links of a file (1 when unknown).
func links(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
