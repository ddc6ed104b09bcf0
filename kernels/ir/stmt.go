package ir

import "fmt"

// Stmt is a statement: For, BlockRealize, Block, SeqStmt, BufferStore or
// IfThenElse.
//
// Statements are mutable: schedule primitives edit their exported fields in
// place. A statement belongs to exactly one PrimFunc (it appears once in one
// tree); to get a second, independent copy use Clone.
type Stmt interface{ isStmt() }

// ForKind is how a loop runs.
type ForKind uint8

// Loop kinds, as in TIR.
const (
	Serial ForKind = iota
	Parallel
	Vectorized
	Unrolled
	ThreadBinding
)

var forKindNames = [...]string{"serial", "parallel", "vectorized", "unrolled", "thread_binding"}

func (k ForKind) String() string {
	if int(k) < len(forKindNames) {
		return forKindNames[k]
	}
	return fmt.Sprintf("forkind(%d)", uint8(k))
}

// For is a loop: Var runs over [0, extent). Loops always start at 0, as
// TensorIR's schedule primitives keep them (offsets live in block bindings).
//
// The extent is an integer constant or, as TVM allows, an expression of the
// variables of enclosing loops (compute-at can make one:
// range(rh_0 % 2 * 96 + 96)). It is read through one API: ConstExtent
// gives the constant and whether there is one (no allocation, the fast path
// every constant-only consumer takes), ExtentExpr gives the expression in
// both cases. It is written with SetExtent (a constant) or SetExtentExpr
// (folds an integer immediate to a constant), or set at construction by
// NewFor, Loop or LoopExpr.
//
// A loop of kind ThreadBinding has a Thread tag: "blockIdx.x", "vthread.x",
// "threadIdx.x", ... (see IsThreadTag); the other kinds have none.
type For struct {
	Var         *Var
	ext         int64 // the extent when extExpr is nil
	extExpr     Expr  // the symbolic extent; nil when constant
	Kind        ForKind
	Thread      string
	Annotations Annotations
	Body        Stmt
}

// ConstExtent returns the loop's extent and true when it is a constant,
// or 0 and false when it is symbolic (an expression of outer loop vars).
func (f *For) ConstExtent() (int64, bool) { return f.ext, f.extExpr == nil }

// ExtentExpr returns the extent as an expression: an immediate of the loop
// var's dtype for a constant extent, the symbolic expression otherwise.
func (f *For) ExtentExpr() Expr {
	if f.extExpr != nil {
		return f.extExpr
	}
	return IntImmOf(f.Var.t, f.ext)
}

// SymbolicExtent returns the extent expression of a loop whose extent is
// not constant, and nil for a constant extent.
func (f *For) SymbolicExtent() Expr { return f.extExpr }

// SetExtent makes the extent the constant n.
func (f *For) SetExtent(n int64) { f.ext, f.extExpr = n, nil }

// SetExtentExpr makes the extent e; an integer immediate becomes a
// constant extent, so ConstExtent sees it.
func (f *For) SetExtentExpr(e Expr) {
	if c, ok := e.(*IntImm); ok {
		f.ext, f.extExpr = c.v, nil
		return
	}
	f.ext, f.extExpr = 0, e
}

// SameExtent reports whether two loops have the same extent: equal
// constants, or symbolic extents that are the same expression.
func SameExtent(a, b *For) bool {
	if a.extExpr == nil || b.extExpr == nil {
		return a.extExpr == nil && b.extExpr == nil && a.ext == b.ext
	}
	return SameExpr(a.extExpr, b.extExpr)
}

// IterKind says how a block iterates over an iter var.
type IterKind uint8

// Iter var kinds: spatial (data parallel, TVM's kDataPar, "S"), reduce
// (kCommReduce, "R") and opaque (kOpaque, "O").
const (
	Spatial IterKind = iota
	Reduce
	Opaque
)

func (k IterKind) String() string {
	switch k {
	case Spatial:
		return "spatial"
	case Reduce:
		return "reduce"
	case Opaque:
		return "opaque"
	}
	return fmt.Sprintf("iterkind(%d)", uint8(k))
}

// Letter is TVM's one-letter code used by T.axis.remap: "S", "R" or "O".
func (k IterKind) Letter() string {
	switch k {
	case Spatial:
		return "S"
	case Reduce:
		return "R"
	}
	return "O"
}

// Dom is the constant domain [Min, Min+Extent) of a block iter var.
type Dom struct {
	Min, Extent int64
}

// IterVar is a block iter var with its domain and kind.
type IterVar struct {
	Var  *Var
	Dom  Dom
	Kind IterKind
}

// BlockRealize executes a Block once for each point of the surrounding
// loops: IterValues[i] gives the value of Block.IterVars[i] in terms of the
// enclosing loop variables; the block runs only where Predicate holds
// (nil means true, as does the bool constant true).
type BlockRealize struct {
	IterValues []Expr
	Predicate  Expr
	Block      *Block
}

// Block is TensorIR's unit of computation: a named body with its own iter
// vars (the body may use only those, plus variables it defines itself), the
// regions it reads and writes, an optional Init (run on the first iteration
// of the reduce iter vars), and the buffers it allocates for its subtree.
type Block struct {
	Name         string
	IterVars     []IterVar
	Reads        []BufferRegion
	Writes       []BufferRegion
	Init         Stmt // nil when none
	AllocBuffers []*Buffer
	Annotations  Annotations
	Body         Stmt
}

// SeqStmt runs its statements in order.
type SeqStmt struct {
	Stmts []Stmt
}

// BufferStore writes Value to one element of Buffer.
type BufferStore struct {
	Buffer  *Buffer
	Value   Expr
	Indices []Expr
}

// IfThenElse runs Then when Cond holds, else Else (which may be nil).
type IfThenElse struct {
	Cond Expr
	Then Stmt
	Else Stmt
}

func (*For) isStmt()          {}
func (*BlockRealize) isStmt() {}
func (*Block) isStmt()        {}
func (*SeqStmt) isStmt()      {}
func (*BufferStore) isStmt()  {}
func (*IfThenElse) isStmt()   {}

// Store returns a BufferStore of value into buf at idx. It panics if the
// number of indices is not the buffer's rank or the value's dtype is not the
// buffer's (an integer constant is converted to a float buffer's dtype).
func Store(buf *Buffer, value Expr, idx ...Expr) *BufferStore {
	checkIndices("store", buf, idx)
	if c, ok := value.(*IntImm); ok && buf.dtype.IsFloat() {
		value = FloatImmOf(buf.dtype, float64(c.v))
	}
	if value.DType() != buf.dtype {
		panic(fmt.Sprintf("kernels: store of %s value into %s buffer %s", value.DType(), buf.dtype, buf.name))
	}
	return &BufferStore{Buffer: buf, Value: value, Indices: append([]Expr(nil), idx...)}
}

// Seq returns the statements as one: nil for none, the statement itself for
// one, otherwise a SeqStmt. Nested SeqStmts are flattened and nils dropped.
func Seq(stmts ...Stmt) Stmt {
	var flat []Stmt
	var add func(s Stmt)
	add = func(s Stmt) {
		switch s := s.(type) {
		case nil:
		case *SeqStmt:
			for _, c := range s.Stmts {
				add(c)
			}
		default:
			flat = append(flat, s)
		}
	}
	for _, s := range stmts {
		add(s)
	}
	switch len(flat) {
	case 0:
		return nil
	case 1:
		return flat[0]
	}
	return &SeqStmt{Stmts: flat}
}

// LoopVarType is the dtype TVM gives a loop or iter var of the given extent:
// int32, or int64 when the extent does not fit in 32 bits.
func LoopVarType(extent int64) DType {
	if extent > 1<<31-1 {
		return Int64
	}
	return Int32
}

// NewFor returns a serial loop over a fresh variable named name.
func NewFor(name string, extent int64, body Stmt) *For {
	return &For{Var: NewVar(name, LoopVarType(extent)), ext: extent, Body: body}
}

// Loop returns a serial loop of v over the constant extent n.
func Loop(v *Var, n int64, body Stmt) *For { return &For{Var: v, ext: n, Body: body} }

// LoopExpr returns a serial loop of v over the extent e, constant when e
// is an integer immediate (see SetExtentExpr).
func LoopExpr(v *Var, e Expr, body Stmt) *For {
	f := &For{Var: v, Body: body}
	f.SetExtentExpr(e)
	return f
}

// IsThreadTag reports whether tag is a thread tag TVM's CUDA backend knows:
// blockIdx.{x,y,z}, threadIdx.{x,y,z}, vthread or vthread.{x,y,z}.
func IsThreadTag(tag string) bool {
	switch tag {
	case "blockIdx.x", "blockIdx.y", "blockIdx.z",
		"threadIdx.x", "threadIdx.y", "threadIdx.z",
		"vthread", "vthread.x", "vthread.y", "vthread.z":
		return true
	}
	return false
}

// ThreadRank classifies a thread tag: 0 for blockIdx.*, 1 for vthread*, 2
// for threadIdx.*, -1 otherwise. Kernels nest them in that order.
func ThreadRank(tag string) int {
	switch {
	case len(tag) > 9 && tag[:9] == "blockIdx.":
		return 0
	case len(tag) >= 7 && tag[:7] == "vthread":
		return 1
	case len(tag) > 10 && tag[:10] == "threadIdx.":
		return 2
	}
	return -1
}
