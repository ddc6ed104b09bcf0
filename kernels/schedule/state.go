package schedule

import (
	"fmt"
	"slices"
	"strconv"

	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// depKind is the kind of a dependency between two blocks of a scope
// (TVM's DepKind).
type depKind uint8

const (
	depRAW depKind = iota // the destination reads what the source wrote
	depWAW                // both write the same buffer
	depWAR                // the destination writes what the source read
)

type dependency struct {
	src, dst *ir.Block
	kind     depKind
}

// scopeInfo is TVM's BlockScope of a scope block: its child blocks (those
// directly under it, in program order), which of them write each buffer,
// and the dependencies between them, in the order TVM creates them.
type scopeInfo struct {
	root     *ir.Block
	children []*ir.BlockRealize
	writes   []bufferUse // each write region of a child, in program order
	deps     []dependency
}

// bufferUse is a block's access to a buffer. A scope has a few children
// with a few regions each, so lists searched linearly serve better than
// maps.
type bufferUse struct {
	buf *ir.Buffer
	blk *ir.Block
}

func newScopeInfo(root *ir.Block) *scopeInfo {
	sc := &scopeInfo{root: root, children: childRealizes(root)}
	nr, nw := 0, 0
	for _, r := range sc.children {
		nr += len(r.Block.Reads)
		nw += len(r.Block.Writes)
	}
	reads := make([]bufferUse, 0, nr)
	sc.writes = make([]bufferUse, 0, nw)
	// Room for as many dependencies as regions: one writer per buffer
	// read, as a rule, so that the list seldom regrows.
	sc.deps = make([]dependency, 0, nr+nw)
	add := func(src, dst *ir.Block, k depKind) {
		if src != dst {
			sc.deps = append(sc.deps, dependency{src, dst, k})
		}
	}
	for _, r := range sc.children {
		b := r.Block
		for _, rg := range b.Reads {
			reads = append(reads, bufferUse{rg.Buffer, b})
		}
		for _, rg := range b.Writes {
			sc.writes = append(sc.writes, bufferUse{rg.Buffer, b})
		}
		for _, rg := range b.Reads {
			for _, w := range sc.writes {
				if w.buf == rg.Buffer {
					add(w.blk, b, depRAW)
				}
			}
		}
		for _, rg := range b.Writes {
			for _, w := range sc.writes {
				if w.buf == rg.Buffer {
					add(w.blk, b, depWAW)
				}
			}
		}
		for _, rg := range b.Writes {
			for _, u := range reads {
				if u.buf == rg.Buffer {
					add(u.blk, b, depWAR)
				}
			}
		}
	}
	return sc
}

// writers returns the blocks that write buf, once per write region, in
// program order.
func (sc *scopeInfo) writers(buf *ir.Buffer) []*ir.Block {
	var out []*ir.Block
	for _, w := range sc.writes {
		if w.buf == buf {
			out = append(out, w.blk)
		}
	}
	return out
}

// numWriters returns the number of write regions of buf in the scope.
func (sc *scopeInfo) numWriters(buf *ir.Buffer) int {
	n := 0
	for _, w := range sc.writes {
		if w.buf == buf {
			n++
		}
	}
	return n
}

// producers returns the blocks b depends on through RAW or WAW
// dependencies, in TVM's order (GetProducers).
func (sc *scopeInfo) producers(b *ir.Block) []*ir.Block {
	var out []*ir.Block
	for _, d := range sc.deps {
		if d.dst == b && (d.kind == depRAW || d.kind == depWAW) && !slices.Contains(out, d.src) {
			out = append(out, d.src)
		}
	}
	return out
}

// consumers returns the blocks depending on b through RAW or WAW
// dependencies (GetConsumers).
func (sc *scopeInfo) consumers(b *ir.Block) []*ir.Block {
	var out []*ir.Block
	for _, d := range sc.deps {
		if d.src == b && (d.kind == depRAW || d.kind == depWAW) && !slices.Contains(out, d.dst) {
			out = append(out, d.dst)
		}
	}
	return out
}

// stagePipelineProblem returns why the scope is not a stage pipeline, or
// "" when it is: TVM requires that no child block overwrites a buffer an
// earlier child block reads (a write-after-read dependency).
func (sc *scopeInfo) stagePipelineProblem() string {
	for _, d := range sc.deps {
		if d.kind == depWAR {
			return fmt.Sprintf("block %q writes a buffer that the earlier block %q reads (a write-after-read dependency)", d.dst.Name, d.src.Name)
		}
	}
	return ""
}

func (sc *scopeInfo) realizeOf(b *ir.Block) *ir.BlockRealize {
	for _, r := range sc.children {
		if r.Block == b {
			return r
		}
	}
	return nil
}

// isDominant reports whether b is the only writer, in the scope, of every
// buffer it writes.
func (sc *scopeInfo) isDominant(b *ir.Block) bool {
	for _, w := range b.Writes {
		if sc.numWriters(w.Buffer) > 1 {
			return false
		}
	}
	return true
}

// The definitions TVM's messages quote.
const (
	completeBlockDefinition = `a complete block (1) has only data-parallel iter vars, ` +
		`(2) is the only writer of its outputs, and (3) does not read the buffers it writes`
	reductionBlockDefinition = `a reduction block (1) has an init statement, ` +
		`(2) has affine bindings, (3) has only data-parallel and reduction iter vars, ` +
		`(4) is the only writer of its outputs, and (5) does not index its outputs with reduction iter vars`
)

// completeProblem returns the number of the first complete-block
// condition b violates (TVM's CheckCompleteBlockErrorCode), 0 if none.
// dominant tells whether b is the only writer of its outputs.
func completeProblem(b *ir.Block, dominant bool) int {
	for _, iv := range b.IterVars {
		if iv.Kind != ir.Spatial {
			return 1
		}
	}
	if !dominant {
		return 2
	}
	for _, w := range b.Writes {
		for _, r := range b.Reads {
			if r.Buffer == w.Buffer {
				return 3
			}
		}
	}
	return 0
}

// reductionProblem returns the first reduction-block condition b violates
// (TVM's CheckReductionBlockErrorCode), 0 if none.
func (s *Schedule) reductionProblem(b *ir.Block, r *ir.BlockRealize, loops []*ir.For, dominant bool) int {
	if b.Init == nil {
		return 1
	}
	if s.affineBindingProblem(r, loops, 0) != nil {
		return 2
	}
	for _, iv := range b.IterVars {
		if iv.Kind != ir.Spatial && iv.Kind != ir.Reduce {
			return 3
		}
	}
	if !dominant {
		return 4
	}
	if reduceVarIndexesOutput(b) {
		return 5
	}
	return 0
}

// reduceVarIndexesOutput reports whether a reduction iter var of b appears
// in the indices of a store to one of the buffers b writes.
func reduceVarIndexesOutput(b *ir.Block) bool {
	reduce := map[*ir.Var]bool{}
	for _, iv := range b.IterVars {
		if iv.Kind == ir.Reduce {
			reduce[iv.Var] = true
		}
	}
	isReduce := func(v *ir.Var) bool { return reduce[v] }
	found := false
	check := func(s ir.Stmt) {
		ir.WalkStmt(s, func(x ir.Stmt) bool {
			if st, ok := x.(*ir.BufferStore); ok {
				for _, e := range st.Indices {
					if ir.UsesVar(e, isReduce) {
						found = true
					}
				}
			}
			return true
		})
	}
	check(b.Body)
	check(b.Init)
	return found
}

// affineBindingProblem checks that r's bindings are affine in loops, the
// loops between r and its scope block, outermost first (TVM's
// IsAffineBlockBinding). With partial > 0 they may instead be affine in
// loops[partial:] alone, the outer loops then being fixed: TVM's
// CheckPartialAffineBinding under loops[partial].
//
// The check is TVM's (arith.AffineBinding: DetectIterMap at the surjective
// level and unit scales) wherever the iter map rewriter covers the
// bindings. Where it does not (padding, symbolic extents, other
// predicates), a binding is accepted when it is quasi-affine: a sum of
// constant multiples of loop variables, outer variables, and floordiv or
// floormod by positive constants of such sums (TVM accepts some of these,
// with padding, and refuses others); otherwise it must pass
// arith.CheckAffineBinding. Products of variables and loads are refused.
func (s *Schedule) affineBindingProblem(r *ir.BlockRealize, loops []*ir.For, partial int) error {
	if r == nil || len(r.IterValues) == 0 {
		return nil
	}
	la := s.analyzer()
	defer s.release(la)
	decided, err := tvmAffineBinding(la.Analyzer, r, loops)
	if decided && err == nil {
		return nil
	}
	if partial > 0 && partial < len(loops) {
		d, perr := tvmAffineBinding(la.Analyzer, r, loops[partial:])
		if d && perr == nil {
			return nil
		}
		decided = decided && d
	}
	if decided {
		return err
	}
	quasi := true
	for _, v := range r.IterValues {
		if !quasiAffine(v) {
			quasi = false
			break
		}
	}
	if quasi {
		return nil
	}
	for _, l := range loops {
		la.trackLoop(l)
	}
	return la.CheckAffineBinding(r.IterValues)
}

// tvmAffineBinding runs arith.AffineBinding on r's bindings with loops as
// the iterators; undecided (false) when a loop's extent is not a constant.
func tvmAffineBinding(a *arith.Analyzer, r *ir.BlockRealize, loops []*ir.For) (decided bool, err error) {
	iters := make([]arith.LoopIter, len(loops))
	for i, l := range loops {
		n, ok := l.ConstExtent()
		if !ok {
			return false, nil
		}
		iters[i] = arith.LoopIter{Var: l.Var, Extent: n}
	}
	var pred ir.Expr
	if !ir.IsTrue(r.Predicate) {
		pred = r.Predicate
	}
	return a.AffineBinding(r.IterValues, iters, pred)
}

// quasiAffine reports whether e is built from variables and integer
// constants with +, -, multiplication by a constant, and floordiv or
// floormod by a positive constant.
func quasiAffine(e ir.Expr) bool {
	switch x := e.(type) {
	case *ir.IntImm, *ir.Var:
		return true
	case *ir.Binary:
		switch x.Op() {
		case ir.OpAdd, ir.OpSub:
			return quasiAffine(x.A()) && quasiAffine(x.B())
		case ir.OpMul:
			_, ca := ir.IsConstInt(x.A())
			_, cb := ir.IsConstInt(x.B())
			return ca && quasiAffine(x.B()) || cb && quasiAffine(x.A())
		case ir.OpFloorDiv, ir.OpFloorMod:
			c, ok := ir.IsConstInt(x.B())
			return ok && c > 0 && quasiAffine(x.A())
		}
	}
	return false
}

// uniqueBlockName returns name, or name_1, name_2, ... when a block of f
// already has it. TVM lets two cache stages of buffers with the same name
// share a block name; dragonx's IR requires unique block names, so the
// later one gets a suffix.
func uniqueBlockName(f *ir.PrimFunc, name string) string {
	taken := map[string]bool{}
	ir.WalkStmt(f.Body, func(x ir.Stmt) bool {
		if b, ok := x.(*ir.Block); ok {
			taken[b.Name] = true
		}
		return true
	})
	if !taken[name] {
		return name
	}
	for i := 1; ; i++ {
		n := name + "_" + strconv.Itoa(i)
		if !taken[n] {
			return n
		}
	}
}

// isOutputBlock reports whether b writes a buffer that its scope does not
// allocate (a function parameter, or a buffer of an outer scope).
func isOutputBlock(scope *ir.Block, b *ir.Block) bool {
	for _, w := range b.Writes {
		if !slices.Contains(scope.AllocBuffers, w.Buffer) {
			return true
		}
	}
	return false
}

// blockLoopsAndRealize returns the loops between b and its scope, and its
// realize.
func (s *Schedule) blockContext(prim string, rv BlockRV) (*ir.Block, blockPath, error) {
	b := s.blockOf(rv)
	if b == nil {
		return nil, blockPath{}, s.errorf(prim, "unknown block random variable")
	}
	bp, ok := s.locateBlock(b)
	if !ok {
		return nil, blockPath{}, s.staleBlock(prim, rv, b)
	}
	return b, bp, nil
}

// loopContext resolves a loop and where it is.
func (s *Schedule) loopContext(prim string, rv LoopRV) (*ir.For, loopPath, error) {
	if rv.IsRoot() || rv.IsInline() {
		return nil, loopPath{}, s.errorf(prim, "expected a loop, got the %s marker", s.describe(rv))
	}
	l := s.loopOf(rv)
	if l == nil {
		return nil, loopPath{}, s.errorf(prim, "unknown loop random variable")
	}
	lp, ok := s.locateLoop(l)
	if !ok {
		return nil, loopPath{}, s.staleLoop(prim, rv, l)
	}
	return l, lp, nil
}

// scopeOf returns the scope information of b's scope block; it is an
// error for the root block, which has no scope.
func (s *Schedule) scopeOf(prim string, rv BlockRV, b *ir.Block, bp blockPath) (*scopeInfo, error) {
	if bp.scope == nil {
		return nil, s.errorf(prim, "%v is the root block, which the primitive does not operate on", rv)
	}
	return newScopeInfo(bp.scope), nil
}

// requireStagePipeline fails when the scope is not a stage pipeline: a
// child block overwrites what an earlier one reads (checked on the
// function as it is), or the region cover property does not hold (checked
// as TVM does, on the function the schedule started from: see
// regionCoverProblem).
func (s *Schedule) requireStagePipeline(prim string, sc *scopeInfo) error {
	p := sc.stagePipelineProblem()
	if p == "" {
		p = s.regionCoverProblem(sc.root.Name)
	}
	if p != "" {
		return s.errorf(prim, "the scope block %q is not a stage pipeline: %s", sc.root.Name, p)
	}
	return nil
}

// requireComplete fails unless b is a complete block of its scope.
func (s *Schedule) requireComplete(prim string, rv BlockRV, b *ir.Block, sc *scopeInfo) error {
	if c := completeProblem(b, sc.isDominant(b)); c != 0 {
		return s.errorf(prim, "%v is not a complete block: it violates condition %d (%s)", rv, c, completeBlockDefinition)
	}
	return nil
}

// requireCompleteOrReduction fails unless b is a complete or a reduction
// block of its scope.
func (s *Schedule) requireCompleteOrReduction(prim string, rv BlockRV, b *ir.Block, bp blockPath, sc *scopeInfo) error {
	dom := sc.isDominant(b)
	c := completeProblem(b, dom)
	if c == 0 {
		return nil
	}
	r := s.reductionProblem(b, bp.realize, bp.loops, dom)
	if r == 0 {
		return nil
	}
	return s.errorf(prim, "%v is neither a complete block (it violates condition %d: %s) nor a reduction block (it violates condition %d: %s)",
		rv, c, completeBlockDefinition, r, reductionBlockDefinition)
}

// requireNotOutput fails when b writes a buffer its scope does not
// allocate.
func (s *Schedule) requireNotOutput(prim string, rv BlockRV, b *ir.Block, sc *scopeInfo) error {
	if isOutputBlock(sc.root, b) {
		return s.errorf(prim, "%v is an output block: it writes %s, which its scope does not allocate", rv, outputBufferName(sc.root, b))
	}
	return nil
}

func outputBufferName(scope, b *ir.Block) string {
	for _, w := range b.Writes {
		if !slices.Contains(scope.AllocBuffers, w.Buffer) {
			return w.Buffer.Name()
		}
	}
	return "?"
}

// validScopes are the storage scopes the primitives accept.
var validScopes = map[string]bool{
	"global": true, "shared": true, "shared.dyn": true, "local": true, "warp": true,
}

func (s *Schedule) checkStorageScope(prim, scope string) error {
	if !validScopes[scope] {
		return s.errorf(prim, "invalid storage scope %q (want global, shared, shared.dyn, local or warp)", scope)
	}
	return nil
}

// storageRank is TVM's StorageRank of a scope: global 0, shared 1, warp 2,
// local 3.
func storageRank(scope string) int {
	switch scope {
	case "shared", "shared.dyn":
		return 1
	case "warp":
		return 2
	case "local":
		return 3
	}
	return 0
}

// canRelaxUnderThread is TVM's CanRelaxStorageUnderThread: whether a
// buffer of the given scope is shared by the threads of a loop bound to
// tag, so that a region computed under that loop covers every thread.
func canRelaxUnderThread(scope, tag string) bool {
	rank := storageRank(scope)
	threadRank, dimIndex := threadScope(tag)
	if rank == 2 {
		return threadRank == 1 && dimIndex == 0
	}
	return rank <= threadRank
}

// threadScope is TVM's ThreadScope: blockIdx.* rank 0, threadIdx.* rank 1,
// vthread* rank 1 with no dimension.
func threadScope(tag string) (rank, dim int) {
	switch ir.ThreadRank(tag) {
	case 0:
		return 0, int(tag[len(tag)-1] - 'x')
	case 1:
		return 1, -1
	case 2:
		return 1, int(tag[len(tag)-1] - 'x')
	}
	return -1, -1
}

// accessBuffer returns the i-th buffer b reads (write false) or writes.
func (s *Schedule) accessBuffer(prim string, rv BlockRV, b *ir.Block, i int64, write bool) (*ir.Buffer, error) {
	list, what := b.Reads, "reads"
	if write {
		list, what = b.Writes, "writes"
	}
	if i < 0 || i >= int64(len(list)) {
		return nil, s.errorf(prim, "buffer index %d is out of range: %v %s %d buffer(s)", i, rv, what, len(list))
	}
	return list[i].Buffer, nil
}
