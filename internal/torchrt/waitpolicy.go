//go:build torch

package torchrt

import (
	"os"
	"strings"
	"syscall"

	"dragonx/internal/torchbin"
)

// init starts the process again with OMP_WAIT_POLICY=PASSIVE when its
// environment chooses no OpenMP wait policy (see package torchbin: libgomp
// read the policy when it loaded, so only a new process changes it). dragonx
// sets it when it starts dragonx-torch, so this costs a second start (about
// 0.7 s of loading libtorch) only to a binary started some other way: a
// person typing dragonx-torch, a test binary. When the exec fails the
// process goes on with libgomp's spinning default; WaitPolicy reports it.
func init() {
	env := torchbin.Env(os.Getenv)
	if len(env) == 0 {
		return
	}
	if os.Setenv(torchbin.WaitPolicyVar, torchbin.WaitPolicy) != nil {
		return
	}
	_ = syscall.Exec("/proc/self/exe", os.Args, os.Environ())
	os.Unsetenv(torchbin.WaitPolicyVar) // not what libgomp runs with
}

// WaitPolicy is the OpenMP wait policy the process started with:
// OMP_WAIT_POLICY's value, then GOMP_SPINCOUNT=N when that is set ("PASSIVE",
// "GOMP_SPINCOUNT=1000"); "" is libgomp's default, which spins.
func WaitPolicy() string {
	var parts []string
	if p := os.Getenv(torchbin.WaitPolicyVar); p != "" {
		parts = append(parts, p)
	}
	if n := os.Getenv(torchbin.SpinCountVar); n != "" {
		parts = append(parts, torchbin.SpinCountVar+"="+n)
	}
	return strings.Join(parts, " ")
}
