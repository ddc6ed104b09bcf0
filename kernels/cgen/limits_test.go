package cgen_test

import (
	"fmt"
	"strings"
	"testing"

	"dragonx/kernels/cgen"
)

// TestLimits: both programs refuse to run without their limits in the
// environment, and an allocation beyond DX_MEMORY_BYTES is exit status 5.
func TestLimits(t *testing.T) {
	c := loadCase(t, denseCase)
	ksrc, err := cgen.Kernel(c.Program, cgen.Outputs(c.Workload))
	if err != nil {
		t.Fatal(err)
	}
	rsrc, err := cgen.Reference(c.Workload)
	if err != nil {
		t.Fatal(err)
	}
	_, in := inputs(c.Workload, 1)
	kernel, ref := compile(t, ksrc), compile(t, rsrc)
	const cpu = "DX_CPU_SECONDS=60"
	for _, tt := range []struct {
		name   string
		bin    string
		args   []string
		env    []string
		code   int
		stderr string
	}{
		{"kernel, no limits", kernel, []string{"asc"}, nil, 2, "DX_CPU_SECONDS must be set"},
		{"reference, no memory limit", ref, nil, []string{cpu}, 2, "DX_MEMORY_BYTES must be set"},
		{"kernel, bad limit", kernel, []string{"asc"}, []string{cpu, "DX_MEMORY_BYTES=1e9"}, 2, "DX_MEMORY_BYTES must be set to a positive integer"},
		// The dense workload's 3 buffers of 64 KiB do not fit in 1 MiB of
		// address space with the C library.
		{"kernel, memory", kernel, []string{"asc"}, []string{cpu, fmt.Sprint("DX_MEMORY_BYTES=", 1<<20)}, 5, "out of memory"},
		{"reference, memory", ref, nil, []string{cpu, fmt.Sprint("DX_MEMORY_BYTES=", 1<<20)}, 5, "out of memory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := executeEnv(t, tt.bin, in, tt.env, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d, %q; want %d, %q", code, stderr, tt.code, tt.stderr)
			}
		})
	}
}

// TestCost: the costs bound what the programs do: at least one step per
// multiply-add of the dense 128^3 workload (each thread's stores), not
// wildly more, and at least their buffers' bytes.
func TestCost(t *testing.T) {
	c := loadCase(t, denseCase)
	const macs = 128 * 128 * 128
	kc, err := cgen.KernelCost(c.Program)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cgen.ReferenceCost(c.Workload)
	if err != nil {
		t.Fatal(err)
	}
	params := int64(3 * 128 * 128)
	if kc.Steps < macs || kc.Steps > 20*macs || kc.Bytes < 4*params || kc.Bytes > 1<<22 {
		t.Errorf("kernel cost %+v", kc)
	}
	if rc.Steps < macs || rc.Steps > 20*macs || rc.Bytes < 8*params || rc.Bytes > 1<<22 {
		t.Errorf("reference cost %+v", rc)
	}
	t.Logf("kernel %+v, reference %+v", kc, rc)
}
