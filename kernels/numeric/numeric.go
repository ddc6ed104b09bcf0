// Package numeric is the numerical gate: it tells a lowered kernel program
// (kernels/lower) that computes its workload from one that does not, by
// running it on the CPU with a GPU's semantics and comparing with a naive
// reference.
//
// Check writes the program's C and the workload's float64 reference C
// (kernels/cgen), compiles both with the system C compiler (cc -O3), runs
// the kernel twice, with the threads of every barrier phase in ascending
// and in descending order, and the reference once, all three at the same
// time, on the same seeded random inputs (interp.RandomArgs: float32 in
// [-1, 1), widened for the reference). It fails, with an *Error of a
// Kind, when:
//
//   - the C cannot be generated (unsupported) or compiled (compile);
//   - the kernel reads or writes outside a buffer (out-of-bounds: kernel,
//     buffer and index named), or its threads do not meet at the same
//     barriers (divergent-barrier);
//   - the two thread orders give outputs that differ in any bit (race);
//   - an output holds NaN (nan: the kernel read poisoned memory, shared,
//     local or a global intermediate never written, or left an output
//     element unwritten);
//   - an element differs from the reference by more than atol + rtol *
//     |reference| (mismatch; defaults rtol 1e-3, atol 2e-3, numpy's
//     allclose rule, as MetaSchedule validates), and the outputs are not
//     within the same tolerance of the workload's own float32 program
//     either (see below);
//   - the program fails otherwise (run) or the reference is not finite
//     (reference: the inputs are outside the workload's domain);
//   - the programs would need more than the gate grants (resources: see
//     Bounds), or a program runs past its CPU-time or wall-clock limit, or
//     the compiler past its own (timeout).
//
// A passing check returns the largest absolute and relative errors and the
// number of elements compared (the mismatch error carries them too).
//
// # Two references
//
// The float64 reference is the exact answer, as near as it matters. A
// correct schedule can still be far from it in float32: a long reduction
// that one thread accumulates alone (NRM (1,4096,1024) summed by a single
// thread: relative error 1.5e-3) rounds as the unscheduled function itself
// does in float32. So when the outputs are beyond the tolerance of the
// float64 reference, the gate runs the workload's float32 program (the
// same C in float, cgen.ReferenceFloat32: TIR's sequential order, which is
// what TVM compares a schedule with) and passes the kernel if it is within
// the same tolerance of that (Result.Float32Program). A wrong schedule is
// far from both. Its outputs are cached as the float64 reference's are.
//
// # Cache
//
// Compiled programs are cached by content: the key is the SHA-256 of the C
// source, the compiler's identity (its path and --version output) and the
// flags. The reference's outputs are cached too, by the SHA-256 of its
// source (which the workload determines), the compiler, the flags and the
// seed, so a search that checks many schedules of one workload runs the
// reference once. The directory is Options.CacheDir, by default
// os.UserCacheDir()/dragonx/numeric. Entries are written to a temporary
// file and renamed, with a checksum file beside each: two processes may
// share the directory, and an entry that does not match its checksum
// (truncated, corrupt) is rebuilt, not trusted. Nothing is ever evicted:
// remove the directory to reclaim the space.
//
// A Gate also remembers the verdict of each kernel source it has checked
// against each workload (Result.Repeated): a second check of the same
// program runs nothing, and checks of one program that start together run
// it once. Checks that end without a verdict (cancelled, the compiler or
// the program killed) are not remembered.
//
// # Bounds
//
// Every program the gate runs is bounded, whatever the schedule. Before
// anything is generated or allocated, the workload's parameters must fit
// in Options.MaxIOBytes (their float32 bytes: inputs and outputs), and
// each program's cgen.Cost (an upper bound on the steps it executes:
// trip counts times threads times grid size, and on the memory it
// allocates) must fit in Options.MaxSteps and Options.MaxMemory; else the
// check fails with kind resources, having compiled and run nothing. Each
// run then limits itself (setrlimit at the start of main, from the
// environment the gate gives it) to Options.CPUTime of CPU and to
// Options.MaxMemory plus AddressSpaceSlack of address space, and the gate
// kills it after Options.RunTimeout of wall-clock time; the compiler gets
// Options.CompileTimeout. A run or compilation past a limit is a timeout,
// an allocation the memory limit refuses is resources: verdicts on the
// program (incorrect), never a failure of the gate. A timeout is not
// remembered (it depends on the machine's load); resources are.
//
// Cancelling the context kills the compiler and the programs; that, and
// the context's deadline, are errors of the check, not verdicts.
package numeric

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"dragonx/kernels/cgen"
	"dragonx/kernels/interp"
	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
)

// Default tolerances (MetaSchedule's validation).
const (
	DefaultRTol = 1e-3
	DefaultATol = 2e-3
)

// Default bounds (see the package doc, Bounds). DefaultMaxSteps is 7.6
// times the most steps of the kernel and reference programs of 12 sampled
// schedules of each benchmark shape of C2D, C3D, CBR, GMM and SFM (C3D's,
// 3.6e10); DefaultCPUTime is over twice what the slowest check measured
// took (a C3D candidate: over 6 minutes for its two thread orders);
// DefaultMaxMemory holds a kernel at CUDA's cap of 512 KiB of local
// memory per thread times 1024 threads (512 MiB) beside the largest
// parameters the gate admits; DefaultMaxIOBytes is 7 times the largest
// benchmark workload's parameters (C3D, 34 MiB).
const (
	DefaultMaxSteps       = int64(1) << 38
	DefaultMaxMemory      = int64(1) << 30
	DefaultMaxIOBytes     = int64(256) << 20
	DefaultCPUTime        = 15 * time.Minute
	DefaultCompileTimeout = 5 * time.Minute
	// AddressSpaceSlack is what a program's address-space limit adds to
	// Options.MaxMemory: its code, the C library, its stack.
	AddressSpaceSlack = int64(256) << 20
)

// DefaultFlags are the C compiler's flags when Options.Flags is nil. -O3
// vectorizes the kernels' inner loops (without reassociating: results are
// those of the source's order) and runs them several times faster than -O2
// for about 0.05 s more compilation; see docs/numeric-gate.md.
var DefaultFlags = []string{"-O3", "-fno-math-errno", "-w"}

// Options configure a Gate. The zero value is the default.
type Options struct {
	// CacheDir is the cache directory; "" means
	// os.UserCacheDir()/dragonx/numeric.
	CacheDir string
	// CC is the C compiler; "" means "cc".
	CC string
	// Flags are the compiler's flags; nil means DefaultFlags.
	Flags []string
	// Seed seeds the random inputs.
	Seed uint64
	// RTol and ATol are the tolerances; 0 means DefaultRTol, DefaultATol.
	RTol, ATol float64

	// MaxSteps bounds each program's steps (cgen.Cost.Steps), MaxMemory
	// the memory it allocates (cgen.Cost.Bytes, and its address-space
	// limit, plus AddressSpaceSlack), MaxIOBytes the float32 bytes of the
	// workload's parameters; 0 means DefaultMaxSteps, DefaultMaxMemory,
	// DefaultMaxIOBytes.
	MaxSteps, MaxMemory, MaxIOBytes int64
	// CPUTime is each run's CPU-time limit (whole seconds, at least one);
	// 0 means DefaultCPUTime. RunTimeout is each run's wall-clock limit; 0
	// means twice CPUTime. CompileTimeout is each compilation's; 0 means
	// DefaultCompileTimeout.
	CPUTime, RunTimeout, CompileTimeout time.Duration
}

// Kind is the class of a gate failure.
type Kind string

// The kinds of failure.
const (
	KindUnsupported      Kind = "unsupported"
	KindCompile          Kind = "compile"
	KindRun              Kind = "run"
	KindOutOfBounds      Kind = "out-of-bounds"
	KindDivergentBarrier Kind = "divergent-barrier"
	KindRace             Kind = "race"
	KindNaN              Kind = "nan"
	KindMismatch         Kind = "mismatch"
	KindReference        Kind = "reference"
	// KindResources: the programs would need more steps, memory or
	// parameter bytes than the gate grants (found before compiling), or
	// an allocation went past the memory limit.
	KindResources Kind = "resources"
	// KindTimeout: a run went past its CPU-time or wall-clock limit, or
	// the compiler past its wall-clock limit.
	KindTimeout Kind = "timeout"
)

// Error is a failure of the gate: the program is wrong (or cannot be run).
type Error struct {
	Kind Kind
	Msg  string
	// Result holds the comparison's figures for a mismatch (nil
	// otherwise).
	Result *Result
}

func (e *Error) Error() string { return fmt.Sprintf("numeric: %s: %s", e.Kind, e.Msg) }

// Result is the outcome of a passing check (or the figures of a
// mismatch).
type Result struct {
	// MaxAbsErr and MaxRelErr are the largest |got - want| and
	// |got - want| / |want| over the elements compared (the relative error
	// over those whose reference is not 0: always finite).
	MaxAbsErr, MaxRelErr float64
	// Compared is the number of output elements compared.
	Compared int64
	// KernelCached and ReferenceCached say whether the kernel binary and
	// the reference's outputs came from the cache.
	KernelCached, ReferenceCached bool
	// Repeated is true when this gate had already checked the same kernel
	// source against the same workload (or was checking it at the same
	// time): the result is that check's and nothing ran again.
	Repeated bool
	// Float32Program is true when the outputs were beyond the tolerance of
	// the float64 reference but within it of the workload's float32
	// program (MaxAbsErr and MaxRelErr stay those against float64).
	Float32Program bool
}

// Gate runs checks; it is safe for concurrent use.
type Gate struct {
	opts  Options
	cache *cache
	// ccMu guards cc and ccErr: the compiler found by the first check that
	// got an answer (a check cut short by its context leaves them unset).
	ccMu  sync.Mutex
	cc    *compiler
	ccErr error

	// checks remembers the verdict of every kernel source checked (a
	// pass or a failure of the program), refs runs each reference once
	// at a time (its outputs stay in the cache directory, not in memory).
	checks memo[checked]
	refs   memo[[]byte]
}

// checked is a remembered check: its result or its failure.
type checked struct {
	res *Result
	err error
}

// verdict reports whether a check's outcome is a verdict on the program,
// the same every time it runs (a pass or an *Error of a kind the program
// determines), rather than a failure of the gate or of this attempt
// (cancelled, no compiler, the compiler or the program killed).
func verdict(err error) bool {
	if err == nil {
		return true
	}
	var ge *Error
	return errors.As(err, &ge) && ge.Kind != KindCompile && ge.Kind != KindRun && ge.Kind != KindTimeout
}

// New returns a gate with options opts.
func New(opts Options) (*Gate, error) {
	if opts.CacheDir == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("numeric: no cache directory: %w (set Options.CacheDir)", err)
		}
		opts.CacheDir = filepath.Join(d, "dragonx", "numeric")
	}
	if opts.CC == "" {
		opts.CC = "cc"
	}
	if opts.Flags == nil {
		opts.Flags = DefaultFlags
	}
	if opts.RTol == 0 {
		opts.RTol = DefaultRTol
	}
	if opts.ATol == 0 {
		opts.ATol = DefaultATol
	}
	if opts.RTol < 0 || opts.ATol < 0 || math.IsNaN(opts.RTol) || math.IsNaN(opts.ATol) {
		return nil, fmt.Errorf("numeric: tolerances rtol %g, atol %g: want non-negative numbers", opts.RTol, opts.ATol)
	}
	for _, d := range []struct {
		p   *int64
		def int64
	}{{&opts.MaxSteps, DefaultMaxSteps}, {&opts.MaxMemory, DefaultMaxMemory}, {&opts.MaxIOBytes, DefaultMaxIOBytes}} {
		if *d.p == 0 {
			*d.p = d.def
		}
	}
	if opts.CPUTime == 0 {
		opts.CPUTime = DefaultCPUTime
	}
	if opts.RunTimeout == 0 {
		opts.RunTimeout = 2 * opts.CPUTime
	}
	if opts.CompileTimeout == 0 {
		opts.CompileTimeout = DefaultCompileTimeout
	}
	if opts.MaxSteps < 0 || opts.MaxMemory < 0 || opts.MaxIOBytes < 0 || opts.CPUTime < time.Second || opts.RunTimeout < 0 || opts.CompileTimeout < 0 {
		return nil, fmt.Errorf("numeric: bounds (steps %d, memory %d, I/O bytes %d, CPU time %s, run timeout %s, compile timeout %s): want positive values, CPU time at least 1s",
			opts.MaxSteps, opts.MaxMemory, opts.MaxIOBytes, opts.CPUTime, opts.RunTimeout, opts.CompileTimeout)
	}
	return &Gate{opts: opts, cache: &cache{Dir: opts.CacheDir}}, nil
}

// Options returns the gate's options, defaults filled in.
func (g *Gate) Options() Options { return g.opts }

// compiler returns the gate's C compiler, probed on first use. A probe cut
// short by ctx (a busy machine, a cancelled check) is not remembered: the
// next check probes again, so one early deadline does not break the gate.
func (g *Gate) compiler(ctx context.Context) (*compiler, error) {
	g.ccMu.Lock()
	defer g.ccMu.Unlock()
	if g.cc != nil || g.ccErr != nil {
		return g.cc, g.ccErr
	}
	cc, err := newCompiler(ctx, g.opts.CC, g.opts.Flags, g.opts.CompileTimeout)
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	g.cc, g.ccErr = cc, err
	return cc, err
}

// Check runs program p, a lowering of a schedule of workload f (same
// parameters, in order), and compares it with f's reference. A nil error
// means it passed; a failure is an *Error (see the package doc), any other
// error a failure of the gate itself (no compiler, cancelled).
func (g *Gate) Check(ctx context.Context, f *ir.PrimFunc, p *lower.Program) (*Result, error) {
	if f == nil || p == nil {
		return nil, errors.New("numeric: no workload or no program")
	}
	if len(f.Params) != len(p.Params) {
		return nil, &Error{Kind: KindUnsupported, Msg: fmt.Sprintf("the program has %d parameters, the workload %d", len(p.Params), len(f.Params))}
	}
	if err := g.admitWorkload(f); err != nil {
		return nil, err
	}
	kc, err := cgen.KernelCost(p)
	if err != nil {
		return nil, &Error{Kind: KindUnsupported, Msg: err.Error()}
	}
	if err := g.admit("kernel", kc); err != nil {
		return nil, err
	}
	outputs := cgen.Outputs(f)
	ksrc, err := cgen.Kernel(p, outputs)
	if err != nil {
		return nil, &Error{Kind: KindUnsupported, Msg: err.Error()}
	}
	rsrc, err := cgen.Reference(f)
	if err != nil {
		return nil, &Error{Kind: KindUnsupported, Msg: err.Error()}
	}
	cc, err := g.compiler(ctx)
	if err != nil {
		return nil, err
	}
	c, shared, err := g.checks.do(ctx, key("check", ksrc, rsrc), func() (checked, error) {
		res, err := g.check(ctx, cc, f, outputs, ksrc, rsrc)
		return checked{res, err}, nil
	}, func(c checked, _ error) bool { return verdict(c.err) })
	if err != nil {
		return nil, err
	}
	if c.err != nil || !shared {
		return c.res, c.err
	}
	again := *c.res
	again.Repeated = true
	return &again, nil
}

// check runs a check that Check has not seen before.
func (g *Gate) check(ctx context.Context, cc *compiler, f *ir.PrimFunc, outputs []bool, ksrc, rsrc string) (*Result, error) {
	var outSizes []int64
	var outNames []string
	for i, b := range f.Params {
		if outputs[i] {
			outSizes = append(outSizes, b.NumElements())
			outNames = append(outNames, b.Name())
		}
	}
	in := inputBytes(f, outputs, g.opts.Seed)

	res := &Result{}
	var asc, desc, ref []byte
	grp, gctx := errgroup.WithContext(ctx)
	grp.Go(func() error {
		bin, cached, err := cc.binary(gctx, g.cache, ksrc)
		if err != nil {
			return err
		}
		res.KernelCached = cached
		var sub errgroup.Group
		sub.Go(func() (err error) { asc, err = g.run(gctx, "kernel", bin, in, "asc"); return })
		sub.Go(func() (err error) { desc, err = g.run(gctx, "kernel", bin, in, "desc"); return })
		return sub.Wait()
	})
	grp.Go(func() (err error) {
		ref, res.ReferenceCached, err = g.reference(gctx, cc, rsrc, in)
		return err
	})
	if err := grp.Wait(); err != nil {
		return nil, err
	}
	if int64(len(asc)) != int64(len(desc)) {
		return nil, &Error{Kind: KindRun, Msg: fmt.Sprintf("the thread orders wrote %d and %d bytes", len(asc), len(desc))}
	}
	if i := firstDiff(asc, desc); i >= 0 && 4*(i/4+1) <= len(asc) {
		b, j := locate(outNames, outSizes, int64(i/4))
		a := math.Float32frombits(binary.NativeEndian.Uint32(asc[i/4*4:]))
		d := math.Float32frombits(binary.NativeEndian.Uint32(desc[i/4*4:]))
		return nil, &Error{Kind: KindRace, Msg: fmt.Sprintf("the thread orders disagree: %s[%d] is %g with the threads of each phase in ascending order, %g in descending order (a race within a barrier phase)", b, j, a, d)}
	}
	return g.compare(ctx, cc, f, in, asc, ref, res)
}

// Reference returns f's float64 reference outputs on the gate's inputs
// (the output parameters in order, native float64), from the cache when it
// holds them.
func (g *Gate) Reference(ctx context.Context, f *ir.PrimFunc) ([]byte, error) {
	ref, _, _, err := g.reference64(ctx, f)
	return ref, err
}

func (g *Gate) reference64(ctx context.Context, f *ir.PrimFunc) (ref []byte, cached bool, cc *compiler, err error) {
	if f == nil {
		return nil, false, nil, errors.New("numeric: no workload")
	}
	if err := g.admitWorkload(f); err != nil {
		return nil, false, nil, err
	}
	rsrc, err := cgen.Reference(f)
	if err != nil {
		return nil, false, nil, &Error{Kind: KindUnsupported, Msg: err.Error()}
	}
	if cc, err = g.compiler(ctx); err != nil {
		return nil, false, nil, err
	}
	ref, cached, err = g.reference(ctx, cc, rsrc, inputBytes(f, cgen.Outputs(f), g.opts.Seed))
	return ref, cached, cc, err
}

// Compare compares out, a program's outputs on the gate's inputs (the
// workload's output parameters in order, native float32, as a kernel
// writes them; InputBytes gives the inputs), with f's references, as
// Check does after running a kernel: the float64 reference, then, beyond
// its tolerance, the workload's float32 program. The CUDA harness
// (kernels/cudabench) checks a GPU's outputs with it.
func (g *Gate) Compare(ctx context.Context, f *ir.PrimFunc, out []byte) (*Result, error) {
	ref, cached, cc, err := g.reference64(ctx, f)
	if err != nil {
		return nil, err
	}
	in := inputBytes(f, cgen.Outputs(f), g.opts.Seed)
	return g.compare(ctx, cc, f, in, out, ref, &Result{ReferenceCached: cached})
}

// compare compares the kernel's outputs got with the float64 reference's
// ref (and, where needed, the float32 program's on inputs in).
func (g *Gate) compare(ctx context.Context, cc *compiler, f *ir.PrimFunc, in, out, ref []byte, res *Result) (*Result, error) {
	outputs := cgen.Outputs(f)
	var outSizes []int64
	var outNames []string
	for i, b := range f.Params {
		if outputs[i] {
			outSizes = append(outSizes, b.NumElements())
			outNames = append(outNames, b.Name())
		}
	}
	var total int64
	for _, n := range outSizes {
		total += n
	}
	if int64(len(out)) != 4*total {
		return nil, &Error{Kind: KindRun, Msg: fmt.Sprintf("kernel wrote %d bytes, want %d", len(out), 4*total)}
	}
	if int64(len(ref)) != 8*total {
		return nil, &Error{Kind: KindRun, Msg: fmt.Sprintf("reference wrote %d bytes, want %d", len(ref), 8*total)}
	}
	rtol, atol := g.opts.RTol, g.opts.ATol
	for e := range total {
		got := float64(math.Float32frombits(binary.NativeEndian.Uint32(out[4*e:])))
		want := math.Float64frombits(binary.NativeEndian.Uint64(ref[8*e:]))
		if math.IsNaN(want) || math.IsInf(want, 0) {
			b, j := locate(outNames, outSizes, e)
			return nil, &Error{Kind: KindReference, Msg: fmt.Sprintf("the reference gives %g at %s[%d]: the inputs are outside the workload's domain", want, b, j)}
		}
		if math.IsNaN(got) {
			b, j := locate(outNames, outSizes, e)
			return nil, &Error{Kind: KindNaN, Msg: fmt.Sprintf("%s[%d] is NaN: the kernel reads uninitialised (poisoned) memory or leaves the element unwritten", b, j)}
		}
	}
	res.Compared = total
	wide := func(e int64) float64 { return math.Float64frombits(binary.NativeEndian.Uint64(ref[8*e:])) }
	bad, firstBad := countBeyond(res, out, total, wide, rtol, atol)
	if bad == 0 {
		return res, nil
	}
	// The float32 program: what the workload itself computes in float32
	// (TVM's notion of a correct schedule: it agrees with the unscheduled
	// function). Accumulation over a long reduction can leave both it and a
	// correct kernel beyond the tolerance of the float64 reference.
	src32, err := cgen.ReferenceFloat32(f)
	if err != nil {
		return nil, &Error{Kind: KindUnsupported, Msg: err.Error()}
	}
	ref32, _, err := g.reference(ctx, cc, src32, in)
	if err != nil {
		return nil, err
	}
	if int64(len(ref32)) != 4*total {
		return nil, &Error{Kind: KindRun, Msg: fmt.Sprintf("float32 reference wrote %d bytes, want %d", len(ref32), 4*total)}
	}
	narrow := func(e int64) float64 { return float64(math.Float32frombits(binary.NativeEndian.Uint32(ref32[4*e:]))) }
	res32 := &Result{}
	if bad32, _ := countBeyond(res32, out, total, narrow, rtol, atol); bad32 == 0 {
		res.Float32Program = true
		return res, nil
	}
	b, j := locate(outNames, outSizes, firstBad)
	got := math.Float32frombits(binary.NativeEndian.Uint32(out[4*firstBad:]))
	return nil, &Error{Kind: KindMismatch, Result: res, Msg: fmt.Sprintf("%d of %d elements differ from the reference beyond rtol %g, atol %g; first %s[%d]: got %g, want %g (max abs err %g, max rel err %g; against the workload's float32 program: max abs err %g, max rel err %g)", bad, total, rtol, atol, b, j, got, wide(firstBad), res.MaxAbsErr, res.MaxRelErr, res32.MaxAbsErr, res32.MaxRelErr)}
}

// countBeyond compares the kernel's float32 outputs got with want(e),
// records the largest errors in res, and returns the number of elements beyond
// atol + rtol * |want| and the first of them (-1 when none).
func countBeyond(res *Result, got []byte, total int64, want func(int64) float64, rtol, atol float64) (bad, first int64) {
	first = -1
	for e := range total {
		g := float64(math.Float32frombits(binary.NativeEndian.Uint32(got[4*e:])))
		w := want(e)
		d := math.Abs(g - w)
		res.MaxAbsErr = max(res.MaxAbsErr, d)
		if w != 0 {
			res.MaxRelErr = max(res.MaxRelErr, d/math.Abs(w))
		}
		if !(d <= atol+rtol*math.Abs(w)) {
			if first < 0 {
				first = e
			}
			bad++
		}
	}
	return bad, first
}

// reference returns the outputs of a reference program, cached by source,
// compiler, flags and seed.
func (g *Gate) reference(ctx context.Context, cc *compiler, src string, in []byte) ([]byte, bool, error) {
	name := key("ref", src, cc.id, strings.Join(cc.flags, "\x00"), fmt.Sprint(g.opts.Seed)) + ".out"
	// Checks of one workload that start together run its reference once:
	// the others wait, then read it from the cache.
	var cached bool
	out, _, err := g.refs.do(ctx, name, func() ([]byte, error) {
		if out := g.cache.Get(name); out != nil {
			cached = true
			return out, nil
		}
		bin, _, err := cc.binary(ctx, g.cache, src)
		if err != nil {
			return nil, err
		}
		out, err := g.run(ctx, "reference", bin, in)
		if err != nil {
			return nil, err
		}
		if err := g.cache.Put(name, out, 0o644); err != nil {
			return nil, fmt.Errorf("numeric: %w", err)
		}
		return out, nil
	}, func([]byte, error) bool { return false })
	return out, cached, err
}

// admitWorkload refuses, with kind resources, a workload whose parameters
// exceed Options.MaxIOBytes or whose reference program exceeds the bounds:
// before anything is allocated for it.
func (g *Gate) admitWorkload(f *ir.PrimFunc) error {
	var elems int64
	for _, b := range f.Params {
		elems += b.NumElements() // each at most 2^31-1 (kernels/workload)
	}
	if bytes := 4 * elems; bytes > g.opts.MaxIOBytes || elems < 0 {
		return &Error{Kind: KindResources, Msg: fmt.Sprintf("the workload's parameters hold %d float32 elements (%s), more than the gate's %s of inputs and outputs (numeric.Options.MaxIOBytes)", elems, byteSize(4*elems), byteSize(g.opts.MaxIOBytes))}
	}
	rc, err := cgen.ReferenceCost(f)
	if err != nil {
		return &Error{Kind: KindUnsupported, Msg: err.Error()}
	}
	return g.admit("reference", rc)
}

// admit refuses, with kind resources, a program whose cost exceeds the
// gate's bounds.
func (g *Gate) admit(what string, c cgen.Cost) error {
	if c.Steps > g.opts.MaxSteps {
		return &Error{Kind: KindResources, Msg: fmt.Sprintf("the %s program would execute %s steps (trip counts x threads x grid size), more than the gate's %.3g (numeric.Options.MaxSteps)", what, steps(c.Steps), float64(g.opts.MaxSteps))}
	}
	if c.Bytes > g.opts.MaxMemory {
		bound := "up to " + byteSize(c.Bytes)
		if c.Bytes == math.MaxInt64 {
			bound = byteSize(c.Bytes)
		}
		return &Error{Kind: KindResources, Msg: fmt.Sprintf("the %s program would allocate %s, more than the gate's %s (numeric.Options.MaxMemory)", what, bound, byteSize(g.opts.MaxMemory))}
	}
	return nil
}

// steps formats a bound on steps ("up to 1.2e+10"), byteSize a bound on
// bytes; both say so when the bound saturated (cgen.Cost).
func steps(n int64) string {
	if n == math.MaxInt64 {
		return "more than 9.2e18 (the count overflows)"
	}
	return fmt.Sprintf("up to %.3g", float64(n))
}

func byteSize(n int64) string {
	switch {
	case n == math.MaxInt64:
		return "more than 8 EiB (the count overflows)"
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// InputBytes returns the inputs the gate gives f for seed: the parameters
// f does not write (cgen.Outputs), seeded random float32 values in [-1, 1)
// (interp.RandomArgs), in parameter order, native byte order. The CUDA
// harness (kernels/cudabench) feeds a GPU the same inputs.
func InputBytes(f *ir.PrimFunc, seed uint64) []byte {
	return inputBytes(f, cgen.Outputs(f), seed)
}

// inputBytes returns the inputs of f (the parameters not written), seeded
// random float32 values, in parameter order, native byte order.
func inputBytes(f *ir.PrimFunc, outputs []bool, seed uint64) []byte {
	args := interp.RandomArgs(f, seed)
	n := 0
	for i, a := range args {
		if !outputs[i] {
			n += 4 * len(a)
		}
	}
	out := make([]byte, 0, n)
	for i, a := range args {
		if outputs[i] {
			continue
		}
		for _, v := range a {
			out = binary.NativeEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// locate turns an element index of the concatenated outputs into a buffer
// name and an index in it.
func locate(names []string, sizes []int64, e int64) (string, int64) {
	for i, n := range sizes {
		if e < n {
			return names[i], e
		}
		e -= n
	}
	return "?", e
}
