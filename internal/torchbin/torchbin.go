// Package torchbin finds dragonx-torch, the companion binary that links
// libtorch: the same program as dragonx built with -tags=torch. dragonx
// itself never links libtorch (loading it costs about 0.7 s at every start),
// so the dragon commands and the jobs that train models (package stages/job)
// run in dragonx-torch. The CLI's delegate and the stage kinds share this one
// lookup.
package torchbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Name is the companion binary's file name.
const Name = "dragonx-torch"

// EnvVar, when set, is the path of the binary to use instead of searching
// (tests build one in a temporary directory; unusual installs point at theirs).
const EnvVar = "DRAGONX_TORCH"

// ErrNotFound is returned (wrapped) by Find when there is no dragonx-torch.
var ErrNotFound = errors.New(Name + " (this program built with -tags=torch; `make build` makes both) is neither next to this executable nor on PATH")

// Find returns the path of dragonx-torch: $DRAGONX_TORCH when set (it must
// be an executable file), else the file beside the running executable, else
// the first on PATH.
func Find() (string, error) {
	return find(os.Getenv(EnvVar), os.Executable, exec.LookPath)
}

func find(explicit string, self func() (string, error), lookPath func(string) (string, error)) (string, error) {
	if explicit != "" {
		if !isExecutable(explicit) {
			return "", fmt.Errorf("torchbin: $%s is %q, which is not an executable file", EnvVar, explicit)
		}
		return explicit, nil
	}
	if s, err := self(); err == nil {
		p := filepath.Join(filepath.Dir(s), Name)
		if isExecutable(p) {
			return p, nil
		}
	}
	if p, err := lookPath(Name); err == nil {
		return p, nil
	}
	return "", ErrNotFound
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
