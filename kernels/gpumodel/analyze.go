package gpumodel

import (
	"context"
	"fmt"
	"slices"

	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
)

// Analysis is what the model reads from a lowered program, independent of
// the device and of the free constants: counts per thread and per warp
// request, derived once (Analyze) and costed by Model.Cost as often as a
// calibration needs.
type Analysis struct {
	Program string
	Kernels []KernelAnalysis
}

// KernelAnalysis holds one kernel's counts.
type KernelAnalysis struct {
	Name        string
	Grid, Block [3]int64
	// Blocks is the grid's size, Threads the block's.
	Blocks, Threads int64
	// SharedBytes per block (as allocated: a buffer that guarded stores
	// fill sized to the guard), LocalBytes per thread.
	SharedBytes, LocalBytes int64
	// LocalWords is the 32-bit registers the local buffers need: the
	// elements their stores reach, for the buffers only unrolled loops
	// index (others live in local memory); StageWords the registers of
	// the operands an update loads across its unrolled loops (the most of
	// any store).
	LocalWords int64
	StageWords float64
	// LocalMemBytes is the bytes per thread of the local buffers that live
	// in local memory (indexed by a loop that is not unrolled: registers
	// are not addressable), LocalMemAccesses their loads and stores per
	// thread (each a warp request of 32 interleaved words, through L1);
	// RegAccesses the loads and stores per thread of the local buffers
	// held in registers (free, unless registers spill: then the spilled
	// share of them goes to local memory).
	LocalMemBytes                 int64
	LocalMemAccesses, RegAccesses float64
	// MaxVectorBytes is the widest vector access.
	MaxVectorBytes int64
	// Per thread: FLOPs, FP instruction issues (an FMA is one),
	// transcendental calls, load/store instructions (global and shared,
	// a vector access is one), loop-overhead iterations (iterations of
	// loops that are not unrolled), barriers.
	FLOPs, FPInstr, SFUCalls, LSInstr, LoopIters, Barriers float64
	// Per thread: global memory sectors (32 B) requested by the thread's
	// warp, divided by the warp's threads (so that × threads × blocks is
	// the kernel's sector traffic); shared-memory wavefronts likewise.
	Sectors, Wavefronts float64
	// ILP is the independent FP instructions per thread (unrolled
	// accumulators), weighted by FP instructions; MemILP the independent
	// global requests per thread, weighted by requests; BytesPerRequest
	// the mean bytes a warp's global request moves.
	ILP, MemILP, BytesPerRequest float64
	// Footprint is the bytes of the global buffers the kernel touches.
	Footprint float64
}

// Analyze reads the counts of every kernel of p. It fails on a loop whose
// extent is not a constant (a dynamic loop, which VerifyGPUCode rejects).
func Analyze(ctx context.Context, p *lower.Program) (*Analysis, error) {
	if p == nil {
		return nil, fmt.Errorf("gpumodel: no program")
	}
	a := &Analysis{Program: p.Name, Kernels: make([]KernelAnalysis, 0, len(p.Kernels))}
	w := walker{
		steps: make([]int64, 0, 64), loops: make([]frame, 0, 16), bufs: make([]*ir.Buffer, 0, 8),
		scopes: make([]scopeOf, 0, 8), vars: make([]*ir.Var, 0, 32), locals: make([]localUse, 0, 4), vt: make([]frame, 0, 4),
		terms: make([]laneTerm, 0, 16), prog: make([]instr, 0, 128), storeVars: make([]*ir.Var, 0, 16),
	}
	for _, k := range p.Kernels {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("gpumodel: %w", err)
		}
		ka, err := w.kernel(k)
		if err != nil {
			return nil, fmt.Errorf("gpumodel: kernel %s: %w", k.Name, err)
		}
		a.Kernels = append(a.Kernels, ka)
	}
	return a, nil
}

// frame is an enclosing loop.
type frame struct {
	v        *ir.Var
	extent   int64
	unrolled bool
	vector   bool
	// vthread marks a vthread loop: TVM's InjectVirtualThread runs the
	// statements that do not use its variable once and interleaves V
	// copies of those that do, innermost (see vthreads).
	vthread bool
	// byCompiler marks a loop only nvcc unrolls (no pragma, beyond TVM's
	// auto_unroll_max_step).
	byCompiler bool
}

// walker walks a kernel body; its slices are reused across kernels.
type walker struct {
	k         *lower.Kernel
	ka        *KernelAnalysis
	lanes     int64
	steps     []int64 // subtree steps of each loop, in pre-order
	next      int     // pre-order index of the next loop
	loops     []frame
	bufs      []*ir.Buffer // global buffers touched
	scopes    []scopeOf    // shared/local allocations of the kernel
	ilpW      float64      // Σ FP instr × ILP
	memW      float64      // Σ requests × ILP
	reqs      float64      // Σ global requests
	secReq    float64      // Σ global requests × their sectors
	addr      [64]int64    // scratch for lane addresses
	vars      []*ir.Var    // the variables of varsIdx
	varsIdx   ir.Expr
	storeVars []*ir.Var // the variables of the store being walked
	vt        []frame   // the vthread loops the store being walked uses
	guards    []ir.Expr // the conditions of the Ifs around the statement
	reach     []sharedReach
	locals    []localUse   // registers of the local buffers
	terms     []laneTerm   // scratch: the lane-dependent terms of an index
	prog      []instr      // scratch: their compiled code
	interp    bool         // the terms did not compile: evaluate them
	coords    [32][3]int64 // thread indices of warp 0's lanes
	stack     [][32]int64  // runLanes's stack
	// The index prepare last split (for the same vector variable).
	pIdx ir.Expr
	pVec *ir.Var
	pC   int64
	pOK  bool
}

// sharedReach is the elements of a shared buffer its stores reach when
// every store is guarded by index < bound (a fetch loop with a remainder);
// bounded is false once a store is not.
type sharedReach struct {
	b       *ir.Buffer
	n       int64
	bounded bool
}

type localUse struct {
	b        *ir.Buffer
	words    int64
	memory   bool    // in local memory, not registers
	accesses float64 // loads and stores per thread
}

type scopeOf struct {
	b     *ir.Buffer
	scope lower.Scope
}

func (w *walker) kernel(k *lower.Kernel) (KernelAnalysis, error) {
	ka := KernelAnalysis{
		Name: k.Name, Grid: k.Grid, Block: k.Block,
		Blocks:      k.Grid[0] * k.Grid[1] * k.Grid[2],
		Threads:     k.Threads(),
		SharedBytes: k.SharedBytes(), LocalBytes: k.LocalBytes(),
	}
	if ka.Threads <= 0 || ka.Blocks <= 0 {
		return ka, fmt.Errorf("empty launch grid(%d, %d, %d) block(%d, %d, %d)", k.Grid[0], k.Grid[1], k.Grid[2], k.Block[0], k.Block[1], k.Block[2])
	}
	w.k, w.ka = k, &ka
	w.lanes = min(ka.Threads, 32)
	w.setCoords()
	w.pIdx, w.pVec, w.varsIdx = nil, nil, nil
	w.steps, w.next, w.loops, w.bufs = w.steps[:0], 0, w.loops[:0], w.bufs[:0]
	w.ilpW, w.memW, w.reqs, w.secReq = 0, 0, 0, 0
	w.scopes, w.locals, w.guards, w.reach = w.scopes[:0], w.locals[:0], w.guards[:0], w.reach[:0]
	for _, al := range k.Allocs {
		w.scopes = append(w.scopes, scopeOf{al.Flat, al.Scope})
	}
	if _, err := w.countSteps(k.Body); err != nil {
		return ka, err
	}
	w.stmts(k.Body, 1, k.UnrollMaxStep)
	if ka.FPInstr > 0 {
		ka.ILP = w.ilpW / ka.FPInstr
	} else {
		ka.ILP = 1
	}
	if w.reqs > 0 {
		ka.MemILP = w.memW / w.reqs
		ka.BytesPerRequest = w.secReq * 32 / w.reqs
	} else {
		ka.MemILP, ka.BytesPerRequest = 1, 0
	}
	for _, l := range w.locals {
		if l.memory {
			ka.LocalMemBytes += l.b.NumElements() * int64(l.b.DType().Bytes())
			ka.LocalMemAccesses += l.accesses
			ka.LSInstr += l.accesses
		} else {
			ka.LocalWords += l.words
			ka.RegAccesses += l.accesses
		}
	}
	for _, b := range w.bufs {
		ka.Footprint += float64(b.NumElements() * int64(b.DType().Bytes()))
	}
	// A shared buffer that only guarded stores fill is allocated to the
	// guard's bound (TVM compacts it with the predicate), not over the
	// whole fetch loop.
	for _, r := range w.reach {
		if !r.bounded {
			continue
		}
		for _, al := range k.Allocs {
			if al.Flat == r.b && al.Scope == lower.ScopeShared {
				if real := r.n * int64(r.b.DType().Bytes()); real < al.Bytes {
					ka.SharedBytes -= al.Bytes - real
				}
			}
		}
	}
	return ka, nil
}

// extentOf returns a loop's constant extent.
func extentOf(l *lower.Loop) (int64, error) {
	if c, ok := l.Extent.(*ir.IntImm); ok {
		return c.Value(), nil
	}
	if v, ok := ir.EvalInt(l.Extent, nil); ok {
		return v, nil
	}
	return 0, fmt.Errorf("loop %s has a dynamic extent %s", l.Var.Name(), ir.ExprString(l.Extent))
}

// countSteps records in w.steps the steps of every loop's subtree (TVM's
// unroll pass compares them with auto_unroll_max_step): extent × the
// steps of its body, a statement being one step.
func (w *walker) countSteps(body []lower.Stmt) (int64, error) {
	n := int64(0)
	for _, s := range body {
		switch s := s.(type) {
		case *lower.Loop:
			ext, err := extentOf(s)
			if err != nil {
				return 0, err
			}
			i := len(w.steps)
			w.steps = append(w.steps, 0)
			in, err := w.countSteps(s.Body)
			if err != nil {
				return 0, err
			}
			w.steps[i] = ext * max(in, 1)
			n += w.steps[i]
		case *lower.Block:
			in, err := w.countSteps(s.Body)
			if err != nil {
				return 0, err
			}
			n += in
		case *lower.If:
			t, err := w.countSteps(s.Then)
			if err != nil {
				return 0, err
			}
			e, err := w.countSteps(s.Else)
			if err != nil {
				return 0, err
			}
			n += max(t, e)
		default:
			n++
		}
	}
	return n, nil
}

// stmts walks body, run mult times per thread, under the auto-unroll
// limit maxStep.
func (w *walker) stmts(body []lower.Stmt, mult float64, maxStep int64) {
	for _, s := range body {
		switch s := s.(type) {
		case *lower.Loop:
			ext, _ := extentOf(s) // checked by countSteps
			steps := w.steps[w.next]
			w.next++
			ms := maxStep
			if s.UnrollMaxStep > 0 {
				ms = s.UnrollMaxStep
			}
			// Unrolled by its kind, by TVM's unroll pass, or by nvcc.
			unrolled := s.Kind != lower.Serial || steps <= ms
			byCompiler := !unrolled && steps <= nvccUnrollSteps
			unrolled = unrolled || byCompiler
			if !unrolled && ext > 1 {
				w.ka.LoopIters += mult * float64(ext)
			}
			vt := s.Kind == lower.VThread
			w.loops = append(w.loops, frame{v: s.Var, extent: ext, unrolled: unrolled, vector: s.Kind == lower.Vectorized, vthread: vt, byCompiler: byCompiler})
			if vt {
				w.stmts(s.Body, mult, ms) // each statement multiplies by the vthreads it uses
			} else {
				w.stmts(s.Body, mult*float64(ext), ms)
			}
			w.loops = w.loops[:len(w.loops)-1]
		case *lower.Block:
			w.stmts(s.Body, mult, maxStep)
		case *lower.If:
			m := mult
			if s.Init {
				// The init runs once per point of the loops its condition
				// names (the reduce loops at their start).
				w.varsOf(s.Cond)
				for _, f := range w.loops {
					if slices.Contains(w.vars, f.v) && f.extent > 0 {
						m /= float64(f.extent)
					}
				}
			}
			if !s.Init {
				w.guards = append(w.guards, s.Cond)
			}
			w.stmts(s.Then, m, maxStep)
			if !s.Init {
				w.guards = w.guards[:len(w.guards)-1]
			}
			w.stmts(s.Else, m, maxStep)
		case *lower.Barrier:
			w.ka.Barriers += mult
		case *lower.Store:
			w.store(s, mult)
		}
	}
}

// varsOf returns the variables of idx (in w.vars; the last index's are
// kept, since ilp, reuse and mergeable ask for the same one in turn).
func (w *walker) varsOf(idx ir.Expr) []*ir.Var {
	if w.varsIdx != idx || idx == nil {
		w.vars = collectVars(idx, w.vars[:0])
		w.varsIdx = idx
	}
	return w.vars
}

// collectVars appends the variables of e to out.
func collectVars(e ir.Expr, out []*ir.Var) []*ir.Var {
	switch x := e.(type) {
	case *ir.Var:
		return append(out, x)
	case *ir.Binary:
		return collectVars(x.B(), collectVars(x.A(), out))
	case *ir.Not:
		return collectVars(x.A(), out)
	case *ir.Select:
		return collectVars(x.False(), collectVars(x.True(), collectVars(x.Cond(), out)))
	case *ir.Cast:
		return collectVars(x.A(), out)
	case *ir.Call:
		for _, a := range x.Args() {
			out = collectVars(a, out)
		}
	case *ir.BufferLoad:
		for _, i := range x.Indices() {
			out = collectVars(i, out)
		}
	}
	return out
}

// vectorLoop returns the innermost enclosing vectorized loop (nil, 1 when
// none).
func (w *walker) vectorLoop() (*ir.Var, int64) {
	if n := len(w.loops); n > 0 && w.loops[n-1].vector {
		return w.loops[n-1].v, w.loops[n-1].extent
	}
	return nil, 1
}

// ilp returns the independent instances of an access or update with
// index idx: the product of the extents of the unrolled loops around it
// (innermost first, up to the first loop that is not unrolled) whose
// variable the index uses.
func (w *walker) ilp(idx ir.Expr) float64 {
	w.varsOf(idx)
	n := 1.0
	for i := len(w.loops) - 1; i >= 0; i-- {
		f := w.loops[i]
		if f.extent <= 1 || f.vthread {
			continue
		}
		if !f.unrolled {
			break
		}
		if slices.Contains(w.vars, f.v) {
			n *= float64(f.extent)
		}
	}
	// The vthread copies of the store are interleaved innermost.
	for _, f := range w.vt {
		n *= w.distinct(idx, f)
	}
	return n
}

// reuse returns how many times the unrolled loops around a load (up to
// the first loop that is not unrolled) repeat the same address: the
// product of the extents of those whose variable the index does not use.
// The compiler loads it once into a register (§6: shared loads per FMA ≈
// (a+b)/(a·b) for an a×b register tile).
func (w *walker) reuse(idx ir.Expr) float64 {
	w.varsOf(idx)
	n := 1.0
	for i := len(w.loops) - 1; i >= 0; i-- {
		f := w.loops[i]
		if f.extent <= 1 || f.vector || f.vthread {
			continue
		}
		if !f.unrolled {
			break
		}
		if !slices.Contains(w.vars, f.v) {
			n *= float64(f.extent)
		}
	}
	// The vthread copies of a store read an address they share once
	// (the compiler eliminates the common loads).
	for _, f := range w.vt {
		n *= float64(f.extent) / w.distinct(idx, f)
	}
	return n
}

// mergeable returns the innermost unrolled loop whose variable idx uses,
// with the width of the vector load the compiler can merge its
// iterations into (LDS.64/128: consecutive elements, up to 16 bytes, a
// power of two dividing the extent); width 1 when none.
func (w *walker) mergeable(idx ir.Expr, elem int64) (*ir.Var, int64) {
	w.varsOf(idx)
	for i := len(w.loops) - 1; i >= 0; i-- {
		f := w.loops[i]
		if f.extent <= 1 || f.vthread {
			continue
		}
		if !f.unrolled || f.vector {
			return nil, 1
		}
		if !slices.Contains(w.vars, f.v) {
			continue
		}
		e := w.env(f.v)
		a0, ok0 := e.eval(idx)
		e.v = 1
		a1, ok1 := e.eval(idx)
		if !ok0 || !ok1 || a1-a0 != 1 {
			continue
		}
		width := int64(1)
		for width*2*elem <= 16 && f.extent%(width*2) == 0 {
			width *= 2
		}
		return f.v, width
	}
	return nil, 1
}

func (w *walker) scope(b *ir.Buffer) lower.Scope {
	for _, s := range w.scopes {
		if s.b == b {
			return s.scope
		}
	}
	switch b.Scope() {
	case "shared", "shared.dyn":
		return lower.ScopeShared
	case "local":
		return lower.ScopeLocal
	}
	return lower.ScopeGlobal
}

// store counts a store run mult times per thread.
func (w *walker) store(s *lower.Store, mult float64) {
	mult *= w.vthreads(s)
	vv, ve := w.vectorLoop()
	req := mult / float64(ve) // one request per vector
	fp, flops, sfu := exprOps(s.Value)
	if fma(s) {
		fp-- // the multiply-add is one instruction
	}
	ka := w.ka
	ka.FPInstr += mult * fp
	ka.FLOPs += mult * flops
	ka.SFUCalls += mult * sfu
	if fp > 0 {
		w.ilpW += mult * fp * w.ilp(s.Index)
	}
	switch w.scope(s.Buffer) {
	case lower.ScopeLocal:
		w.localWords(s)
		// The operands an update of a register tile holds (a copy into
		// shared or global memory, even unrolled, keeps a value only
		// from its load to its store).
		w.storeVars = collectVars(s.Index, w.storeVars[:0])
		ka.StageWords = max(ka.StageWords, w.staging(s.Value))
	case lower.ScopeShared:
		w.sharedReach(s)
	}
	w.access(s.Buffer, s.Index, req, vv, ve)
	w.loads(s.Value, req, vv, ve)
}

// nvccUnrollSteps is the most steps (statements × iterations, as
// countSteps counts them) of a constant-trip loop nest that nvcc unrolls
// fully by itself, without a pragma. LLVM's full-unroll threshold is 300
// IR instructions at -O3, raised up to 4x (unroll-max-percent-threshold-
// boost) when unrolling simplifies the body, as it does when an array's
// indices become constants and it moves to registers: ~1200 instructions,
// ~4-5 per statement. On the A10 timings (docs/gpu-model.md) 256 ranks
// best of 32, 128, 256, 512, 1024; 128-1024 differ little.
const nvccUnrollSteps = 256

// nvccArrayWords is the most words of a local array that nvcc's own
// unrolling keeps in registers; a larger one, indexed by a loop only nvcc
// would unroll, stays in local memory (nvcc does not unroll a loop whose
// unrolled body would hold that many live values). Against ptxas
// (TestRegisterEstimate: C2D, GMM, CBR kernels with arrays of hundreds
// of words get ptxas's 56-92 registers, not 255); on the A10 timings any
// cap from 64 to 256 ranks the same.
const nvccArrayWords = 64

// vthreads returns the copies of a store that the vthread loops around it
// make: the product of the extents of those whose variable its index or
// value uses (TVM's InjectVirtualThread duplicates only those; a store
// that uses none, e.g. a cooperative fetch into shared memory, runs
// once per thread). It records them in w.vt for ilp, reuse and held.
func (w *walker) vthreads(s *lower.Store) float64 {
	w.vt = w.vt[:0]
	n := 1.0
	for _, f := range w.loops {
		if !f.vthread || f.extent <= 1 {
			continue
		}
		if usesVar(s.Index, f.v) || usesVar(s.Value, f.v) {
			w.vt = append(w.vt, f)
			n *= float64(f.extent)
		}
	}
	return n
}

// distinct returns how many distinct values idx takes over the vthread
// loop f (the other variables fixed): a fused vthread's copies share the
// addresses of the part of the fusion an index does not use.
func (w *walker) distinct(idx ir.Expr, f frame) float64 {
	if !usesVar(idx, f.v) {
		return 1
	}
	e := laneEnv{vec: f.v}
	var seen [64]int64
	n := 0
	for v := range min(f.extent, int64(len(seen))) {
		e.v = v
		x, ok := e.eval(idx)
		if !ok {
			return float64(f.extent)
		}
		if !slices.Contains(seen[:n], x) {
			seen[n] = x
			n++
		}
	}
	if f.extent > int64(len(seen)) {
		return float64(n) * float64(f.extent) / float64(len(seen))
	}
	return float64(n)
}

// usesVar reports whether e uses v.
func usesVar(e ir.Expr, v *ir.Var) bool {
	switch x := e.(type) {
	case *ir.Var:
		return x == v
	case *ir.Binary:
		return usesVar(x.A(), v) || usesVar(x.B(), v)
	case *ir.Not:
		return usesVar(x.A(), v)
	case *ir.Select:
		return usesVar(x.Cond(), v) || usesVar(x.True(), v) || usesVar(x.False(), v)
	case *ir.Cast:
		return usesVar(x.A(), v)
	case *ir.Call:
		return slices.ContainsFunc(x.Args(), func(a ir.Expr) bool { return usesVar(a, v) })
	case *ir.BufferLoad:
		return slices.ContainsFunc(x.Indices(), func(a ir.Expr) bool { return usesVar(a, v) })
	}
	return false
}

// localWords records the registers of a local buffer: the elements its
// stores reach over the loops around them (the lowered local buffer may
// be compacted over more, e.g. across vthreads), at most its size.
//
// An array indexed by a loop that is not unrolled (by its kind, TVM's
// unroll pass or nvcc: see stmts) cannot live in registers (they are not
// addressable): the compiler puts the whole buffer in local memory, and
// it counts no register.
func (w *walker) localWords(s *lower.Store) {
	w.varsOf(s.Index)
	n := int64(1)
	inRegs, byCompiler := true, false
	for _, f := range w.loops {
		if slices.Contains(w.vars, f.v) {
			n *= max(f.extent, 1)
			if !f.unrolled && f.extent > 1 {
				inRegs = false
			}
			byCompiler = byCompiler || f.byCompiler
		}
	}
	n = min(n, s.Buffer.NumElements())
	words := (n*int64(s.Buffer.DType().Bytes()) + 3) / 4
	if byCompiler && words > nvccArrayWords {
		inRegs = false
	}
	l := w.local(s.Buffer)
	l.words = max(l.words, words)
	l.memory = l.memory || !inRegs
}

// sharedReach records the elements a shared store reaches: the bound C
// of an enclosing guard index < C on the store's own index, or the whole
// buffer.
func (w *walker) sharedReach(s *lower.Store) {
	n, bounded := s.Buffer.NumElements(), false
	for _, g := range w.guards {
		if b, ok := g.(*ir.Binary); ok && b.Op() == ir.OpLT {
			if c, ok := b.B().(*ir.IntImm); ok && c.Value() < n && ir.EqualExpr(b.A(), s.Index) {
				n, bounded = c.Value(), true
			}
		}
	}
	for i := range w.reach {
		if w.reach[i].b == s.Buffer {
			w.reach[i].n = max(w.reach[i].n, n)
			w.reach[i].bounded = w.reach[i].bounded && bounded
			return
		}
	}
	w.reach = append(w.reach, sharedReach{s.Buffer, n, bounded})
}

// local returns the record of a local buffer, adding it.
func (w *walker) local(b *ir.Buffer) *localUse {
	for i := range w.locals {
		if w.locals[i].b == b {
			return &w.locals[i]
		}
	}
	w.locals = append(w.locals, localUse{b: b})
	return &w.locals[len(w.locals)-1]
}

// held returns the registers a load's values take across the unrolled
// loops around an update: the product of the extents of those (innermost
// first, up to the first loop that is not unrolled) that both the load's
// index and the update's index use: the operand tile held while the
// update's register tile is computed (a×b accumulators take a+b
// operands); a loop only the load uses (a reduction) reuses its
// registers from one iteration to the next.
func (w *walker) held(idx ir.Expr) float64 {
	w.varsOf(idx)
	n := 1.0
	for i := len(w.loops) - 1; i >= 0; i-- {
		f := w.loops[i]
		if f.extent <= 1 || f.vthread {
			continue
		}
		if !f.unrolled {
			break
		}
		if slices.Contains(w.vars, f.v) && slices.Contains(w.storeVars, f.v) {
			n *= float64(f.extent)
		}
	}
	for _, f := range w.vt {
		n *= w.distinct(idx, f)
	}
	return n
}

// staging returns the registers holding the operands of a store's value
// across the unrolled loops around it: for each load from shared or
// global memory, the registers it holds (held).
func (w *walker) staging(e ir.Expr) float64 {
	switch x := e.(type) {
	case *ir.BufferLoad:
		if len(x.Indices()) == 1 && w.scope(x.Buffer()) != lower.ScopeLocal {
			words := max(1, float64(x.Buffer().DType().Bytes())/4)
			return w.held(x.Indices()[0]) * words
		}
	case *ir.Binary:
		return w.staging(x.A()) + w.staging(x.B())
	case *ir.Not:
		return w.staging(x.A())
	case *ir.Select:
		return w.staging(x.Cond()) + w.staging(x.True()) + w.staging(x.False())
	case *ir.Cast:
		return w.staging(x.A())
	case *ir.Call:
		n := 0.0
		for _, a := range x.Args() {
			n += w.staging(a)
		}
		return n
	}
	return 0
}

// loads counts the loads of e.
func (w *walker) loads(e ir.Expr, req float64, vv *ir.Var, ve int64) {
	switch x := e.(type) {
	case *ir.BufferLoad:
		if len(x.Indices()) == 1 {
			idx := x.Indices()[0]
			r := req / w.reuse(idx)
			if vv == nil && w.scope(x.Buffer()) == lower.ScopeShared {
				// The compiler merges the loads of consecutive
				// elements of an unrolled loop into one vector load.
				if mv, width := w.mergeable(idx, int64(x.Buffer().DType().Bytes())); width > 1 {
					w.access(x.Buffer(), idx, r/float64(width), mv, width)
					return
				}
			}
			w.access(x.Buffer(), idx, r, vv, ve)
		}
	case *ir.Binary:
		w.loads(x.A(), req, vv, ve)
		w.loads(x.B(), req, vv, ve)
	case *ir.Not:
		w.loads(x.A(), req, vv, ve)
	case *ir.Select:
		w.loads(x.Cond(), req, vv, ve)
		w.loads(x.True(), req, vv, ve)
		w.loads(x.False(), req, vv, ve)
	case *ir.Cast:
		w.loads(x.A(), req, vv, ve)
	case *ir.Call:
		for _, a := range x.Args() {
			w.loads(a, req, vv, ve)
		}
	}
}

// access counts one access of buffer b at index idx, req requests per
// thread, vector var vv of ve lanes.
func (w *walker) access(b *ir.Buffer, idx ir.Expr, req float64, vv *ir.Var, ve int64) {
	sc := w.scope(b)
	if sc == lower.ScopeLocal {
		// Registers or local memory: decided when the walk ends.
		w.local(b).accesses += req
		return
	}
	elem := int64(b.DType().Bytes())
	if vb := ve * elem; vb > w.ka.MaxVectorBytes {
		w.ka.MaxVectorBytes = vb
	}
	w.ka.LSInstr += req
	perThread := req / float64(w.lanes)
	switch sc {
	case lower.ScopeShared:
		w.ka.Wavefronts += perThread * float64(w.wavefronts(idx, elem, vv, ve))
	default:
		sectors := float64(w.sectors(idx, elem, vv, ve))
		w.ka.Sectors += perThread * sectors
		w.reqs += req
		w.secReq += req * sectors
		w.memW += req * w.ilp(idx)
		if !slices.Contains(w.bufs, b) {
			w.bufs = append(w.bufs, b)
		}
	}
}
