//go:build !unix

package stages

import (
	"errors"
	"os"
)

// renameAt is not available here: outputs are copied from the cache.
func renameAt(oldDir *os.File, oldName string, newDir *os.File, newName string) error {
	return errors.ErrUnsupported
}
