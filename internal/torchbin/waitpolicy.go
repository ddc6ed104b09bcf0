package torchbin

// The OpenMP wait policy of every process that links libtorch.
//
// libtorch's intra-op threads and OpenBLAS (the libopenblas0-openmp build)
// share libgomp's thread pool. By default a libgomp thread that waits (at the
// barrier that ends each parallel operator, for the next operator) spins for
// about 300,000 iterations before it sleeps. With two threads on two cores
// that costs nothing on an idle machine; with another process on the cores,
// the waiting thread spins through the time slices the working thread needs,
// and every operator of a training step waits for a descheduled peer: the
// slowdown is far worse than the share of the cores lost. With
// OMP_WAIT_POLICY=PASSIVE a waiting thread sleeps at once: the same work takes
// the same CPU time under load (measurements in docs/dragon.md, "Process
// settings"; with two threads it still waits for both to be on a core).
//
// libgomp reads the policy when it loads, before any Go code runs, so it must
// be in the environment the process starts with: dragonx adds it when it
// starts dragonx-torch (Env), and a process that links libtorch and finds it
// unset starts itself again with it (package internal/torchrt).

// The variables that set the policy; a person who sets either keeps it.
const (
	WaitPolicyVar = "OMP_WAIT_POLICY"
	SpinCountVar  = "GOMP_SPINCOUNT"
)

// WaitPolicy is the policy dragonx sets.
const WaitPolicy = "PASSIVE"

// Env returns what to add to the environment (read with getenv) of a
// process that links libtorch: OMP_WAIT_POLICY=PASSIVE, or nothing when the
// environment already chooses a policy or a spin count.
func Env(getenv func(string) string) []string {
	if getenv(WaitPolicyVar) != "" || getenv(SpinCountVar) != "" {
		return nil
	}
	return []string{WaitPolicyVar + "=" + WaitPolicy}
}
