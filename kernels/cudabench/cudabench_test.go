package cudabench_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/cudabench"
	"dragonx/kernels/internal/gatecases"
)

const denseCase = "../trace/testdata/tvm-traces/cuda-dense-nt-128"

// TestNoGPU: without a GPU device, Run fails with ErrNoGPU naming what it
// looked for, before compiling anything (no nvcc needed); with a device
// file but a failing nvidia-smi, it says so.
func TestNoGPU(t *testing.T) {
	c, err := gatecases.Dir(context.Background(), denseCase)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = cudabench.Run(context.Background(), c.Workload, c.Program, cudabench.Options{DevGlob: filepath.Join(dir, "nvidia[0-9]*"), NVCC: "/nonexistent/nvcc"})
	if !errors.Is(err, cudabench.ErrNoGPU) || !strings.Contains(err.Error(), "no device file matches") {
		t.Fatalf("got %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nvidia0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	smi := filepath.Join(dir, "nvidia-smi")
	if err := os.WriteFile(smi, []byte("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver' >&2\nexit 9\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := cudabench.Options{DevGlob: filepath.Join(dir, "nvidia[0-9]*"), SMI: smi}
	_, err = cudabench.Run(context.Background(), c.Workload, c.Program, opts)
	if !errors.Is(err, cudabench.ErrNoGPU) || !strings.Contains(err.Error(), "could not communicate") {
		t.Fatalf("got %v", err)
	}
	if err := os.WriteFile(smi, []byte("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-0000)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if d, err := cudabench.CheckGPU(context.Background(), opts); err != nil || d != "NVIDIA H200" {
		t.Fatalf("CheckGPU = %q, %v", d, err)
	}
}

// TestDryRun builds the whole measuring program of the dense and the
// Winograd (four kernels, global intermediates) cases with nvcc (host and
// device code) and runs their CPU reference, without a GPU.
func TestDryRun(t *testing.T) {
	if _, err := exec.LookPath("nvcc"); err != nil {
		t.Skip("nvcc is not installed (make test installs it: scripts/cuda-toolkit.sh)")
	}
	for _, dir := range []string{denseCase, "../trace/testdata/tvm-traces/cuda-winograd-nhwc-56x56x64-add-relu"} {
		c, err := gatecases.Dir(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		work := t.TempDir()
		res, err := cudabench.Run(context.Background(), c.Workload, c.Program, cudabench.Options{DryRun: true, WorkDir: work})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if res.Source != "dry-run" || res.Seconds != 0 {
			t.Fatalf("%s: %+v", dir, res)
		}
		for _, f := range []string{"bench", "reference", "inputs.bin"} {
			if st, err := os.Stat(filepath.Join(work, f)); err != nil || st.Size() == 0 {
				t.Errorf("%s: %s: %v", dir, f, err)
			}
		}
		src, err := os.ReadFile(res.Program)
		if err != nil || !strings.Contains(string(src), "cudaEventElapsedTime") {
			t.Errorf("%s: program %s: %v", dir, res.Program, err)
		}
	}
}
