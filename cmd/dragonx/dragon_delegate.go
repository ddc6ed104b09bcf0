//go:build !torch

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/exec"

	"dragonx/internal/torchbin"
)

// runDragon hands `dragonx dragon ...` to dragonx-torch (findTorchBinary), with the same arguments and standard streams; its
// exit status becomes ours.
func runDragon(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help", "help":
			// The command's help needs no libtorch.
			return flag.ErrHelp
		}
	}
	path, err := findTorchBinary()
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

// findTorchBinary returns the path of dragonx-torch (package torchbin: $DRAGONX_TORCH,
// beside this executable, or on PATH).
func findTorchBinary() (string, error) {
	p, err := torchbin.Find()
	if errors.Is(err, torchbin.ErrNotFound) {
		return "", errors.New("built without libtorch: the dragon commands run in " + torchbin.ErrNotFound.Error())
	}
	return p, err
}
