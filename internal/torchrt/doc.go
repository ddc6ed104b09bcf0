// Package torchrt makes the process-level libtorch settings that decide how
// fast the little dragon trains on a CPU, and that gotch has no Go API for.
// It is a small cgo shim, built only with the torch build tag; without the
// tag the package is empty.
//
// What it does, and why (measurements in shared/design/lm-rl.md §1.3):
//
//   - When the binary loads (a C constructor, before main), glibc's malloc is
//     told never to mmap (M_MMAP_MAX 0), to keep freed memory (trim threshold
//     1 GiB) and to grow the heap in 64 MiB steps. Otherwise every training
//     step page-faults and zero-fills its activation buffers again: 2.5-7.7x.
//   - FlushDenormals sets FTZ/DAZ on the calling thread (and the OpenMP
//     workers it creates later): 4x late in training, when AdamW moments turn
//     subnormal.
//   - SetThreads sets libtorch's intra-op threads for the calling thread (the
//     default here is 1; 2 is 1.3x on a 2-core machine).
//   - ManualSeed, RNGState and SetRNGState give seeded, resumable dropout.
//   - SetGradEnabled reports the previous grad mode correctly (gotch's
//     GradSetEnabled read it as garbage before the compatibility patch).
//
// OPENBLAS_CORETYPE is read by OpenBLAS when it loads, so it cannot be set
// from here; this package only reports it (CoreType). Several of libtorch's
// settings are thread-local: callers make every torch call from one locked OS
// thread (package dragon's Runtime does).
package torchrt
