//go:build !torch

package main

import (
	"strings"
	"testing"
)

func TestDragonWithoutTorch(t *testing.T) {
	code, _, stderr := runCLI("dragon", "bench", "--quick")
	if code != exitFailure || !strings.Contains(stderr, "built without libtorch") {
		t.Errorf("dragonx dragon bench without libtorch: exit %d, stderr %q; want exit 1, built without libtorch", code, stderr)
	}
}
