//go:build !unix

package cache

import (
	"fmt"
	"os"
	"runtime"
)

// tryLockFile fails: dragonx's cache lock needs flock(2).
func tryLockFile(*os.File) (bool, error) {
	return false, fmt.Errorf("process locks are not implemented on %s", runtime.GOOS)
}
