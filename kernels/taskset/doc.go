// Package taskset reads the outside task sets: benchmarks dragonx did not
// draw from its corpus (KernelBench level 1), kept as data, one row per
// problem with its source, and either the workload spec that computes it or
// why none does. docs/tasksets.md describes the format; data/ holds the
// sets (embedded).
package taskset
