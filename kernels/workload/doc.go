// Package workload turns workload specs into the unscheduled tensor
// programs dragonx schedules: a small JSON document naming a family and its
// parameters,
//
//	{"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":1}
//
// becomes the kernels/ir PrimFunc that TVM's te_workload generator and
// te.create_prim_func produce for it, with TVM's block, buffer and loop
// names, so that MetaSchedule traces recorded by TVM replay on it
// (kernels/schedule, kernels/trace). It does not schedule, lower or run
// anything; kernels/interp runs what it builds.
//
// # Specs
//
// Parse reads a spec strictly: every field of the family (the parameter
// names of the MetaSchedule benchmark table, reference §4.1) must be
// present once with a value of its type; optional fields (dtype, and a few
// per family) have defaults; unknown fields, missing fields, wrong types
// and invalid values (a negative size, a kernel larger than the padded
// input, channels not divisible by the groups) are refused with a
// *FieldError that names the field. Spec.Canonical is the canonical JSON
// form (fields in table order, defaults left out) and Spec.Hash its
// SHA-256, a stable name for the workload. docs/workloads.md documents every
// family and field.
//
// # Families
//
// The 13 benchmark families of MetaSchedule's operator benchmark
// (te_workload.CONFIGS): C1D, C2D, C3D, GMM, GRP, DIL, DEP, T2D, CAP, NRM,
// SFM, CBR, TBG; and DENSE (Relay's dense, T_matmul_NT, with optional bias
// and ReLU or GELU), MATMUL (te_workload.matmul, with the same epilogues),
// LNORM (layer norm) and POOL (max or average pooling). Each builder follows
// its TVM generator line by line: padding is its own block (PadInput, or
// PaddedInput and pad_temp where TVM names it so), epilogues are their own
// blocks, loops are the spatial axes then the reduce axes in the order of
// TE's axis list, and bodies are simplified as create_prim_func simplifies
// them. Families lists them with their fields.
//
// Benchmarks returns the 52 benchmark shapes (13 families x 4 shapes), in
// te_workload's order, from an embedded JSON file.
//
// # Custom workloads
//
// A spec with "family":"custom" describes a module block by block (buffers,
// loops, iter vars, init and body expressions in a TVMScript-like syntax,
// see ParseExpr); this is how the modules of shared/data/tvm-traces that
// fall outside the families are given. See Custom.
//
// # Checking the builders
//
// The tests run every family on small shapes through kernels/interp and
// compare with a direct Go implementation of the operator, compare the
// printed IR of each family with golden files, and build every workload of
// the TVM traces, checking that each block a trace fetches exists.
package workload
