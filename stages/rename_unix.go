//go:build unix

package stages

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// renameAt renames the entry oldName of directory oldDir to newName in
// directory newDir (renameat(2)): neither name is resolved through a path,
// and the final element is renamed itself, never followed.
func renameAt(oldDir *os.File, oldName string, newDir *os.File, newName string) error {
	if err := unix.Renameat(int(oldDir.Fd()), oldName, int(newDir.Fd()), newName); err != nil {
		return fmt.Errorf("stages: renaming %s to %s: %w", oldName, newName, err)
	}
	return nil
}
