package stagetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"dragonx/internal/torchbin"
)

// RunWithTorch builds dragonx-torch into a temporary directory, points
// $DRAGONX_TORCH at it (so that the stage kinds' jobs run the code under
// test, not an older binary), runs the tests and returns their exit code.
// Torch-tagged tests of the stage kinds call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(stagetest.RunWithTorch(m)) }
func RunWithTorch(m *testing.M) int {
	dir, err := os.MkdirTemp("", "dragonx-torch-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, torchbin.Name)
	cmd := exec.Command("go", "build", "-tags=torch", "-o", bin, "dragonx/cmd/dragonx")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building dragonx-torch:", err)
		return 1
	}
	if err := os.Setenv(torchbin.EnvVar, bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
