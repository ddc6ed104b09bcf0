//go:build !torch

package main

import "dragonx/internal/torchbin"

// buildFeatures says which optional parts this binary was built with.
func buildFeatures() []string {
	p, err := findTorchBinary()
	if err != nil {
		return []string{"libtorch: not linked; " + torchbin.Name + " not found (the dragon commands are unavailable; `make build` makes it)"}
	}
	return []string{"libtorch: not linked; the dragon commands run in " + p}
}
