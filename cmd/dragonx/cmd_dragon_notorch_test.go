//go:build !torch

package main

import (
	"strings"
	"testing"

	"dragonx/internal/torchbin"
)

// TestDragonWithoutTorch: where no dragonx-torch can be found, the dragon
// commands of the pure binary say so. ($DRAGONX_TORCH, which make test sets
// for the pipeline's tests, is cleared: it would be found.)
func TestDragonWithoutTorch(t *testing.T) {
	t.Setenv(torchbin.EnvVar, "")
	code, _, stderr := runCLI("dragon", "bench", "--quick")
	if code != exitFailure || !strings.Contains(stderr, "built without libtorch") {
		t.Errorf("dragonx dragon bench without libtorch: exit %d, stderr %q; want exit 1, built without libtorch", code, stderr)
	}
}
