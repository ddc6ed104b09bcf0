//go:build torch

package torchrt

// #cgo CXXFLAGS: -std=c++17 -O2 -w -I/usr/include/torch/csrc/api/include
// #cgo LDFLAGS: -lstdc++ -ltorch_cpu -lc10
// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"os"
	"unsafe"
)

// MallocTuned reports whether the load-time malloc settings were accepted.
func MallocTuned() bool { return C.torchrt_malloc_tuned() != 0 }

// FlushDenormals makes the calling OS thread flush denormal floats to zero
// (FTZ and DAZ). Threads created by it afterwards inherit the setting, so call
// it before the first torch operation. It reports false on processors without
// an MXCSR register, where it does nothing.
func FlushDenormals() bool { return C.torchrt_flush_denormals() != 0 }

// DenormalsFlushed reports whether the calling thread flushes denormals.
func DenormalsFlushed() bool { return C.torchrt_denormals_flushed() != 0 }

// SetThreads sets libtorch's intra-op thread count for the calling thread.
func SetThreads(n int) {
	if n < 1 {
		panic(fmt.Sprintf("torchrt: SetThreads(%d)", n))
	}
	C.torchrt_set_threads(C.int(n))
}

// Heap reports the C heap (glibc's malloc, which libtorch's CPU tensors
// use): inUse is what the program has allocated and not freed, held is what
// the allocator holds from the system in every arena, free or not. Held
// above inUse is the allocator's cache and fragmentation: with the trim
// threshold raised (see MallocTuned) it is not given back, so the resident
// set follows held, and a leak shows as inUse growing.
func Heap() (inUse, held int64) {
	var u, h C.int64_t
	C.torchrt_heap(&u, &h)
	return int64(u), int64(h)
}

// Threads reports libtorch's intra-op thread count for the calling thread.
func Threads() int { return int(C.torchrt_threads()) }

// ManualSeed seeds libtorch's default CPU generator (used by dropout).
func ManualSeed(seed uint64) { C.torchrt_manual_seed(C.uint64_t(seed)) }

// SetGradEnabled sets the calling thread's autograd mode and returns the
// previous one.
func SetGradEnabled(on bool) (prev bool) {
	c := C.int(0)
	if on {
		c = 1
	}
	return C.torchrt_set_grad_enabled(c) != 0
}

// GradEnabled reports the calling thread's autograd mode.
func GradEnabled() bool { return C.torchrt_grad_enabled() != 0 }

// Version is the libtorch version the binary was compiled against.
func Version() string { return C.GoString(C.torchrt_version()) }

// CoreType is the OPENBLAS_CORETYPE the process runs with ("" when unset:
// OpenBLAS then detects the processor itself).
func CoreType() string { return os.Getenv("OPENBLAS_CORETYPE") }

// RNGState returns a copy of libtorch's default CPU generator state.
func RNGState() ([]byte, error) {
	var cerr *C.char
	n := C.torchrt_rng_state(nil, 0, &cerr)
	if n < 0 {
		return nil, cError("reading the RNG state", cerr)
	}
	buf := C.malloc(C.size_t(n))
	defer C.free(buf)
	if C.torchrt_rng_state((*C.uint8_t)(buf), n, &cerr) != n {
		return nil, cError("reading the RNG state", cerr)
	}
	return C.GoBytes(buf, C.int(n)), nil
}

// SetRNGState restores a state returned by RNGState.
func SetRNGState(state []byte) error {
	if len(state) == 0 {
		return errors.New("torchrt: empty RNG state")
	}
	buf := C.CBytes(state)
	defer C.free(buf)
	var cerr *C.char
	if C.torchrt_set_rng_state((*C.uint8_t)(buf), C.int64_t(len(state)), &cerr) != 0 {
		return cError("restoring the RNG state", cerr)
	}
	return nil
}

func cError(what string, cerr *C.char) error {
	if cerr == nil {
		return fmt.Errorf("torchrt: %s failed", what)
	}
	defer C.free(unsafe.Pointer(cerr))
	return fmt.Errorf("torchrt: %s: %s", what, C.GoString(cerr))
}
