//go:build torch

package main

// buildFeatures says which optional parts this binary was built with.
func buildFeatures() []string {
	return []string{"libtorch: yes (gotch, CPU)"}
}
