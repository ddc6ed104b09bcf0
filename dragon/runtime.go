package dragon

import "errors"

// ErrNoTorch is returned by NewRuntime (and so by everything that needs
// libtorch) in a binary built without the torch build tag.
var ErrNoTorch = errors.New("dragon: built without libtorch (build with -tags=torch; make build does)")

// ErrClosed is returned by calls on a closed Runtime or Model.
var ErrClosed = errors.New("dragon: runtime or model is closed")

// RuntimeOptions configure NewRuntime.
type RuntimeOptions struct {
	// Threads is libtorch's intra-op thread count; 0 means DefaultThreads.
	// CPU float results can differ in the last bits between thread counts,
	// so runs that must match use the same count (RuntimeInfo records it).
	Threads int
	// Seed seeds libtorch's generator (dropout); trainers reseed it from
	// their own seed, so it matters only to code that uses dropout directly.
	Seed int64
}

// DefaultThreads is the default intra-op thread count: two, which is 1.3x
// faster than libtorch's default of one on the project's 2-core machines
// (shared/design/lm-rl.md §1.3).
const DefaultThreads = 2

// RuntimeInfo describes the settings a Runtime runs with, for benchmark and
// training reports.
type RuntimeInfo struct {
	// Libtorch is the libtorch version compiled against.
	Libtorch string `json:"libtorch"`
	// Threads is the intra-op thread count of the torch thread.
	Threads int `json:"threads"`
	// CoreType is OPENBLAS_CORETYPE as the process found it ("" when
	// OpenBLAS detects the processor).
	CoreType string `json:"openblas_coretype"`
	// WaitPolicy is OpenMP's wait policy as the process started with it
	// (OMP_WAIT_POLICY's value, then GOMP_SPINCOUNT=N when set): "PASSIVE",
	// the setting dragonx makes, keeps waiting threads from spinning on
	// the cores another process needs (package internal/torchbin); "" is
	// libgomp's spinning default.
	WaitPolicy string `json:"omp_wait_policy"`
	// DenormalsFlushed and MallocTuned say whether the process settings of
	// package internal/torchrt took effect.
	DenormalsFlushed bool `json:"denormals_flushed"`
	MallocTuned      bool `json:"malloc_tuned"`
}
