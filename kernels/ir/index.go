package ir

import (
	"fmt"
	"slices"
)

// Index records where every statement of a function sits, for the
// navigation schedule primitives need (TVM's sref tree): the parent of a
// statement, the loops above a block, its BlockRealize, its scope block.
//
// An Index is a snapshot: it stays valid while the tree is changed through
// Replace, or when Reindex is called on a subtree after editing it in place.
// Lookups are map reads; building an Index walks the function once.
// An Index is not safe for concurrent use.
type Index struct {
	f      *PrimFunc
	parent map[Stmt]Stmt
}

// NewIndex indexes f.
func NewIndex(f *PrimFunc) *Index {
	ix := &Index{f: f, parent: make(map[Stmt]Stmt, 64)}
	ix.add(f.Body, nil)
	return ix
}

// Func returns the indexed function.
func (ix *Index) Func() *PrimFunc { return ix.f }

func (ix *Index) add(s Stmt, parent Stmt) {
	if s == nil {
		return
	}
	ix.parent[s] = parent
	switch x := s.(type) {
	case *For:
		ix.add(x.Body, x)
	case *BlockRealize:
		ix.add(x.Block, x)
	case *Block:
		ix.add(x.Init, x)
		ix.add(x.Body, x)
	case *SeqStmt:
		for _, c := range x.Stmts {
			ix.add(c, x)
		}
	case *IfThenElse:
		ix.add(x.Then, x)
		ix.add(x.Else, x)
	}
}

func (ix *Index) remove(s Stmt) {
	WalkStmt(s, func(c Stmt) bool {
		delete(ix.parent, c)
		return true
	})
}

// Contains reports whether s is in the indexed tree.
func (ix *Index) Contains(s Stmt) bool {
	_, ok := ix.parent[s]
	return ok
}

// Parent returns the statement that holds s: a For, BlockRealize (for a
// Block), Block (for its Init or Body), SeqStmt or IfThenElse; nil for the
// root BlockRealize and for statements not in the tree.
func (ix *Index) Parent(s Stmt) Stmt { return ix.parent[s] }

// Realize returns the BlockRealize of b, or nil if b is not in the tree.
func (ix *Index) Realize(b *Block) *BlockRealize {
	r, _ := ix.parent[b].(*BlockRealize)
	return r
}

// ParentBlock returns the nearest block strictly above s (its scope
// block); nil for the root block.
func (ix *Index) ParentBlock(s Stmt) *Block {
	for p := ix.parent[s]; p != nil; p = ix.parent[p] {
		if b, ok := p.(*Block); ok && b != s {
			return b
		}
	}
	return nil
}

// Loops returns the loops between s and its scope block, outermost first:
// what TVM's GetLoops returns for a block.
func (ix *Index) Loops(s Stmt) []*For {
	var out []*For
	p := ix.parent[s]
	if _, ok := s.(*Block); ok {
		p = ix.parent[p] // skip the BlockRealize
	}
	for ; p != nil; p = ix.parent[p] {
		if _, ok := p.(*Block); ok {
			break
		}
		if f, ok := p.(*For); ok {
			out = append(out, f)
		}
	}
	slices.Reverse(out)
	return out
}

// IsAncestor reports whether a is s or lies above s.
func (ix *Index) IsAncestor(a, s Stmt) bool {
	for p := s; p != nil; p = ix.parent[p] {
		if p == a {
			return true
		}
	}
	return false
}

// Blocks returns the blocks of the function in pre-order (program order).
func (ix *Index) Blocks() []*Block { return Blocks(ix.f) }

// Block returns the unique block named name. It is an error if there is
// none or more than one, as for TVM's GetBlock.
func (ix *Index) Block(name string) (*Block, error) { return FindBlock(ix.f, name) }

// Replace puts new where old is in the tree and re-indexes. old must be in
// the tree. new may be nil only when old's parent is a SeqStmt: old is then
// removed from the sequence, and a sequence left with one statement is
// replaced by that statement, as TVM normalises SeqStmt. A Block may only be
// replaced by a Block, and the root BlockRealize by a BlockRealize.
func (ix *Index) Replace(old, new Stmt) {
	p, ok := ix.parent[old]
	if !ok {
		panic("kernels: Index.Replace of a statement not in the tree")
	}
	ix.remove(old)
	switch x := p.(type) {
	case nil:
		ix.f.Body = new.(*BlockRealize)
	case *For:
		x.Body = mustStmt(new)
	case *BlockRealize:
		x.Block = new.(*Block)
	case *Block:
		if x.Init == old {
			x.Init = new
		} else {
			x.Body = mustStmt(new)
		}
	case *IfThenElse:
		if x.Then == old {
			x.Then = mustStmt(new)
		} else {
			x.Else = new
		}
	case *SeqStmt:
		i := slices.Index(x.Stmts, old)
		if new != nil {
			x.Stmts[i] = new
			break
		}
		x.Stmts = slices.Delete(x.Stmts, i, i+1)
		if len(x.Stmts) == 1 {
			only := x.Stmts[0]
			ix.Replace(x, only)
			return
		}
	}
	ix.add(new, p)
}

func mustStmt(s Stmt) Stmt {
	if s == nil {
		panic("kernels: Index.Replace with nil outside a sequence")
	}
	return s
}

// Reindex re-records the subtree of s (which must be in the tree) after it
// was edited in place. Entries of statements that were removed from the
// subtree may linger; they are harmless unless looked up.
func (ix *Index) Reindex(s Stmt) {
	p, ok := ix.parent[s]
	if !ok {
		panic("kernels: Index.Reindex of a statement not in the tree")
	}
	ix.add(s, p)
}

// Blocks returns every block of f in pre-order, the root first.
func Blocks(f *PrimFunc) []*Block {
	var out []*Block
	WalkStmt(f.Body, func(s Stmt) bool {
		if b, ok := s.(*Block); ok {
			out = append(out, b)
		}
		return true
	})
	return out
}

// FindBlock returns the unique block named name in f.
func FindBlock(f *PrimFunc, name string) (*Block, error) {
	var found *Block
	n := 0
	WalkStmt(f.Body, func(s Stmt) bool {
		if b, ok := s.(*Block); ok && b.Name == name {
			found = b
			n++
		}
		return true
	})
	switch n {
	case 0:
		return nil, fmt.Errorf("kernels: no block named %q in %s", name, f.Name)
	case 1:
		return found, nil
	}
	return nil, fmt.Errorf("kernels: %d blocks named %q in %s", n, name, f.Name)
}

// ChildBlocks returns the blocks directly under s (a Block's Body, or the
// statement itself otherwise), in program order, without descending into
// them: TVM's GetChildBlocks.
func ChildBlocks(s Stmt) []*Block {
	rs := ChildRealizes(s)
	out := make([]*Block, len(rs))
	for i, r := range rs {
		out[i] = r.Block
	}
	return out
}

// ChildRealizes is ChildBlocks returning the BlockRealizes.
func ChildRealizes(s Stmt) []*BlockRealize {
	var out []*BlockRealize
	start := s
	switch x := s.(type) {
	case *BlockRealize:
		start = x.Block.Body
	case *Block:
		start = x.Body
	}
	WalkStmt(start, func(c Stmt) bool {
		if r, ok := c.(*BlockRealize); ok {
			out = append(out, r)
			return false
		}
		return true
	})
	return out
}
