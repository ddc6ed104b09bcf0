// Package ptxas compiles generated CUDA (kernels/cudagen) with the real
// CUDA compiler and reads back what ptxas says about every kernel:
// registers per thread, static shared memory, stack frame and spills. No
// GPU is needed: `nvcc -arch=sm_90 -cubin --ptxas-options=-v` compiles for
// H100/H200 anywhere the CUDA toolkit is installed (scripts/cuda-toolkit.sh
// installs Debian's, CUDA 11.8, for `make test`).
//
// Reports are cached by content: the key is the SHA-256 of the source, the
// nvcc version and the flags; an entry is a small JSON file in a
// kernels/internal/blobcache directory (atomic, checksummed writes, shared
// safely by concurrent processes), the same cache the numerical gate uses.
package ptxas

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"dragonx/kernels/cudagen"
	"dragonx/kernels/internal/blobcache"
	"dragonx/kernels/lower"
)

// ErrNoNVCC is returned (wrapped) by New when nvcc is not installed.
var ErrNoNVCC = errors.New("ptxas: nvcc not found (install the CUDA toolkit: scripts/cuda-toolkit.sh, run by make test)")

// ErrCompile is returned (wrapped, with nvcc's output) when the source
// does not compile.
var ErrCompile = errors.New("ptxas: nvcc failed")

// Options configure a Compiler.
type Options struct {
	// NVCC is the compiler to run; "" means nvcc on PATH.
	NVCC string
	// Arch is the target; "" means sm_90 (H100, H200).
	Arch string
	// CacheDir is the cache directory; "" means the user's cache
	// directory's dragonx/ptxas.
	CacheDir string
}

// Compiler compiles CUDA sources with nvcc.
type Compiler struct {
	path, arch string
	// id identifies the compiler (path and version) in cache keys.
	id    string
	cache *blobcache.Cache
}

// Kernel is what ptxas reports for one kernel.
type Kernel struct {
	Name        string `json:"name"`
	Registers   int    `json:"registers"`
	SharedBytes int64  `json:"shared_bytes"`
	StackBytes  int64  `json:"stack_bytes"`
	SpillStores int64  `json:"spill_stores"`
	SpillLoads  int64  `json:"spill_loads"`
}

// Spills reports whether the kernel spills registers to local memory.
func (k Kernel) Spills() bool { return k.SpillStores > 0 || k.SpillLoads > 0 }

// Report is a compiled source's kernels, in ptxas's order.
type Report struct {
	Arch    string   `json:"arch"`
	Kernels []Kernel `json:"kernels"`
	// Cached says the report came from the cache (not serialized).
	Cached bool `json:"-"`
}

// Kernel returns the report of kernel name, or false.
func (r *Report) Kernel(name string) (Kernel, bool) {
	for _, k := range r.Kernels {
		if k.Name == name {
			return k, true
		}
	}
	return Kernel{}, false
}

// New finds nvcc and reads its version (ErrNoNVCC when it is missing).
func New(ctx context.Context, opts Options) (*Compiler, error) {
	name := opts.NVCC
	if name == "" {
		name = "nvcc"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoNVCC, err)
	}
	out, err := blobcache.Command(ctx, path, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("ptxas: %s --version: %w", path, err)
	}
	arch := opts.Arch
	if arch == "" {
		arch = "sm_90"
	}
	dir := opts.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("ptxas: no cache directory: %w (set Options.CacheDir)", err)
		}
		dir = filepath.Join(base, "dragonx", "ptxas")
	}
	return &Compiler{path: path, arch: arch, id: path + "\n" + string(out), cache: &blobcache.Cache{Dir: dir}}, nil
}

// Arch returns the target architecture.
func (c *Compiler) Arch() string { return c.arch }

// Version returns nvcc's version line.
func (c *Compiler) Version() string {
	lines := strings.Split(strings.TrimSpace(c.id), "\n")
	return lines[len(lines)-1]
}

func (c *Compiler) flags() []string {
	return []string{"-arch=" + c.arch, "-cubin", "--ptxas-options=-v", "-Xcudafe", "--diag_suppress=177"}
}

// Compile compiles src (a CUDA C++ source) to a cubin and returns ptxas's
// report, from the cache when the same source was compiled before.
func (c *Compiler) Compile(ctx context.Context, src string) (*Report, error) {
	flags := c.flags()
	name := blobcache.Key("ptxas", src, c.id, strings.Join(flags, "\x00")) + ".json"
	if data := c.cache.Get(name); data != nil {
		var r Report
		if err := json.Unmarshal(data, &r); err == nil && r.Arch == c.arch {
			r.Cached = true
			return &r, nil
		}
	}
	tmp, err := os.MkdirTemp("", "dragonx-ptxas-")
	if err != nil {
		return nil, fmt.Errorf("ptxas: %w", err)
	}
	defer os.RemoveAll(tmp)
	cu := filepath.Join(tmp, "kernel.cu")
	if err := os.WriteFile(cu, []byte(src), 0o644); err != nil {
		return nil, fmt.Errorf("ptxas: %w", err)
	}
	args := append(append([]string{}, flags...), "-o", filepath.Join(tmp, "kernel.cubin"), cu)
	cmd := blobcache.Command(ctx, c.path, args...)
	var out strings.Builder
	var tail blobcache.TailBuffer
	cmd.Stdout = &out
	// ptxas's -v report goes to standard error with the diagnostics: keep
	// all of it for the parser, and the tail for an error.
	var all strings.Builder
	cmd.Stderr = multiWriter{&all, &tail}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ptxas: %w", ctx.Err())
		}
		return nil, fmt.Errorf("%w: %s %s: %v: %s", ErrCompile, c.path, strings.Join(args, " "), err, tail.Tail())
	}
	ks, err := Parse(all.String() + out.String())
	if err != nil {
		return nil, err
	}
	r := &Report{Arch: c.arch, Kernels: ks}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("ptxas: %w", err)
	}
	if err := c.cache.Put(name, data, 0o644); err != nil {
		return nil, fmt.Errorf("ptxas: %w", err)
	}
	return r, nil
}

type multiWriter struct {
	a, b interface{ Write([]byte) (int, error) }
}

func (m multiWriter) Write(p []byte) (int, error) {
	m.a.Write(p)
	return m.b.Write(p)
}

var (
	reEntry = regexp.MustCompile(`Compiling entry function '([^']+)'`)
	reProps = regexp.MustCompile(`Function properties for (\S+)`)
	reFrame = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	reUsed  = regexp.MustCompile(`Used (\d+) registers`)
	reSmem  = regexp.MustCompile(`(\d+) bytes smem`)
)

// Parse reads the kernels of ptxas -v output: "Compiling entry function"
// starts one, "Function properties" gives its stack frame and spills,
// "Used N registers[, M bytes smem]" its registers and shared memory.
// Output naming no kernel, or a kernel without its "Used" line, is an
// error.
func Parse(out string) ([]Kernel, error) {
	var ks []Kernel
	index := map[string]int{}
	cur, props := -1, -1
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	used := map[int]bool{}
	for sc.Scan() {
		line := sc.Text()
		if m := reEntry.FindStringSubmatch(line); m != nil {
			if i, ok := index[m[1]]; ok {
				cur = i
			} else {
				index[m[1]] = len(ks)
				cur = len(ks)
				ks = append(ks, Kernel{Name: m[1]})
			}
			continue
		}
		if m := reProps.FindStringSubmatch(line); m != nil {
			props = -1
			if i, ok := index[m[1]]; ok {
				props = i
			}
			continue
		}
		if m := reFrame.FindStringSubmatch(line); m != nil && props >= 0 {
			ks[props].StackBytes = atoi(m[1])
			ks[props].SpillStores = atoi(m[2])
			ks[props].SpillLoads = atoi(m[3])
			continue
		}
		if m := reUsed.FindStringSubmatch(line); m != nil && cur >= 0 {
			ks[cur].Registers = int(atoi(m[1]))
			if s := reSmem.FindStringSubmatch(line); s != nil {
				ks[cur].SharedBytes = atoi(s[1])
			}
			used[cur] = true
		}
	}
	if len(ks) == 0 {
		return nil, fmt.Errorf("ptxas: no kernel in the output of ptxas -v: %q", truncate(out, 300))
	}
	for i, k := range ks {
		if !used[i] {
			return nil, fmt.Errorf("ptxas: no register count for kernel %s in the output of ptxas -v", k.Name)
		}
	}
	return ks, nil
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64) // the regexps match digits only
	return n
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// CompileProgram generates the CUDA of a lowered program (kernels/cudagen),
// compiles it (cached) and returns ptxas's report of each of p's kernels,
// in p.Kernels' order: registers per thread, shared memory, spills, the
// figures a latency model can take instead of its own estimates.
func (c *Compiler) CompileProgram(ctx context.Context, p *lower.Program) ([]Kernel, error) {
	gen, err := cudagen.Generate(p)
	if err != nil {
		return nil, fmt.Errorf("ptxas: %w", err)
	}
	r, err := c.Compile(ctx, gen.Code)
	if err != nil {
		return nil, err
	}
	out := make([]Kernel, len(gen.Launches))
	for i, l := range gen.Launches {
		k, ok := r.Kernel(l.Kernel)
		if !ok {
			return nil, fmt.Errorf("ptxas: no report for kernel %s (%s of the program)", l.Kernel, p.Kernels[i].Name)
		}
		out[i] = k
	}
	return out, nil
}
