//go:build !torch

package main

// buildFeatures says which optional parts this binary was built with.
func buildFeatures() []string {
	return []string{"libtorch: no (built without the torch tag; the dragon commands are unavailable; `make build` enables them)"}
}
