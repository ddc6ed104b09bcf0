// Package cudagen writes CUDA C++ from a lowered program (kernels/lower):
// the source nvcc compiles for the GPU, as TVM's CUDA codegen writes it
// from the same lowered TIR.
//
// Generate returns a Source: the CUDA text and a host-side description of
// how to launch it (Launches: kernel, grid, block, shared bytes, argument
// buffers in order; Buffers: what the host allocates). The text holds:
//
//   - one extern "C" __global__ function per kernel, in the program's
//     order, with __launch_bounds__(threads per block); its arguments are
//     the program's parameters then its global intermediates (float
//     *__restrict__), every kernel taking all of them;
//   - the kernel's shared allocations as static __shared__ arrays and its
//     local ones as per-thread arrays, both __align__(16) (vector accesses
//     need it); a block needing more than 48 KiB of static shared memory is
//     refused (VerifyGPUCode's CUDA limit is the same 48 KiB);
//   - the lowered body: threadIdx/blockIdx for the implicit indices, a
//     for loop per Loop, __syncthreads() per Barrier, if per If (block
//     predicates, reduction inits), an assignment per Store; integer
//     arithmetic in int (32 bits: Generate refuses a program with a buffer
//     or a launch of 2^31 elements or more, where int indices could
//     overflow), floating point in float;
//   - #pragma unroll before an Unrolled loop, a VThread loop (TVM unrolls
//     virtual threads into the thread's code), and a serial loop of
//     constant extent whose steps (its extent times the statements it
//     runs, TVM's UnrollLoop count) are at most the pragma_auto_unroll_max_step
//     in force (the innermost Loop.UnrollMaxStep above it, else the
//     kernel's);
//   - a Vectorized loop of extent 2 or 4 becomes one float2/float4 store
//     (and float2/float4 loads of the operands that move with the lane)
//     when vectorize proves it exact: its body is one Store under Blocks
//     and Ifs, the store index is base + lane with base a multiple of the
//     width (aligned, contiguous), every load index is either the same for
//     all lanes or base' + lane with base' aligned, and every If condition
//     is the same for all lanes (see vector.go). Otherwise it is a plain
//     loop under #pragma unroll, with a comment saying why;
//   - dx_launch, a host function that launches the kernels in order on a
//     stream and returns cudaGetLastError().
//
// Only float32 buffers are supported (ErrUnsupported otherwise), as in the
// numerical gate (kernels/cgen).
package cudagen

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"dragonx/kernels/internal/cexpr"
	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
)

// ErrUnsupported is returned (wrapped, naming the construct) for a program
// the generator cannot write.
var ErrUnsupported = errors.New("cudagen: not supported")

// MaxStaticShared is the most shared memory a block may declare
// statically (48 KiB on every CUDA device).
const MaxStaticShared = 48 << 10

// Source is a generated CUDA program and how to launch it.
type Source struct {
	// Code is the CUDA C++ text (kernels and the dx_launch host function).
	Code string
	// Buffers are the global buffers, in argument order: the program's
	// parameters, then its global intermediates.
	Buffers []Buffer
	// Launches are the kernel launches, in order.
	Launches []Launch
}

// Buffer is a global buffer of the program.
type Buffer struct {
	// Name is its C name in Code.
	Name string
	// Elems is its number of float32 elements.
	Elems int64
	// Param is the index of the program parameter it is, -1 for a global
	// intermediate.
	Param int
}

// Launch is one kernel launch.
type Launch struct {
	// Kernel is the __global__ function's name.
	Kernel      string
	Grid, Block [3]int64
	// SharedBytes is the static shared memory of one block, in
	// SharedArrays arrays.
	SharedBytes  int64
	SharedArrays int
	// LocalBytes is the local arrays of one thread.
	LocalBytes int64
	// UnrolledSteps is the most steps of a loop nest that the
	// auto-unroll rule put under #pragma unroll (0 when none): large
	// unrolled bodies raise register pressure.
	UnrolledSteps int64
}

// Threads returns the threads of one block.
func (l Launch) Threads() int64 { return l.Block[0] * l.Block[1] * l.Block[2] }

// Generate writes the CUDA source of p (see the package doc).
func Generate(p *lower.Program) (*Source, error) {
	if p == nil {
		return nil, errors.New("cudagen: no program")
	}
	nm := newNames()
	out := &Source{}
	global := map[*ir.Buffer]string{}
	var order []*ir.Buffer
	add := func(b *ir.Buffer, param int) error {
		if err := floatBuffer(b); err != nil {
			return err
		}
		n := nm.fresh(b.Name())
		global[b] = n
		order = append(order, b)
		out.Buffers = append(out.Buffers, Buffer{Name: n, Elems: b.Shape()[0], Param: param})
		return nil
	}
	for i, b := range p.Params {
		if err := add(b, i); err != nil {
			return nil, err
		}
	}
	for _, a := range p.Globals {
		if err := add(a.Flat, -1); err != nil {
			return nil, err
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "// Generated by dragonx kernels/cudagen from the lowered program %s.\n", p.Name)
	sb.WriteString(prelude)
	var params []string
	for _, b := range order {
		params = append(params, "float *__restrict__ "+global[b])
	}
	kernelNames := newNames()
	for i, k := range p.Kernels {
		kg := &kernelGen{nm: nm.child(), k: k, global: global}
		name := kernelNames.fresh(k.Name)
		if name == "" || name == "dx_launch" {
			name = kernelNames.fresh(fmt.Sprintf("dx_kernel%d", i))
		}
		l, err := kg.emit(&sb, name, params)
		if err != nil {
			return nil, fmt.Errorf("cudagen: kernel %s: %w", k.Name, err)
		}
		out.Launches = append(out.Launches, l)
	}
	// The host launcher.
	args := make([]string, len(order))
	for i, b := range order {
		args[i] = global[b]
	}
	fmt.Fprintf(&sb, "\n// dx_launch runs the kernels in order on stream.\nextern \"C\" cudaError_t dx_launch(%s) {\n",
		strings.Join(append(append([]string{}, params...), "cudaStream_t stream"), ", "))
	for _, l := range out.Launches {
		fmt.Fprintf(&sb, "\t%s<<<dim3(%d, %d, %d), dim3(%d, %d, %d), 0, stream>>>(%s);\n",
			l.Kernel, l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2], strings.Join(args, ", "))
	}
	sb.WriteString("\treturn cudaGetLastError();\n}\n")
	out.Code = sb.String()
	return out, nil
}

const prelude = `
#include <cuda_runtime.h>
#include <stdint.h>

// TVM's floor division and modulo (toward negative infinity).
__device__ __forceinline__ int dx_floordiv(int a, int b) {
	int q = a / b;
	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ int dx_floormod(int a, int b) {
	int r = a % b;
	return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
__device__ __forceinline__ float dx_floordivf(float a, float b) { return floorf(a / b); }
__device__ __forceinline__ float dx_floormodf(float a, float b) { return a - floorf(a / b) * b; }
__device__ __forceinline__ float dx_sigmoidf(float a) { return 1.0f / (1.0f + expf(-a)); }
`

func floatBuffer(b *ir.Buffer) error {
	if b.DType() != ir.Float32 {
		return fmt.Errorf("%w: buffer %s is %s; only float32 buffers are generated", ErrUnsupported, b.Name(), b.DType())
	}
	if b.Rank() != 1 {
		return fmt.Errorf("%w: buffer %s has rank %d, not a flat buffer", ErrUnsupported, b.Name(), b.Rank())
	}
	if n := b.Shape()[0]; n >= math.MaxInt32 {
		return fmt.Errorf("%w: buffer %s has %d elements; int indices need fewer than 2^31", ErrUnsupported, b.Name(), n)
	}
	return nil
}

// names gives C identifiers, unique within a scope and never a CUDA or
// C++ keyword or builtin.
type names struct{ used map[string]bool }

func newNames() *names { return &names{used: map[string]bool{}} }

// child returns a scope that sees the names used so far.
func (n *names) child() *names {
	c := newNames()
	for k := range n.used {
		c.used[k] = true
	}
	return c
}

var reserved = map[string]bool{}

func init() {
	for _, s := range strings.Fields(`auto bool break case char const continue default do double else enum
	extern float for goto if inline int long register restrict return short signed sizeof static struct
	switch typedef union unsigned void volatile while class delete new this template typename namespace
	operator private public protected virtual friend true false nullptr using asm
	threadIdx blockIdx blockDim gridDim warpSize min max abs main dim3 float2 float4 stream`) {
		reserved[s] = true
	}
}

func (n *names) fresh(base string) string {
	base = cexpr.Ident(base)
	if base == "" || base[0] >= '0' && base[0] <= '9' || strings.HasPrefix(base, "dx_") || strings.HasPrefix(base, "__") {
		base = "v_" + base
	}
	if !n.used[base] && !reserved[base] {
		n.used[base] = true
		return base
	}
	for i := 1; ; i++ {
		s := fmt.Sprintf("%s_%d", base, i)
		if !n.used[s] {
			n.used[s] = true
			return s
		}
	}
}
