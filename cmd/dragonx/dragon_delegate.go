//go:build !torch

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"dragonx/internal/procgroup"
	"dragonx/internal/torchbin"
)

// delegateGrace is how long dragonx-torch gets after an interrupt before it
// is killed.
const delegateGrace = 10 * time.Second

// runDragon hands `dragonx dragon ...` to dragonx-torch (findTorchBinary),
// with the same arguments and standard streams; its exit status becomes ours.
// It runs under a supervisor (package procgroup), so that it does not outlive
// a dragonx killed with kill -9, with the OpenMP wait policy of package
// torchbin. An interrupt reaches it as SIGINT, then SIGKILL after
// delegateGrace.
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
	cmd := procgroup.Command(append([]string{path, "dragon"}, args...)...)
	cmd.Env = append(os.Environ(), torchbin.Env(os.Getenv)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	if err := cmd.Start(); err != nil {
		return withCode(exitFailure, fmt.Errorf("running %s: %w", path, err))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = cmd.Stop(done, syscall.SIGINT, false, delegateGrace)
	}
	var ee *procgroup.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return withCode(ee.Status(), nil)
	}
	return withCode(exitFailure, fmt.Errorf("running %s: %w", path, err))
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
