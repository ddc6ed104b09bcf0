//go:build !torch

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// torchBinary is the companion binary that holds the dragon commands: the
// same program built with -tags=torch. dragonx itself never links libtorch,
// because loading it costs about 0.7 s at every start (libtorch registers
// its thousands of operators in static initialisers), which would make a
// no-op `dragonx run` slow.
const torchBinary = "dragonx-torch"

// runDragon hands `dragonx dragon ...` to dragonx-torch, found next to this
// executable or on PATH, with the same arguments and standard streams; its
// exit status becomes ours.
func runDragon(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help", "help":
			// The command's help needs no libtorch.
			return flag.ErrHelp
		}
	}
	path, err := findTorchBinary(e)
	if err != nil {
		return withCode(exitFailure, err)
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"dragon"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return withCode(ee.ExitCode(), nil)
		}
		return withCode(exitFailure, fmt.Errorf("running %s: %w", path, err))
	}
	return nil
}

// findTorchBinary looks for dragonx-torch beside the running executable,
// then on PATH.
func findTorchBinary(e *env) (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), torchBinary)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(torchBinary); err == nil {
		return p, nil
	}
	return "", errors.New("built without libtorch: the dragon commands run in " + torchBinary +
		" (this program built with -tags=torch; `make build` makes both), which is neither next to this executable nor on PATH")
}
