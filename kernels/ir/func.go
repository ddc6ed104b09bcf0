package ir

// PrimFunc is a tensor program: TensorIR's tir.PrimFunc. Params are the
// argument buffers in order. Body realizes the root block, named "root",
// which has no iter vars and allocates the intermediate buffers, exactly as
// TVM's te.create_prim_func makes it.
type PrimFunc struct {
	Name   string
	Params []*Buffer
	Attrs  Annotations
	Body   *BlockRealize
}

// RootBlockName is the name of every function's root block.
const RootBlockName = "root"

// NewPrimFunc returns a function named name over params whose root block
// allocates allocs and runs body. Attrs get TVM's defaults: global_symbol
// = name and tir.noalias = true.
func NewPrimFunc(name string, params []*Buffer, allocs []*Buffer, body Stmt) *PrimFunc {
	root := &Block{Name: RootBlockName, AllocBuffers: allocs, Body: body}
	f := &PrimFunc{Name: name, Params: params, Body: &BlockRealize{Block: root}}
	f.Attrs.Set("global_symbol", AnnString(name))
	f.Attrs.Set("tir.noalias", AnnBool(true))
	return f
}

// Root returns the root block.
func (f *PrimFunc) Root() *Block { return f.Body.Block }

// Param returns the parameter buffer named name, or nil.
func (f *PrimFunc) Param(name string) *Buffer {
	for _, b := range f.Params {
		if b.name == name {
			return b
		}
	}
	return nil
}
