//go:build unix

package safeio

import (
	"errors"
	"os"
	"syscall"
)

// openFlags open a named pipe without waiting for a writer.
const openFlags = syscall.O_NONBLOCK

const noFollowFlag = syscall.O_NOFOLLOW

// isLoopErr reports whether an open with O_NOFOLLOW failed on a link.
func isLoopErr(err error) bool { return errors.Is(err, syscall.ELOOP) }

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
