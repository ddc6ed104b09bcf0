package lower

import "dragonx/kernels/ir"

// syncState is what the threads of a block have done to shared memory
// since the last barrier.
type syncState struct {
	written, read map[*ir.Buffer]bool
}

func newSyncState() *syncState {
	return &syncState{written: map[*ir.Buffer]bool{}, read: map[*ir.Buffer]bool{}}
}

func (s *syncState) clone() *syncState {
	c := newSyncState()
	c.union(s)
	return c
}

func (s *syncState) union(o *syncState) {
	for b := range o.written {
		s.written[b] = true
	}
	for b := range o.read {
		s.read[b] = true
	}
}

func (s *syncState) equal(o *syncState) bool {
	if len(s.written) != len(o.written) || len(s.read) != len(o.read) {
		return false
	}
	for b := range o.written {
		if !s.written[b] {
			return false
		}
	}
	for b := range o.read {
		if !s.read[b] {
			return false
		}
	}
	return true
}

func isSharedBuf(b *ir.Buffer) bool { return b.Scope() == "shared" || b.Scope() == "shared.dyn" }

// planBarriers inserts the barriers of a kernel body by TVM's ThreadSync
// rules on shared memory, at the granularity of blocks (different blocks
// are taken to touch elements of other threads):
//   - read after write: a barrier before a statement that reads a shared
//     buffer written since the last barrier;
//   - write after read: a barrier before a statement that writes a shared
//     buffer read since the last barrier.
//
// As in ThreadSync, the conflict is checked for each statement of a
// sequence as a whole (a loop with everything in it), so the barrier goes
// before the outermost statement that conflicts, not into its loops. A
// loop is then planned from the state at its entry joined with the state
// at the end of its body (the next iteration's view), to a fixed point, so
// that a buffer read at the end of one iteration and overwritten at the
// start of the next gets a barrier before the overwrite. Barriers are
// placed between statements, never inside a block's guard.
func planBarriers(body []Stmt) []Stmt {
	return plan(body, newSyncState())
}

// plan returns a copy of stmts with barriers; st is updated to the state
// after them.
func plan(stmts []Stmt, st *syncState) []Stmt {
	out := make([]Stmt, 0, len(stmts))
	for _, s := range stmts {
		sum := newSyncState()
		summarize(s, sum)
		if st.conflicts(sum) {
			out = append(out, &Barrier{})
			*st = *newSyncState()
		}
		switch x := s.(type) {
		case *Block:
			if !hasBlock(x.Body) {
				st.union(sum)
				out = append(out, x)
				continue
			}
			c := *x
			c.Body = plan(x.Body, st)
			out = append(out, &c)
		case *Loop:
			c := *x
			if n, ok := ir.IsConstInt(x.Extent); ok && n == 1 {
				c.Body = plan(x.Body, st)
				out = append(out, &c)
				continue
			}
			// in grows until an iteration that starts from it ends in
			// it: it covers the entry and every iteration's end. The
			// loop may also run zero times, so the state after it is in.
			in := st.clone()
			for {
				cur := in.clone()
				c.Body = plan(x.Body, cur)
				next := in.clone()
				next.union(cur)
				if next.equal(in) {
					*st = *next
					break
				}
				in = next
			}
			out = append(out, &c)
		case *If:
			if !hasBlock(x.Then) && !hasBlock(x.Else) {
				st.union(sum)
				out = append(out, x)
				continue
			}
			c := *x
			other := st.clone()
			c.Then = plan(x.Then, st)
			c.Else = plan(x.Else, other)
			st.union(other)
			out = append(out, &c)
		default:
			out = append(out, s)
		}
	}
	return out
}

// conflicts reports whether what sum reads was written, or what it writes
// was read, in st.
func (st *syncState) conflicts(sum *syncState) bool {
	for b := range sum.read {
		if st.written[b] {
			return true
		}
	}
	for b := range sum.written {
		if st.read[b] {
			return true
		}
	}
	return false
}

// summarize adds the shared buffers s reads and writes to sum.
func summarize(s Stmt, sum *syncState) {
	switch x := s.(type) {
	case *Block:
		if hasBlock(x.Body) {
			for _, c := range x.Body {
				summarize(c, sum)
			}
			return
		}
		for _, b := range x.Reads {
			if isSharedBuf(b) {
				sum.read[b] = true
			}
		}
		for _, b := range x.Writes {
			if isSharedBuf(b) {
				sum.written[b] = true
			}
		}
	case *Loop:
		for _, c := range x.Body {
			summarize(c, sum)
		}
	case *If:
		for _, c := range x.Then {
			summarize(c, sum)
		}
		for _, c := range x.Else {
			summarize(c, sum)
		}
	}
}

func hasBlock(stmts []Stmt) bool {
	for _, s := range stmts {
		switch x := s.(type) {
		case *Block:
			return true
		case *Loop:
			if hasBlock(x.Body) {
				return true
			}
		case *If:
			if hasBlock(x.Then) || hasBlock(x.Else) {
				return true
			}
		}
	}
	return false
}
