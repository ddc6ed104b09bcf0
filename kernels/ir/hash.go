package ir

import (
	"math"
	"math/bits"
)

// HashVersion changes whenever Hash would give a different value for the
// same IR. Stored hashes (workload databases) record it.
const HashVersion = 1

// Hash returns a structural hash of f: two functions that are Equal hash
// the same, whatever their pointers, and the value is stable across runs,
// processes and machines (it depends on no map iteration order and no
// address).
//
// As TVM's StructuralHash, it ignores the names of variables (a variable is
// hashed by the order in which it is defined) but not their dtypes. Unlike
// TVM, it includes buffer names, block names and the function name, because
// trace replay looks blocks up by name and names cache stages after
// buffers: two functions that differ only there do not replay alike.
func Hash(f *PrimFunc) uint64 {
	var h hasher
	h.tag(tagFunc)
	h.str(f.Name)
	h.annotations(f.Attrs)
	h.u64(uint64(len(f.Params)))
	for _, b := range f.Params {
		h.defBuffer(b)
	}
	h.stmt(f.Body)
	return h.h
}

// HashStmt returns the structural hash of a statement (see Hash). Variables
// and buffers it uses without defining are hashed by name.
func HashStmt(s Stmt) uint64 {
	var h hasher
	h.stmt(s)
	return h.h
}

// HashExpr returns the structural hash of an expression; its variables are
// free and hashed by name.
func HashExpr(e Expr) uint64 {
	var h hasher
	h.expr(e)
	return h.h
}

const (
	tagFunc uint64 = iota + 1
	tagFor
	tagRealize
	tagBlock
	tagSeq
	tagStore
	tagIf
	tagNil
	tagIntImm
	tagFloatImm
	tagVar
	tagFreeVar
	tagBinary
	tagNot
	tagSelect
	tagCast
	tagCall
	tagLoad
	tagBuffer
	tagFreeBuffer
	tagAnnInt
	tagAnnFloat
	tagAnnString
	tagAnnBool
	tagAnnArray
	tagSymExtent
)

// hasher accumulates a 64-bit hash. Defined variables and buffers are kept
// in slices, searched from the end: a function defines a few dozen, and the
// most recent are the most used.
type hasher struct {
	h    uint64
	vars []*Var
	bufs []*Buffer
}

func (h *hasher) u64(x uint64) {
	x *= 0x9e3779b97f4a7c15
	x ^= x >> 32
	h.h = (h.h ^ x) * 0xbf58476d1ce4e5b9
	h.h ^= h.h >> 29
	h.h = bits.RotateLeft64(h.h, 17)
}

func (h *hasher) tag(t uint64) { h.u64(t) }

func (h *hasher) str(s string) {
	h.u64(uint64(len(s)))
	for len(s) >= 8 {
		h.u64(uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56)
		s = s[8:]
	}
	var w uint64
	for i := 0; i < len(s); i++ {
		w |= uint64(s[i]) << (8 * i)
	}
	h.u64(w)
}

func (h *hasher) defVar(v *Var) {
	h.vars = append(h.vars, v)
	h.u64(uint64(v.t))
}

func (h *hasher) useVar(v *Var) {
	for i := len(h.vars) - 1; i >= 0; i-- {
		if h.vars[i] == v {
			h.tag(tagVar)
			h.u64(uint64(i))
			return
		}
	}
	h.tag(tagFreeVar)
	h.u64(uint64(v.t))
	h.str(v.name)
}

func (h *hasher) bufferContent(b *Buffer) {
	h.str(b.name)
	h.u64(uint64(b.dtype))
	h.u64(uint64(len(b.shape)))
	for _, d := range b.shape {
		h.u64(uint64(d))
	}
	h.str(b.scope)
}

func (h *hasher) defBuffer(b *Buffer) {
	h.bufs = append(h.bufs, b)
	h.tag(tagBuffer)
	h.bufferContent(b)
}

func (h *hasher) useBuffer(b *Buffer) {
	for i := len(h.bufs) - 1; i >= 0; i-- {
		if h.bufs[i] == b {
			h.u64(uint64(i))
			return
		}
	}
	h.tag(tagFreeBuffer)
	h.bufferContent(b)
}

func (h *hasher) annotations(a Annotations) {
	h.u64(uint64(len(a)))
	for _, kv := range a {
		h.str(kv.Key)
		h.annValue(kv.Value)
	}
}

func (h *hasher) annValue(v AnnValue) {
	switch v := v.(type) {
	case AnnInt:
		h.tag(tagAnnInt)
		h.u64(uint64(v))
	case AnnFloat:
		h.tag(tagAnnFloat)
		h.u64(math.Float64bits(float64(v)))
	case AnnString:
		h.tag(tagAnnString)
		h.str(string(v))
	case AnnBool:
		h.tag(tagAnnBool)
		if v {
			h.u64(1)
		} else {
			h.u64(0)
		}
	case AnnArray:
		h.tag(tagAnnArray)
		h.u64(uint64(len(v)))
		for _, e := range v {
			h.annValue(e)
		}
	default:
		h.tag(tagNil)
	}
}

func (h *hasher) stmt(s Stmt) {
	switch x := s.(type) {
	case nil:
		h.tag(tagNil)
	case *For:
		h.tag(tagFor)
		h.defVar(x.Var)
		// A constant extent hashes as before symbolic extents existed, so
		// stored hashes stay valid.
		if x.extExpr != nil {
			h.tag(tagSymExtent)
			h.expr(x.extExpr)
		} else {
			h.u64(uint64(x.ext))
		}
		h.u64(uint64(x.Kind))
		h.str(x.Thread)
		h.annotations(x.Annotations)
		h.stmt(x.Body)
	case *BlockRealize:
		h.tag(tagRealize)
		h.u64(uint64(len(x.IterValues)))
		for _, v := range x.IterValues {
			h.expr(v)
		}
		if IsTrue(x.Predicate) {
			h.tag(tagNil)
		} else {
			h.expr(x.Predicate)
		}
		h.stmt(x.Block)
	case *Block:
		h.tag(tagBlock)
		h.str(x.Name)
		h.u64(uint64(len(x.IterVars)))
		for _, iv := range x.IterVars {
			h.defVar(iv.Var)
			h.u64(uint64(iv.Dom.Min))
			h.u64(uint64(iv.Dom.Extent))
			h.u64(uint64(iv.Kind))
		}
		h.u64(uint64(len(x.AllocBuffers)))
		for _, b := range x.AllocBuffers {
			h.defBuffer(b)
		}
		h.regions(x.Reads)
		h.regions(x.Writes)
		h.annotations(x.Annotations)
		h.stmt(x.Init)
		h.stmt(x.Body)
	case *SeqStmt:
		h.tag(tagSeq)
		h.u64(uint64(len(x.Stmts)))
		for _, c := range x.Stmts {
			h.stmt(c)
		}
	case *BufferStore:
		h.tag(tagStore)
		h.useBuffer(x.Buffer)
		h.expr(x.Value)
		h.exprs(x.Indices)
	case *IfThenElse:
		h.tag(tagIf)
		h.expr(x.Cond)
		h.stmt(x.Then)
		h.stmt(x.Else)
	}
}

func (h *hasher) regions(rs []BufferRegion) {
	h.u64(uint64(len(rs)))
	for _, r := range rs {
		h.useBuffer(r.Buffer)
		h.u64(uint64(len(r.Region)))
		for _, rg := range r.Region {
			h.expr(rg.Min)
			h.expr(rg.Extent)
		}
	}
}

func (h *hasher) exprs(es []Expr) {
	h.u64(uint64(len(es)))
	for _, e := range es {
		h.expr(e)
	}
}

func (h *hasher) expr(e Expr) {
	switch x := e.(type) {
	case nil:
		h.tag(tagNil)
	case *IntImm:
		h.tag(tagIntImm)
		h.u64(uint64(x.t))
		h.u64(uint64(x.v))
	case *FloatImm:
		h.tag(tagFloatImm)
		h.u64(uint64(x.t))
		h.u64(math.Float64bits(x.v))
	case *Var:
		h.useVar(x)
	case *Binary:
		h.tag(tagBinary)
		h.u64(uint64(x.op))
		h.expr(x.a)
		h.expr(x.b)
	case *Not:
		h.tag(tagNot)
		h.expr(x.a)
	case *Select:
		h.tag(tagSelect)
		h.expr(x.cond)
		h.expr(x.t)
		h.expr(x.f)
	case *Cast:
		h.tag(tagCast)
		h.u64(uint64(x.t))
		h.expr(x.a)
	case *Call:
		h.tag(tagCall)
		h.u64(uint64(x.op))
		h.u64(uint64(x.t))
		h.exprs(x.args)
	case *BufferLoad:
		h.tag(tagLoad)
		h.useBuffer(x.buf)
		h.exprs(x.idx)
	}
}
