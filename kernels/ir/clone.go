package ir

import "slices"

// Clone returns an independent copy of f: every statement is copied, so the
// copy can be scheduled (mutated) without touching f. Expressions, Vars and
// Buffers are immutable and shared between the two, as in TVM's
// copy-on-write IR; the copy therefore prints, hashes and compares exactly
// like f.
//
// Clone is the first step of every trace replay, so it allocates in bulk:
// a first pass counts the nodes, then each kind of node and each kind of
// list comes from one slab (see BenchmarkClone). Lists in the copy have
// capacity equal to their length, so appending to one reallocates rather
// than writing into a neighbour.
func (f *PrimFunc) Clone() *PrimFunc {
	c := newCloner(f.Body)
	return &PrimFunc{
		Name:   f.Name,
		Params: slices.Clone(f.Params),
		Attrs:  f.Attrs.Clone(),
		Body:   c.realize(f.Body),
	}
}

// CloneStmt returns an independent copy of s (see PrimFunc.Clone).
func CloneStmt(s Stmt) Stmt {
	return newCloner(s).stmt(s)
}

type cloner struct {
	fors     []For
	realizes []BlockRealize
	blocks   []Block
	stores   []BufferStore
	seqs     []SeqStmt
	ifs      []IfThenElse
	exprs    []Expr
	stmts    []Stmt
	ivs      []IterVar
	ranges   []Range
	regions  []BufferRegion
	bufs     []*Buffer
	anns     []Annotation
}

func newCloner(s Stmt) *cloner {
	var n struct{ fors, realizes, blocks, stores, seqs, ifs, exprs, stmts, ivs, ranges, regions, bufs, anns int }
	WalkStmt(s, func(s Stmt) bool {
		switch x := s.(type) {
		case *For:
			n.fors++
			n.anns += len(x.Annotations)
		case *BlockRealize:
			n.realizes++
			n.exprs += len(x.IterValues)
		case *Block:
			n.blocks++
			n.ivs += len(x.IterVars)
			n.regions += len(x.Reads) + len(x.Writes)
			for _, r := range x.Reads {
				n.ranges += len(r.Region)
			}
			for _, r := range x.Writes {
				n.ranges += len(r.Region)
			}
			n.bufs += len(x.AllocBuffers)
			n.anns += len(x.Annotations)
		case *BufferStore:
			n.stores++
			n.exprs += len(x.Indices)
		case *SeqStmt:
			n.seqs++
			n.stmts += len(x.Stmts)
		case *IfThenElse:
			n.ifs++
		}
		return true
	})
	return &cloner{
		fors: make([]For, n.fors), realizes: make([]BlockRealize, n.realizes), blocks: make([]Block, n.blocks),
		stores: make([]BufferStore, n.stores), seqs: make([]SeqStmt, n.seqs), ifs: make([]IfThenElse, n.ifs),
		exprs: make([]Expr, n.exprs), stmts: make([]Stmt, n.stmts), ivs: make([]IterVar, n.ivs),
		ranges: make([]Range, n.ranges), regions: make([]BufferRegion, n.regions),
		bufs: make([]*Buffer, n.bufs), anns: make([]Annotation, n.anns),
	}
}

// take returns the first n elements of *slab as a full slice (capacity n)
// and advances the slab; nil for n == 0.
func take[T any](slab *[]T, n int) []T {
	if n == 0 {
		return nil
	}
	s := (*slab)[:n:n]
	*slab = (*slab)[n:]
	return s
}

func copyInto[T any](slab *[]T, src []T) []T {
	s := take(slab, len(src))
	copy(s, src)
	return s
}

func (c *cloner) annotations(a Annotations) Annotations {
	return Annotations(copyInto(&c.anns, a))
}

func (c *cloner) stmt(s Stmt) Stmt {
	switch x := s.(type) {
	case nil:
		return nil
	case *For:
		f := &take(&c.fors, 1)[0]
		*f = For{Var: x.Var, ext: x.ext, extExpr: x.extExpr, Kind: x.Kind, Thread: x.Thread,
			Annotations: c.annotations(x.Annotations), Body: c.stmt(x.Body)}
		return f
	case *BlockRealize:
		return c.realize(x)
	case *Block:
		return c.block(x)
	case *SeqStmt:
		q := &take(&c.seqs, 1)[0]
		q.Stmts = take(&c.stmts, len(x.Stmts))
		for i, st := range x.Stmts {
			q.Stmts[i] = c.stmt(st)
		}
		return q
	case *BufferStore:
		st := &take(&c.stores, 1)[0]
		*st = BufferStore{Buffer: x.Buffer, Value: x.Value, Indices: copyInto(&c.exprs, x.Indices)}
		return st
	case *IfThenElse:
		n := &take(&c.ifs, 1)[0]
		*n = IfThenElse{Cond: x.Cond, Then: c.stmt(x.Then), Else: c.stmt(x.Else)}
		return n
	}
	panic("kernels: CloneStmt of unknown statement")
}

func (c *cloner) realize(x *BlockRealize) *BlockRealize {
	if x == nil {
		return nil
	}
	r := &take(&c.realizes, 1)[0]
	*r = BlockRealize{IterValues: copyInto(&c.exprs, x.IterValues), Predicate: x.Predicate}
	if x.Block != nil {
		r.Block = c.block(x.Block)
	}
	return r
}

func (c *cloner) regionList(src []BufferRegion) []BufferRegion {
	out := take(&c.regions, len(src))
	for i, r := range src {
		out[i] = BufferRegion{Buffer: r.Buffer, Region: copyInto(&c.ranges, r.Region)}
	}
	return out
}

func (c *cloner) block(x *Block) *Block {
	b := &take(&c.blocks, 1)[0]
	*b = Block{
		Name:         x.Name,
		IterVars:     copyInto(&c.ivs, x.IterVars),
		Reads:        c.regionList(x.Reads),
		Writes:       c.regionList(x.Writes),
		AllocBuffers: copyInto(&c.bufs, x.AllocBuffers),
		Annotations:  c.annotations(x.Annotations),
	}
	b.Init = c.stmt(x.Init)
	b.Body = c.stmt(x.Body)
	return b
}
