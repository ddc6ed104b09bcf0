// Package cudabench measures a lowered program on a real GPU: it writes a
// complete CUDA program (the kernels of kernels/cudagen and a host main),
// compiles it with nvcc, runs it and returns the median latency, labelled
// "measured" with the device's name.
//
// The host program reads the workload's inputs (numeric.InputBytes: the
// numerical gate's seeded random float32 inputs), copies them to the
// device, fills the outputs and global intermediates with NaN
// (cudaMemset 0xff), launches the kernels once (dx_launch) and writes the
// outputs back. Run compares them with the workload's float64 reference,
// computed on the CPU by kernels/cgen's Reference program compiled with cc
// (the gate's reference), by numpy's allclose rule (rtol 1e-3, atol 2e-3,
// the gate's defaults): a NaN or a mismatch fails the run, so a wrong
// kernel is never timed. Then the host program launches the whole program
// Warmup times, and Repeats times more, each between two CUDA events on
// the stream (cudaEventElapsedTime), printing each time. Result.Seconds is
// the median of the repeats and Result.Spread their interquartile range
// (seconds). The inputs stay resident, so the timings are with a warm L2
// where the data fit it (H100/H200: 50 MB).
//
// Where there is no GPU (no /dev/nvidia* device, or nvidia-smi fails) Run
// fails with ErrNoGPU before compiling anything; where nvcc is missing,
// with ErrNoNVCC. Options.DryRun does everything but the run (generate,
// compile host and device code, compute the reference) without a GPU and
// returns a Result whose Source is "dry-run" and Seconds 0: how the GPU
// script (scripts/gpu-check.sh) is checked on machines without one.
package cudabench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"dragonx/kernels/cgen"
	"dragonx/kernels/internal/blobcache"
	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
	"dragonx/kernels/numeric"
)

// ErrNoGPU is returned (wrapped, saying what was looked for) where no
// NVIDIA GPU can be used.
var ErrNoGPU = errors.New("cudabench: no NVIDIA GPU")

// ErrNoNVCC is returned (wrapped) where nvcc is not installed.
var ErrNoNVCC = errors.New("cudabench: nvcc not found (install the CUDA toolkit: scripts/cuda-toolkit.sh)")

// ErrMismatch is returned (wrapped, naming the buffer and element) when the
// GPU's outputs are not the reference's.
var ErrMismatch = errors.New("cudabench: GPU outputs differ from the reference")

// Options configure Run. The zero value is the default.
type Options struct {
	// NVCC and CC are the CUDA and C compilers; "" means nvcc and cc on
	// PATH.
	NVCC, CC string
	// Arch is nvcc's -arch; "" means sm_90 (H100, H200).
	Arch string
	// Seed seeds the inputs (numeric.InputBytes).
	Seed uint64
	// Warmup and Repeats are the untimed and timed launches of the whole
	// program; 0 means 10 and 100.
	Warmup, Repeats int
	// RTol and ATol are the reference check's tolerances; 0 means
	// numeric.DefaultRTol and numeric.DefaultATol.
	RTol, ATol float64
	// WorkDir keeps the program, its binary and its data there; "" means
	// a temporary directory removed afterwards.
	WorkDir string
	// DryRun stops before running anything on a GPU (see the package doc).
	DryRun bool
	// DevGlob and SMI are where the GPU check looks (tests); "" means
	// /dev/nvidia[0-9]* and nvidia-smi.
	DevGlob, SMI string
}

// Result is a measured latency.
type Result struct {
	// Seconds is the median time of one run of the whole program (all
	// its kernels); Spread the interquartile range of the repeats.
	Seconds, Spread float64
	// Device is the GPU's name (cudaGetDeviceProperties).
	Device string
	// Source is "measured" ("dry-run" with Options.DryRun).
	Source string
	// Repeats is the number of timed runs.
	Repeats int
	// MaxAbsErr and MaxRelErr are the reference check's largest errors.
	MaxAbsErr, MaxRelErr float64
	// Program is the path of the CUDA source when Options.WorkDir is set.
	Program string
}

// CheckGPU returns the name of the first GPU nvidia-smi lists, or
// ErrNoGPU saying what is missing.
func CheckGPU(ctx context.Context, opts Options) (string, error) {
	glob := opts.DevGlob
	if glob == "" {
		glob = "/dev/nvidia[0-9]*"
	}
	devs, _ := filepath.Glob(glob) // the pattern is well formed
	if len(devs) == 0 {
		return "", fmt.Errorf("%w: no device file matches %s (this machine has no GPU, or its driver is not loaded)", ErrNoGPU, glob)
	}
	smi := opts.SMI
	if smi == "" {
		smi = "nvidia-smi"
	}
	path, err := exec.LookPath(smi)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrNoGPU, smi, err)
	}
	var tail blobcache.TailBuffer
	cmd := blobcache.Command(ctx, path, "-L")
	cmd.Stderr = &tail
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s -L: %v: %s", ErrNoGPU, path, err, tail.Tail())
	}
	// "GPU 0: NVIDIA H200 (UUID: GPU-...)"
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "GPU 0: "); ok {
			if i := strings.Index(rest, " (UUID"); i >= 0 {
				rest = rest[:i]
			}
			return strings.TrimSpace(rest), nil
		}
	}
	return "", fmt.Errorf("%w: %s -L lists no GPU 0: %q", ErrNoGPU, path, strings.TrimSpace(string(out)))
}

func (o *Options) defaults() {
	if o.NVCC == "" {
		o.NVCC = "nvcc"
	}
	if o.CC == "" {
		o.CC = "cc"
	}
	if o.Arch == "" {
		o.Arch = "sm_90"
	}
	if o.Warmup <= 0 {
		o.Warmup = 10
	}
	if o.Repeats <= 0 {
		o.Repeats = 100
	}
	if o.RTol == 0 {
		o.RTol = numeric.DefaultRTol
	}
	if o.ATol == 0 {
		o.ATol = numeric.DefaultATol
	}
}

// Run measures program p of workload f (see the package doc).
func Run(ctx context.Context, f *ir.PrimFunc, p *lower.Program, opts Options) (Result, error) {
	opts.defaults()
	if f == nil || p == nil {
		return Result{}, errors.New("cudabench: no workload or no program")
	}
	if len(f.Params) != len(p.Params) {
		return Result{}, fmt.Errorf("cudabench: the program has %d parameters, the workload %d", len(p.Params), len(f.Params))
	}
	device := ""
	if !opts.DryRun {
		d, err := CheckGPU(ctx, opts)
		if err != nil {
			return Result{}, err
		}
		device = d
	}
	nvcc, err := exec.LookPath(opts.NVCC)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrNoNVCC, err)
	}
	outputs := cgen.Outputs(f)
	src, err := Program(p, outputs)
	if err != nil {
		return Result{}, err
	}
	dir := opts.WorkDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "dragonx-cudabench-"); err != nil {
			return Result{}, fmt.Errorf("cudabench: %w", err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, fmt.Errorf("cudabench: %w", err)
	}
	cu := filepath.Join(dir, "bench.cu")
	bin := filepath.Join(dir, "bench")
	in := filepath.Join(dir, "inputs.bin")
	out := filepath.Join(dir, "outputs.bin")
	inputs := numeric.InputBytes(f, opts.Seed)
	if err := os.WriteFile(cu, []byte(src), 0o644); err != nil {
		return Result{}, fmt.Errorf("cudabench: %w", err)
	}
	if err := os.WriteFile(in, inputs, 0o644); err != nil {
		return Result{}, fmt.Errorf("cudabench: %w", err)
	}
	if _, err := tool(ctx, nil, nvcc, "-O3", "-arch="+opts.Arch, "-Xcudafe", "--diag_suppress=177", "-o", bin, cu); err != nil {
		return Result{}, fmt.Errorf("cudabench: compile: %w", err)
	}
	ref, err := reference(ctx, f, opts.CC, dir, inputs)
	if err != nil {
		return Result{}, err
	}
	res := Result{Device: device, Source: "measured", Repeats: opts.Repeats}
	if opts.WorkDir != "" {
		res.Program = cu
	}
	if opts.DryRun {
		res.Source = "dry-run"
		res.Repeats = 0
		return res, nil
	}
	stdout, err := tool(ctx, nil, bin, in, out, strconv.Itoa(opts.Warmup), strconv.Itoa(opts.Repeats))
	if err != nil {
		return Result{}, fmt.Errorf("cudabench: run: %w", err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		return Result{}, fmt.Errorf("cudabench: %w", err)
	}
	if res.MaxAbsErr, res.MaxRelErr, err = compare(f, outputs, got, ref, opts.RTol, opts.ATol); err != nil {
		return res, err
	}
	dev, times, err := parseRun(stdout, opts.Repeats)
	if err != nil {
		return Result{}, err
	}
	if dev != "" {
		res.Device = dev
	}
	res.Seconds, res.Spread = medianIQR(times)
	return res, nil
}

// parseRun reads the host program's standard output: the "device NAME"
// line and one "time_ms T" line per repeat (want of them).
func parseRun(stdout []byte, want int) (device string, times []float64, err error) {
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 2 && fields[0] == "device":
			device = strings.Join(fields[1:], " ")
		case len(fields) == 2 && fields[0] == "time_ms":
			ms, err := strconv.ParseFloat(fields[1], 64)
			if err != nil || ms < 0 || math.IsNaN(ms) || math.IsInf(ms, 0) {
				return "", nil, fmt.Errorf("cudabench: bad timing line %q", sc.Text())
			}
			times = append(times, ms/1e3)
		}
	}
	if len(times) != want {
		return "", nil, fmt.Errorf("cudabench: %d timings, want %d: %q", len(times), want, truncate(string(stdout), 300))
	}
	return device, times, nil
}

// medianIQR returns the median and the interquartile range of xs.
func medianIQR(xs []float64) (float64, float64) {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	q := func(p float64) float64 {
		x := p * float64(len(s)-1)
		i := int(x)
		if i+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[i] + (x-float64(i))*(s[i+1]-s[i])
	}
	return q(0.5), q(0.75) - q(0.25)
}

// reference runs the workload's float64 reference program on the inputs
// and returns its outputs.
func reference(ctx context.Context, f *ir.PrimFunc, cc, dir string, inputs []byte) ([]byte, error) {
	src, err := cgen.Reference(f)
	if err != nil {
		return nil, fmt.Errorf("cudabench: reference: %w", err)
	}
	path, err := exec.LookPath(cc)
	if err != nil {
		return nil, fmt.Errorf("cudabench: reference: C compiler %q: %w", cc, err)
	}
	c := filepath.Join(dir, "reference.c")
	bin := filepath.Join(dir, "reference")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		return nil, fmt.Errorf("cudabench: %w", err)
	}
	args := append(append([]string{}, numeric.DefaultFlags...), "-o", bin, c, "-lm")
	if _, err := tool(ctx, nil, path, args...); err != nil {
		return nil, fmt.Errorf("cudabench: reference: compile: %w", err)
	}
	out, err := tool(ctx, inputs, bin)
	if err != nil {
		return nil, fmt.Errorf("cudabench: reference: %w", err)
	}
	return out, nil
}

// tool runs path with args and stdin and returns its standard output; a
// failure carries the tail of standard error.
func tool(ctx context.Context, stdin []byte, path string, args ...string) ([]byte, error) {
	cmd := blobcache.Command(ctx, path, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out bytes.Buffer
	var tail blobcache.TailBuffer
	cmd.Stdout, cmd.Stderr = &out, &tail
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s %s: %v: %s", path, strings.Join(args, " "), err, tail.Tail())
	}
	return out.Bytes(), nil
}

// compare checks the GPU's float32 outputs against the reference's
// float64 ones, output parameters in order.
func compare(f *ir.PrimFunc, outputs []bool, got, ref []byte, rtol, atol float64) (maxAbs, maxRel float64, err error) {
	gi, ri := 0, 0
	for i, b := range f.Params {
		if !outputs[i] {
			continue
		}
		n := 1
		for _, d := range b.Shape() {
			n *= int(d)
		}
		if len(got) < gi+4*n || len(ref) < ri+8*n {
			return 0, 0, fmt.Errorf("cudabench: short output for %s: %d and %d bytes", b.Name(), len(got)-gi, len(ref)-ri)
		}
		for j := 0; j < n; j++ {
			g := float64(math.Float32frombits(binary.NativeEndian.Uint32(got[gi+4*j:])))
			r := math.Float64frombits(binary.NativeEndian.Uint64(ref[ri+8*j:]))
			d := math.Abs(g - r)
			if math.IsNaN(g) || d > atol+rtol*math.Abs(r) {
				return maxAbs, maxRel, fmt.Errorf("%w: %s element %d: GPU %g, reference %g (rtol %g, atol %g)", ErrMismatch, b.Name(), j, g, r, rtol, atol)
			}
			maxAbs = max(maxAbs, d)
			if r != 0 {
				maxRel = max(maxRel, d/math.Abs(r))
			}
		}
		gi += 4 * n
		ri += 8 * n
	}
	return maxAbs, maxRel, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
