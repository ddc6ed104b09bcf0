package schedule

import (
	"slices"
	"strconv"

	"dragonx/kernels/arith"
	"dragonx/kernels/ir"
)

// CacheRead adds a block that copies the i-th buffer block b reads into a
// new buffer of the given storage scope, named <buffer>_<scope>, and makes
// the consumers read the copy (TVM's cache_read). consumers restricts the
// redirection to those blocks (and the blocks inside them); when empty,
// every reader in the scope is redirected.
//
// The stage copies the region the buffer's writer produces (the whole
// buffer for a function input) and is inserted just before the first
// consumer, in the innermost loop or block holding both the writer and
// the consumers. When that place is a block, the copy is compacted: the
// cache buffer only has the region's shape, and the indices of its readers
// are shifted, as TVM does since v0.14. It returns the new block.
func (s *Schedule) CacheRead(b BlockRV, i int64, scope string, consumers []BlockRV) (BlockRV, error) {
	defer s.releasePaths(s.markPaths())
	const prim = "CacheRead"
	_, buf, sc, consumerSet, err := s.cacheContext(prim, b, i, false, scope, consumers)
	if err != nil {
		return BlockRV{}, err
	}
	writers := sc.writers(buf)
	if len(writers) > 1 {
		return BlockRV{}, s.errorf(prim, "buffer %s is written by %d blocks in scope %q (%s), but a cache stage needs a single writer", buf.Name(), len(writers), sc.root.Name, blockNames(writers))
	}

	var loc cacheLoc
	var region ir.BufferRegion
	if len(writers) == 1 {
		w := writers[0]
		var related []*ir.Block
		if len(consumerSet) > 0 {
			for c := range consumerSet {
				related = append(related, c)
			}
		} else {
			for _, d := range sc.deps {
				if d.src == w && d.kind == depRAW {
					related = append(related, d.dst)
				}
			}
		}
		loc = detectCacheLoc(sc.root, w, related)
		wr := regionOf(w.Writes, buf)
		region, err = s.relaxWriterRegion(prim, w, wr, loc)
		if err != nil {
			return BlockRV{}, err
		}
	} else {
		loc = cacheLoc{at: sc.root, pos: 0}
		if r, ok := findRegion(sc.root.Reads, buf); ok {
			region = r
		} else {
			region = ir.FullRegion(buf)
		}
	}
	compact := loc.isBlock()
	cacheBuf, err := s.cacheBuffer(prim, buf, scope, region, compact)
	if err != nil {
		return BlockRV{}, err
	}
	stage, block, err := s.makeCacheStage(prim, region, buf, cacheBuf, true, compact, scope)
	if err != nil {
		return BlockRV{}, err
	}

	// Rewrite the readers.
	isConsumer := func(x *ir.Block) bool { return len(consumerSet) == 0 || consumerSet[x] }
	var walk func(x ir.Stmt)
	walk = func(x ir.Stmt) {
		switch x := x.(type) {
		case *ir.For:
			walk(x.Body)
		case *ir.SeqStmt:
			for _, c := range x.Stmts {
				walk(c)
			}
		case *ir.IfThenElse:
			walk(x.Then)
			walk(x.Else)
		case *ir.BlockRealize:
			blk := x.Block
			if _, writes := findRegion(blk.Writes, buf); writes {
				return // the writer keeps writing the original buffer
			}
			if isConsumer(blk) {
				blk.Reads = s.redirectRegions(blk.Reads, buf, cacheBuf, region, compact)
				s.redirectLoads(blk, buf, cacheBuf, region, compact)
			}
			walk(blk.Body)
		}
	}
	walk(sc.root.Body)
	loc.insert(stage)
	sc.root.AllocBuffers = append(slices.Clone(sc.root.AllocBuffers), cacheBuf)
	return s.newBlockRV(block), s.done(prim)
}

// CacheWrite makes block b write its i-th output into a new buffer of the
// given scope, named <buffer>_<scope>, and adds a block that copies it back
// (TVM's cache_write). The copy is inserted after the last consumer-free
// point following the writer (at the end of the scope when the buffer is
// an output); consumers, when given, are redirected to read the cache
// directly. It returns the new block. b must be the only writer of the
// buffer in its scope.
func (s *Schedule) CacheWrite(b BlockRV, i int64, scope string, consumers []BlockRV) (BlockRV, error) {
	defer s.releasePaths(s.markPaths())
	const prim = "CacheWrite"
	blk, buf, sc, consumerSet, err := s.cacheContext(prim, b, i, true, scope, consumers)
	if err != nil {
		return BlockRV{}, err
	}
	if ws := sc.writers(buf); len(ws) != 1 || ws[0] != blk {
		return BlockRV{}, s.errorf(prim, "buffer %s is written by %d blocks in scope %q (%s), but a cache stage needs a single writer", buf.Name(), len(ws), sc.root.Name, blockNames(ws))
	}
	var related []*ir.Block
	for _, d := range sc.deps {
		if d.src == blk && d.kind == depRAW && !consumerSet[d.dst] {
			related = append(related, d.dst)
		}
	}
	loc := detectCacheLoc(sc.root, blk, related)
	region, err := s.relaxWriterRegion(prim, blk, regionOf(blk.Writes, buf), loc)
	if err != nil {
		return BlockRV{}, err
	}
	compact := loc.isBlock()
	cacheBuf, err := s.cacheBuffer(prim, buf, scope, region, compact)
	if err != nil {
		return BlockRV{}, err
	}
	stage, block, err := s.makeCacheStage(prim, region, buf, cacheBuf, false, compact, scope)
	if err != nil {
		return BlockRV{}, err
	}

	// The writer (and the blocks inside it) write the cache; the given
	// consumers read it.
	var redirect func(x *ir.Block)
	redirect = func(x *ir.Block) {
		x.Writes = s.redirectRegions(x.Writes, buf, cacheBuf, region, compact)
		x.Reads = s.redirectRegions(x.Reads, buf, cacheBuf, region, compact)
		s.redirectLoads(x, buf, cacheBuf, region, compact)
		s.redirectStores(x, buf, cacheBuf, region, compact)
		for _, r := range realizesUnder(x.Body) {
			if r.Block != x {
				redirect(r.Block)
			}
		}
	}
	redirect(blk)
	for c := range consumerSet {
		c.Reads = s.redirectRegions(c.Reads, buf, cacheBuf, region, compact)
		c.Writes = s.redirectRegions(c.Writes, buf, cacheBuf, region, compact)
		s.redirectLoads(c, buf, cacheBuf, region, compact)
		s.redirectStores(c, buf, cacheBuf, region, compact)
	}
	loc.insert(stage)
	sc.root.AllocBuffers = append(slices.Clone(sc.root.AllocBuffers), cacheBuf)
	return s.newBlockRV(block), s.done(prim)
}

// consumerSet resolves consumer RVs into a set that also holds the blocks
// nested directly in each consumer, as TVM's cache primitives do.
func (s *Schedule) consumerSet(prim string, consumers []BlockRV) (map[*ir.Block]bool, error) {
	if len(consumers) == 0 {
		return nil, nil
	}
	set := map[*ir.Block]bool{}
	for _, c := range consumers {
		cb, err := s.block(prim, c)
		if err != nil {
			return nil, err
		}
		set[cb] = true
		forChildRealizes(cb, func(r *ir.BlockRealize) bool {
			set[r.Block] = true
			return true
		})
	}
	return set, nil
}

func blockNames(bs []*ir.Block) string {
	out := ""
	for i, b := range bs {
		if i > 0 {
			out += ", "
		}
		out += strconv.Quote(b.Name)
	}
	return out
}

func regionOf(rs []ir.BufferRegion, buf *ir.Buffer) ir.BufferRegion {
	r, _ := findRegion(rs, buf)
	return r
}

func findRegion(rs []ir.BufferRegion, buf *ir.Buffer) (ir.BufferRegion, bool) {
	for _, r := range rs {
		if r.Buffer == buf {
			return r, true
		}
	}
	return ir.BufferRegion{}, false
}

// cacheLoc is where a cache stage goes: position pos in the body of a
// loop or a block.
type cacheLoc struct {
	at  ir.Stmt // *ir.For or *ir.Block
	pos int
}

func (c cacheLoc) isBlock() bool {
	_, ok := c.at.(*ir.Block)
	return ok
}

func (c cacheLoc) insert(stage ir.Stmt) {
	switch x := c.at.(type) {
	case *ir.For:
		x.Body = insertAt(x.Body, c.pos, stage)
	case *ir.Block:
		x.Body = insertAt(x.Body, c.pos, stage)
	}
}

// detectCacheLoc is TVM's CacheLocDetector: the stage goes right before
// the first statement (of the innermost sequence holding both) that
// contains a related block (a consumer, for cache_read; a consumer of the
// writer, for cache_write) after the writer w. With no related block it
// goes at the end of the scope; when the writer comes after every related
// block (or is outside the scope), at its start.
func detectCacheLoc(scope *ir.Block, w *ir.Block, related []*ir.Block) cacheLoc {
	if len(related) == 0 {
		n := 1
		if q, ok := scope.Body.(*ir.SeqStmt); ok {
			n = len(q.Stmts)
		}
		return cacheLoc{at: scope, pos: n}
	}
	d := &locDetector{scope: scope, w: w, related: related, pos: -1}
	d.visit(scope)
	if d.at == nil {
		return cacheLoc{at: scope, pos: max(d.pos, 0)}
	}
	return cacheLoc{at: d.at, pos: d.pos}
}

type locDetector struct {
	scope          *ir.Block
	w              *ir.Block
	related        []*ir.Block
	visitedBlock   bool
	visitedRelated bool
	at             ir.Stmt
	pos            int
}

func (d *locDetector) visit(s ir.Stmt) {
	switch x := s.(type) {
	case *ir.SeqStmt:
		prev := d.visitedBlock
		d.visitedBlock = false
		for i, c := range x.Stmts {
			if d.pos != -1 {
				break
			}
			d.visit(c)
			if d.visitedBlock && d.visitedRelated && d.pos == -1 {
				d.pos = i
				break
			} else if d.visitedRelated {
				break
			}
		}
		d.visitedBlock = d.visitedBlock || prev
	case *ir.Block:
		if x == d.scope {
			d.visit(x.Body)
			if d.visitedRelated && d.at == nil {
				d.at = x
				if !d.visitedBlock && d.pos == -1 {
					d.pos = 0
				}
			}
			return
		}
		if x == d.w {
			d.visitedBlock = true
			return
		}
		if slices.Contains(d.related, x) {
			d.visitedRelated = true
		}
	case *ir.For:
		d.visit(x.Body)
		if d.visitedBlock && d.visitedRelated && d.at == nil && d.pos != -1 {
			d.at = x
		}
	case *ir.BlockRealize:
		d.visit(x.Block)
	case *ir.IfThenElse:
		d.visit(x.Then)
		d.visit(x.Else)
	}
}

// relaxWriterRegion is TVM's RelaxBufferRegion: the region the writer w
// produces, over the loops between it and the cache stage's location,
// clamped to the buffer when the writer is guarded by a predicate.
func (s *Schedule) relaxWriterRegion(prim string, w *ir.Block, region ir.BufferRegion, loc cacheLoc) (ir.BufferRegion, error) {
	wp, _ := s.locateBlock(w)
	binding := bindingMap(wp.realize)
	// Relax the loops from w up to loc (exclusive); when loc is not a loop
	// above w, up to w's scope. Thread loops further up are relaxed as the
	// buffer's scope requires.
	locIdx := slices.Index(wp.path, loc.at)
	la := s.analyzer()
	defer s.release(la)
	dom := relaxPath(la, wp.path, len(wp.path)-3, locIdx, region.Buffer.Scope(), true)
	out := ir.BufferRegion{Buffer: region.Buffer, Region: make([]ir.Range, len(region.Region))}
	pred := wp.realize != nil && !ir.IsTrue(wp.realize.Predicate)
	shape := region.Buffer.Shape()
	for k, rg := range region.Region {
		set := la.relaxRange(rg, binding, dom)
		if pred {
			set = la.Intersect(set, arith.RangeSet(0, shape[k]))
		}
		if !set.Bounded() {
			out.Region[k] = ir.RangeOf(0, shape[k])
			continue
		}
		r, _ := la.ToRange(set)
		r.Min, r.Extent = la.simplify(r.Min), la.simplify(r.Extent)
		out.Region[k] = r
	}
	return out, nil
}

func (la *loopAnalyzer) substUnit(e ir.Expr) ir.Expr {
	if len(la.unit) == 0 {
		return e
	}
	return ir.SubstituteMap(e, la.unit)
}

// bindingMap maps a block's iter vars to their bindings.
func bindingMap(r *ir.BlockRealize) map[*ir.Var]ir.Expr {
	if r == nil {
		return nil
	}
	m := make(map[*ir.Var]ir.Expr, len(r.IterValues))
	for i, iv := range r.Block.IterVars {
		if i < len(r.IterValues) {
			m[iv.Var] = r.IterValues[i]
		}
	}
	return m
}

// cacheBuffer makes the cache buffer: the original's copy in scope, named
// <name>_<scope>, with the region's shape when compact.
func (s *Schedule) cacheBuffer(prim string, buf *ir.Buffer, scope string, region ir.BufferRegion, compact bool) (*ir.Buffer, error) {
	shape := buf.Shape()
	if compact {
		shape = make([]int64, len(region.Region))
		for k, r := range region.Region {
			e, ok := ir.IsConstInt(r.Extent)
			if !ok {
				return nil, s.errorf(prim, "the region of %s to cache has a non-constant extent %s in dimension %d", buf.Name(), ir.ExprString(r.Extent), k)
			}
			shape[k] = e
		}
	}
	return ir.NewBuffer(buf.Name()+"_"+scope, buf.DType(), shape, scope), nil
}

// makeCacheStage builds the copy loop nest (TVM's MakeCacheStage): loops
// ax0.. over the region, a block named <buffer>_<scope> with iter vars
// v0.. copying one element. For a cache read the copy goes from orig to
// cache, for a cache write from cache to orig.
func (s *Schedule) makeCacheStage(prim string, region ir.BufferRegion, orig, cache *ir.Buffer, read, compact bool, scope string) (ir.Stmt, *ir.Block, error) {
	n := len(region.Region)
	loopVars := make([]*ir.Var, n)
	extents := make([]int64, n)
	values := make([]ir.Expr, n)
	ivs := make([]ir.IterVar, n)
	origIdx := make([]ir.Expr, n)
	cacheIdx := make([]ir.Expr, n)
	for k, r := range region.Region {
		e, ok := ir.IsConstInt(r.Extent)
		if !ok {
			return nil, nil, s.errorf(prim, "the region of %s to cache has a non-constant extent %s in dimension %d", orig.Name(), ir.ExprString(r.Extent), k)
		}
		extents[k] = e
		loopVars[k] = ir.NewVar("ax"+strconv.Itoa(k), ir.LoopVarType(e))
		v := ir.NewVar("v"+strconv.Itoa(k), ir.LoopVarType(orig.Shape()[k]))
		if compact {
			values[k] = loopVars[k]
			ivs[k] = ir.IterVar{Var: v, Dom: ir.Dom{Extent: e}}
			origIdx[k] = addConst(r.Min, v)
			cacheIdx[k] = v
		} else {
			values[k] = addConst(r.Min, loopVars[k])
			ivs[k] = ir.IterVar{Var: v, Dom: ir.Dom{Extent: orig.Shape()[k]}}
			origIdx[k] = v
			cacheIdx[k] = v
		}
	}
	src, dst := orig, cache
	srcIdx, dstIdx := origIdx, cacheIdx
	if !read {
		src, dst = cache, orig
		srcIdx, dstIdx = cacheIdx, origIdx
	}
	block := &ir.Block{
		Name:     uniqueBlockName(s.f, region.Buffer.Name()+"_"+scope),
		IterVars: ivs,
		Reads:    []ir.BufferRegion{ir.PointRegion(src, srcIdx...)},
		Writes:   []ir.BufferRegion{ir.PointRegion(dst, dstIdx...)},
		Body:     ir.Store(dst, ir.Load(src, srcIdx...), dstIdx...),
	}
	var stmt ir.Stmt = &ir.BlockRealize{IterValues: values, Block: block}
	for k := n - 1; k >= 0; k-- {
		stmt = ir.Loop(loopVars[k], extents[k], stmt)
	}
	return stmt, block, nil
}

// addConst returns min + v, folding a zero min as TVM's operators do.
func addConst(min ir.Expr, v ir.Expr) ir.Expr {
	if c, ok := ir.IsConstInt(min); ok && c == 0 {
		return v
	}
	return ir.Add(min, v)
}

// redirectRegions replaces buf by cache in regions (shifted by the cache
// region's minimum when compact).
func (s *Schedule) redirectRegions(rs []ir.BufferRegion, buf, cache *ir.Buffer, region ir.BufferRegion, compact bool) []ir.BufferRegion {
	var out []ir.BufferRegion
	for i, r := range rs {
		if r.Buffer != buf {
			continue
		}
		if out == nil {
			out = slices.Clone(rs)
		}
		nr := ir.BufferRegion{Buffer: cache, Region: slices.Clone(r.Region)}
		if compact {
			a := s.analyzer()
			for k := range nr.Region {
				nr.Region[k].Min = a.Simplify(ir.Sub(nr.Region[k].Min, region.Region[k].Min))
			}
			s.release(a)
		}
		out[i] = nr
	}
	if out == nil {
		return rs
	}
	return out
}

// shiftIndices returns idx minus the region's minimum, simplified.
func (s *Schedule) shiftIndices(idx []ir.Expr, region ir.BufferRegion) []ir.Expr {
	out := make([]ir.Expr, len(idx))
	a := s.analyzer()
	for k, e := range idx {
		out[k] = a.Simplify(ir.Sub(e, region.Region[k].Min))
	}
	s.release(a)
	return out
}

// redirectLoads makes the loads of buf in b's own statements (not in the
// blocks nested in it) load cache instead.
func (s *Schedule) redirectLoads(b *ir.Block, buf, cache *ir.Buffer, region ir.BufferRegion, compact bool) {
	fn := func(e ir.Expr) ir.Expr {
		if l, ok := e.(*ir.BufferLoad); ok && l.Buffer() == buf {
			idx := l.Indices()
			if compact {
				idx = s.shiftIndices(idx, region)
			}
			return ir.Load(cache, idx...)
		}
		return e
	}
	rewriteShallow(b.Init, fn, nil)
	rewriteShallow(b.Body, fn, nil)
}

// redirectStores makes the stores to buf in b's own statements store to
// cache instead.
func (s *Schedule) redirectStores(b *ir.Block, buf, cache *ir.Buffer, region ir.BufferRegion, compact bool) {
	fn := func(st *ir.BufferStore) {
		if st.Buffer == buf {
			st.Buffer = cache
			if compact {
				st.Indices = s.shiftIndices(st.Indices, region)
			}
		}
	}
	rewriteShallow(b.Init, nil, fn)
	rewriteShallow(b.Body, nil, fn)
}

// rewriteShallow rewrites the expressions (with fn) and stores (with st)
// of s and the statements below it, without entering nested blocks (the
// bindings of nested realizes are rewritten: they belong to the outer
// block).
func rewriteShallow(s ir.Stmt, fn func(ir.Expr) ir.Expr, st func(*ir.BufferStore)) {
	switch x := s.(type) {
	case nil:
	case *ir.For:
		rewriteShallow(x.Body, fn, st)
	case *ir.SeqStmt:
		for _, c := range x.Stmts {
			rewriteShallow(c, fn, st)
		}
	case *ir.IfThenElse:
		if fn != nil {
			x.Cond = ir.Rewrite(x.Cond, fn)
		}
		rewriteShallow(x.Then, fn, st)
		rewriteShallow(x.Else, fn, st)
	case *ir.BlockRealize:
		if fn != nil {
			for i, v := range x.IterValues {
				x.IterValues[i] = ir.Rewrite(v, fn)
			}
			if x.Predicate != nil {
				x.Predicate = ir.Rewrite(x.Predicate, fn)
			}
		}
	case *ir.BufferStore:
		if fn != nil {
			x.Value = ir.Rewrite(x.Value, fn)
			for i, v := range x.Indices {
				x.Indices[i] = ir.Rewrite(v, fn)
			}
		}
		if st != nil {
			st(x)
		}
	}
}

// cacheContext checks and gathers what CacheRead and CacheWrite start from:
// the block b, its i-th read (or written) buffer, its scope and the set of
// consumers to redirect.
func (s *Schedule) cacheContext(prim string, b BlockRV, i int64, write bool, scope string, consumers []BlockRV) (
	blk *ir.Block, buf *ir.Buffer, sc *scopeInfo, consumerSet map[*ir.Block]bool, err error) {
	if err = s.checkStorageScope(prim, scope); err != nil {
		return
	}
	var bp blockPath
	if blk, bp, err = s.blockContext(prim, b); err != nil {
		return
	}
	if buf, err = s.accessBuffer(prim, b, blk, i, write); err != nil {
		return
	}
	if sc, err = s.scopeOf(prim, b, blk, bp); err != nil {
		return
	}
	consumerSet, err = s.consumerSet(prim, consumers)
	return
}
