package schedule

import (
	"slices"

	"dragonx/kernels/ir"
)

// The schedule keeps no parent map: the trees it works on are small (a
// few hundred statements at most), so finding a statement's ancestors by a
// walk from the root costs less than keeping an index consistent through
// every in-place edit, and it is always right. Measured on the replay
// benchmarks (kernels/trace): the C2D trace walks about 140 times over
// trees of about 45 statements, some 0.1 µs a walk, 3 to 4% of the replay; a
// map from statement to parent costs about as much per lookup (a hash per
// level on the way up) before counting its upkeep through the edits. What
// the walks did cost was copying each path: pathTo carves them from a
// shared chunk instead.

// pathTo returns the ancestors of target from the root BlockRealize down
// to target itself (included), or nil when target is not in f. The result
// is the caller's until the primitive returns: it is carved from a chunk
// (one allocation for many paths), with no room to grow into the next
// path, and handed back when the primitive ends (see markPaths).
func (s *Schedule) pathTo(target ir.Stmt) []ir.Stmt {
	if !s.findPath(target) {
		return nil
	}
	n := len(s.path)
	if cap(s.paths)-len(s.paths) < n {
		// A small first chunk for the short-lived copies that
		// SampleComputeLocation tries primitives on.
		size := 64
		if s.paths != nil {
			size = 256
		}
		s.paths = make([]ir.Stmt, 0, max(size, n))
		s.pgen++
	}
	i := len(s.paths)
	s.paths = append(s.paths, s.path...)
	return s.paths[i : i+n : i+n]
}

// A pathsMark is where the path chunk (and the loop chunk, see
// loopsChunk) stood when a primitive began.
type pathsMark struct{ len, gen, loopsLen, loopsGen int }

// markPaths and releasePaths bracket a primitive: the paths it located
// die with it (none is kept in the schedule, and none is returned), so
// releasePaths hands their room back to the chunk for the next primitive.
// Paths taken before the mark stay (a primitive may call another); a
// chunk allocated since the mark holds only the primitive's own paths and
// is handed back whole.
func (s *Schedule) markPaths() pathsMark {
	return pathsMark{len(s.paths), s.pgen, len(s.lchunk), s.lgen}
}

func (s *Schedule) releasePaths(m pathsMark) {
	if s.pgen == m.gen {
		s.paths = s.paths[:m.len]
	} else {
		s.paths = s.paths[:0]
	}
	if s.lgen == m.loopsGen {
		s.lchunk = s.lchunk[:m.loopsLen]
	} else {
		s.lchunk = s.lchunk[:0]
	}
}

// loopsChunk returns an empty list with room for n loops, carved from a
// chunk as pathTo's paths are, and with their lifetime: the loop lists of
// locateBlock and locateLoop, taken from the paths.
func (s *Schedule) loopsChunk(n int) []*ir.For {
	if cap(s.lchunk)-len(s.lchunk) < n {
		size := 32
		if s.lchunk != nil {
			size = 128
		}
		s.lchunk = make([]*ir.For, 0, max(size, n))
		s.lgen++
	}
	i := len(s.lchunk)
	s.lchunk = s.lchunk[:i+n]
	return s.lchunk[i : i : i+n]
}

// findPath leaves in the scratch s.path the ancestors of target from the
// root down to target itself, and reports whether target is in f. The
// path is only valid until the next call.
func (s *Schedule) findPath(target ir.Stmt) bool {
	s.path = s.path[:0]
	k := keyOf(target)
	return findPath(s.f.Body, &k, 0, &s.path)
}

// stmtKey is a statement to look for, held by its concrete type, so that
// a search compares pointers where comparing interfaces would take a call
// to the runtime at every statement of the target's type.
type stmtKey struct {
	loop    *ir.For
	realize *ir.BlockRealize
	block   *ir.Block
	seq     *ir.SeqStmt
	cond    *ir.IfThenElse
	other   ir.Stmt // any other kind of statement
}

func keyOf(s ir.Stmt) stmtKey {
	switch x := s.(type) {
	case *ir.For:
		return stmtKey{loop: x}
	case *ir.BlockRealize:
		return stmtKey{realize: x}
	case *ir.Block:
		return stmtKey{block: x}
	case *ir.SeqStmt:
		return stmtKey{seq: x}
	case *ir.IfThenElse:
		return stmtKey{cond: x}
	}
	return stmtKey{other: s}
}

// findPath searches s, which sits at depth depth, for target. The path is
// written into *path only on the way back from a hit, so that the search
// itself stores nothing.
func findPath(s ir.Stmt, target *stmtKey, depth int, path *[]ir.Stmt) bool {
	hit, found := false, false
	switch x := s.(type) {
	case nil:
		return false
	case *ir.For:
		hit = x == target.loop
		found = hit || findPath(x.Body, target, depth+1, path)
	case *ir.BlockRealize:
		hit = x == target.realize
		found = hit || findPath(x.Block, target, depth+1, path)
	case *ir.Block:
		hit = x == target.block
		found = hit || findPath(x.Init, target, depth+1, path) || findPath(x.Body, target, depth+1, path)
	case *ir.SeqStmt:
		if hit = x == target.seq; !hit {
			for _, c := range x.Stmts {
				if findPath(c, target, depth+1, path) {
					found = true
					break
				}
			}
		}
		found = found || hit
	case *ir.IfThenElse:
		hit = x == target.cond
		found = hit || findPath(x.Then, target, depth+1, path) || findPath(x.Else, target, depth+1, path)
	default:
		hit = target.other != nil && s == target.other
		found = hit
	}
	if !found {
		return false
	}
	if hit {
		*path = slices.Grow((*path)[:0], depth+1)[:depth+1]
	}
	(*path)[depth] = s
	return true
}

// loopDepths returns the depth (the number of ancestors) of each of loops
// in the tree under root, -1 for a loop not in it: one walk for all.
func loopDepths(root ir.Stmt, loops []*ir.For) []int {
	out := make([]int, len(loops))
	for i := range out {
		out[i] = -1
	}
	markDepths(root, 0, loops, out)
	return out
}

func markDepths(s ir.Stmt, depth int, loops []*ir.For, out []int) {
	switch x := s.(type) {
	case *ir.For:
		for i, l := range loops {
			if l == x {
				out[i] = depth
			}
		}
		markDepths(x.Body, depth+1, loops, out)
	case *ir.BlockRealize:
		if x.Block != nil {
			markDepths(x.Block, depth+1, loops, out)
		}
	case *ir.Block:
		markDepths(x.Init, depth+1, loops, out)
		markDepths(x.Body, depth+1, loops, out)
	case *ir.SeqStmt:
		for _, c := range x.Stmts {
			markDepths(c, depth+1, loops, out)
		}
	case *ir.IfThenElse:
		markDepths(x.Then, depth+1, loops, out)
		markDepths(x.Else, depth+1, loops, out)
	}
}

// contains reports whether s is in f.
func contains(f *ir.PrimFunc, s ir.Stmt) bool {
	k := keyOf(s)
	return containsStmt(f.Body, &k)
}

func containsStmt(root ir.Stmt, s *stmtKey) bool {
	switch x := root.(type) {
	case *ir.For:
		return x == s.loop || containsStmt(x.Body, s)
	case *ir.BlockRealize:
		return x == s.realize || x.Block != nil && containsStmt(x.Block, s)
	case *ir.Block:
		return x == s.block || x.Init != nil && containsStmt(x.Init, s) || containsStmt(x.Body, s)
	case *ir.SeqStmt:
		if x == s.seq {
			return true
		}
		for _, c := range x.Stmts {
			if containsStmt(c, s) {
				return true
			}
		}
		return false
	case *ir.IfThenElse:
		return x == s.cond || containsStmt(x.Then, s) || x.Else != nil && containsStmt(x.Else, s)
	}
	return root == s.other
}

// blockPath describes where a block sits: its realize, the loops between
// it and its scope block (outermost first), the scope block, and the full
// path from the root.
type blockPath struct {
	path    []ir.Stmt // root realize ... realize, block
	realize *ir.BlockRealize
	scope   *ir.Block // nil for the root block
	loops   []*ir.For
}

func (s *Schedule) locateBlock(b *ir.Block) (blockPath, bool) {
	p := s.pathTo(b)
	if p == nil {
		return blockPath{}, false
	}
	bp := blockPath{path: p}
	if len(p) >= 2 {
		bp.realize, _ = p[len(p)-2].(*ir.BlockRealize)
	}
	// The loops lie between the scope block (the nearest block above the
	// realize) and the realize.
	top, n := 0, 0
	for i := len(p) - 3; i >= 0; i-- {
		switch x := p[i].(type) {
		case *ir.For:
			n++
			continue
		case *ir.Block:
			bp.scope = x
			top = i + 1
		default:
			continue
		}
		break
	}
	if n > 0 {
		bp.loops = s.loopsChunk(n)
		for _, x := range p[top : len(p)-2] {
			if f, ok := x.(*ir.For); ok {
				bp.loops = append(bp.loops, f)
			}
		}
	}
	return bp, true
}

// loopPath describes where a loop sits: its ancestors up to its scope
// block.
type loopPath struct {
	path  []ir.Stmt // root realize ... loop
	scope *ir.Block
	outer []*ir.For // the loops above it up to the scope, outermost first
}

func (s *Schedule) locateLoop(l *ir.For) (loopPath, bool) {
	p := s.pathTo(l)
	if p == nil {
		return loopPath{}, false
	}
	lp := loopPath{path: p}
	top := len(p) - 1 // the first statement under the scope block
	for top > 0 {
		if b, ok := p[top-1].(*ir.Block); ok {
			lp.scope = b
			break
		}
		top--
	}
	n := 0
	for _, x := range p[top : len(p)-1] {
		if _, ok := x.(*ir.For); ok {
			n++
		}
	}
	if n > 0 {
		lp.outer = s.loopsChunk(n)
		for _, x := range p[top : len(p)-1] {
			if f, ok := x.(*ir.For); ok {
				lp.outer = append(lp.outer, f)
			}
		}
	}
	return lp, true
}

// parentOf returns the statement holding s in path (the element before s).
func parentOf(path []ir.Stmt, s ir.Stmt) ir.Stmt {
	for i, x := range path {
		if x == s && i > 0 {
			return path[i-1]
		}
	}
	return nil
}

// replaceIn puts new in place of old inside parent. new may be nil only
// when parent is a SeqStmt (old is then removed); the caller collapses a
// sequence left with one statement (see removeFromSeq).
func replaceIn(parent, old, new ir.Stmt) {
	switch x := parent.(type) {
	case *ir.For:
		x.Body = new
	case *ir.BlockRealize:
		x.Block = new.(*ir.Block)
	case *ir.Block:
		if x.Init == old {
			x.Init = new
		} else {
			x.Body = new
		}
	case *ir.IfThenElse:
		if x.Then == old {
			x.Then = new
		} else {
			x.Else = new
		}
	case *ir.SeqStmt:
		i := slices.Index(x.Stmts, old)
		if i < 0 {
			panic("kernels: replaceIn: statement not in its sequence")
		}
		if new == nil {
			x.Stmts = slices.Delete(slices.Clone(x.Stmts), i, i+1)
		} else {
			x.Stmts = slices.Clone(x.Stmts)
			x.Stmts[i] = new
		}
	default:
		panic("kernels: replaceIn: unknown parent")
	}
}

// removeSubtree removes top (an element of path, which ends below it) from
// the tree: top's parent must be a SeqStmt. A sequence left with one
// statement is replaced by that statement.
func removeSubtree(path []ir.Stmt, top ir.Stmt) {
	seqIdx := slices.Index(path, top) - 1
	seq := path[seqIdx].(*ir.SeqStmt)
	replaceIn(seq, top, nil)
	if len(seq.Stmts) == 1 {
		replaceIn(path[seqIdx-1], seq, seq.Stmts[0])
	}
}

// removalPlan finds what to cut to remove block b (TVM's
// LeafBlockRemovalPlan): b's realize together with the loops above it that
// hold nothing else. The top of that chain must sit in a SeqStmt;
// otherwise b is the only statement of its scope and cannot be removed.
// It returns the top statement, or nil.
func removalPlan(bp blockPath) ir.Stmt {
	var top ir.Stmt = bp.realize
	for i := len(bp.path) - 3; i >= 0; i-- {
		switch x := bp.path[i].(type) {
		case *ir.For:
			top = x
			continue
		case *ir.SeqStmt:
			return top
		}
		return nil
	}
	return nil
}

// bodyList returns the statements of a loop or block body: the elements of
// a SeqStmt, or the statement itself.
func bodyList(s ir.Stmt) []ir.Stmt {
	if q, ok := s.(*ir.SeqStmt); ok {
		return q.Stmts
	}
	if s == nil {
		return nil
	}
	return []ir.Stmt{s}
}

// insertAt returns body with stage inserted at position pos of its
// statement list, as a new SeqStmt (nested sequences flattened).
func insertAt(body ir.Stmt, pos int, stage ir.Stmt) ir.Stmt {
	list := bodyList(body)
	out := make([]ir.Stmt, 0, len(list)+1)
	out = append(out, list[:pos]...)
	out = append(out, stage)
	out = append(out, list[pos:]...)
	return ir.Seq(out...)
}

// childRealizes returns the BlockRealizes directly in s, in program order,
// without entering blocks: s itself when it is one; for a Block, those of
// its body.
func childRealizes(s ir.Stmt) []*ir.BlockRealize {
	switch x := s.(type) {
	case *ir.BlockRealize:
		return []*ir.BlockRealize{x}
	case *ir.Block:
		s = x.Body
	}
	return collectRealizes(s, false)
}

// realizesUnder returns every BlockRealize under s (s itself included),
// nested ones too, in program order.
func realizesUnder(s ir.Stmt) []*ir.BlockRealize {
	return collectRealizes(s, true)
}

// collectRealizes returns appendRealizes(nil, s, nested) in a list of its
// exact size, counted first: one allocation (none when there are none)
// where growing the list would take several.
func collectRealizes(s ir.Stmt, nested bool) []*ir.BlockRealize {
	n := countRealizes(s, nested)
	if n == 0 {
		return nil
	}
	return appendRealizes(make([]*ir.BlockRealize, 0, n), s, nested)
}

// countRealizes counts the BlockRealizes that appendRealizes would append.
func countRealizes(s ir.Stmt, nested bool) int {
	switch x := s.(type) {
	case *ir.BlockRealize:
		if nested && x.Block != nil {
			return 1 + countRealizes(x.Block, nested)
		}
		return 1
	case *ir.Block:
		return countRealizes(x.Init, nested) + countRealizes(x.Body, nested)
	case *ir.For:
		return countRealizes(x.Body, nested)
	case *ir.SeqStmt:
		n := 0
		for _, c := range x.Stmts {
			n += countRealizes(c, nested)
		}
		return n
	case *ir.IfThenElse:
		return countRealizes(x.Then, nested) + countRealizes(x.Else, nested)
	}
	return 0
}

// forRealizes calls fn on each BlockRealize that appendRealizes(nil, s,
// nested) lists, in the same order, without building the list (for
// callers that only look at them, and change nothing in s). It stops at
// the first fn that returns false, and reports whether none did.
func forRealizes(s ir.Stmt, nested bool, fn func(*ir.BlockRealize) bool) bool {
	switch x := s.(type) {
	case *ir.BlockRealize:
		if !fn(x) {
			return false
		}
		if nested && x.Block != nil {
			return forRealizes(x.Block, nested, fn)
		}
	case *ir.Block:
		return forRealizes(x.Init, nested, fn) && forRealizes(x.Body, nested, fn)
	case *ir.For:
		return forRealizes(x.Body, nested, fn)
	case *ir.SeqStmt:
		for _, c := range x.Stmts {
			if !forRealizes(c, nested, fn) {
				return false
			}
		}
	case *ir.IfThenElse:
		return forRealizes(x.Then, nested, fn) && forRealizes(x.Else, nested, fn)
	}
	return true
}

// forChildRealizes is forRealizes over what childRealizes(s) lists.
func forChildRealizes(s ir.Stmt, fn func(*ir.BlockRealize) bool) bool {
	switch x := s.(type) {
	case *ir.BlockRealize:
		return fn(x)
	case *ir.Block:
		s = x.Body
	}
	return forRealizes(s, false, fn)
}

// appendRealizes appends the BlockRealizes under s in program order
// (pre-order, a Block's Init before its Body); nested ones too when nested
// is set.
func appendRealizes(out []*ir.BlockRealize, s ir.Stmt, nested bool) []*ir.BlockRealize {
	switch x := s.(type) {
	case *ir.BlockRealize:
		out = append(out, x)
		if nested && x.Block != nil {
			out = appendRealizes(out, x.Block, nested)
		}
	case *ir.Block:
		out = appendRealizes(out, x.Init, nested)
		out = appendRealizes(out, x.Body, nested)
	case *ir.For:
		out = appendRealizes(out, x.Body, nested)
	case *ir.SeqStmt:
		for _, c := range x.Stmts {
			out = appendRealizes(out, c, nested)
		}
	case *ir.IfThenElse:
		out = appendRealizes(out, x.Then, nested)
		out = appendRealizes(out, x.Else, nested)
	}
	return out
}

// walkChildRealizes calls fn, in program order, on each block realize in s
// that no other block encloses, with the loops around it: loops, then the
// loops of s down to it (fn must not keep the slice; it is reused). The
// walk stops when fn returns false.
func walkChildRealizes(s ir.Stmt, loops []*ir.For, fn func(r *ir.BlockRealize, loops []*ir.For) bool) {
	// A copy, since appends must not write into the caller's array, with
	// room for the loops of a deep nest: one allocation for the walk.
	ls := make([]*ir.For, len(loops), len(loops)+16)
	copy(ls, loops)
	stop := false
	var walk func(x ir.Stmt)
	walk = func(x ir.Stmt) {
		if stop {
			return
		}
		switch x := x.(type) {
		case *ir.For:
			ls = append(ls, x)
			walk(x.Body)
			ls = ls[:len(ls)-1]
		case *ir.SeqStmt:
			for _, c := range x.Stmts {
				walk(c)
			}
		case *ir.IfThenElse:
			walk(x.Then)
			walk(x.Else)
		case *ir.BlockRealize:
			stop = !fn(x, ls)
		}
	}
	walk(s)
}
