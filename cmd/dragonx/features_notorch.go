//go:build !torch

package main

// buildFeatures says which optional parts this binary was built with.
func buildFeatures() []string {
	p, err := findTorchBinary(nil)
	if err != nil {
		return []string{"libtorch: not linked; " + torchBinary + " not found (the dragon commands are unavailable; `make build` makes it)"}
	}
	return []string{"libtorch: not linked; the dragon commands run in " + p}
}
