package ir

import "fmt"

// Buffer is a multi-dimensional array: a function parameter or a buffer
// allocated by a block. Like expressions, a Buffer is immutable and
// identified by its pointer; to change its scope (SetScope) or name, make a
// new Buffer with WithScope or WithName and replace the old one everywhere
// (ReplaceBuffer).
type Buffer struct {
	name  string
	dtype DType
	shape []int64
	scope string
}

// NewBuffer returns a buffer. An empty scope means "global". The shape is
// copied. Invalid shapes (a dimension < 1) are not rejected here, so that
// builders can report them with context; Verify reports them.
func NewBuffer(name string, dtype DType, shape []int64, scope string) *Buffer {
	if scope == "" {
		scope = "global"
	}
	return &Buffer{name: name, dtype: dtype, shape: append([]int64(nil), shape...), scope: scope}
}

// Name returns the buffer's name. Names need not be unique (the printer
// renames duplicates), but cache stages and trace lookups use them.
func (b *Buffer) Name() string { return b.name }

// DType returns the element type.
func (b *Buffer) DType() DType { return b.dtype }

// Shape returns the extents; the slice must not be modified.
func (b *Buffer) Shape() []int64 { return b.shape }

// Rank returns the number of dimensions.
func (b *Buffer) Rank() int { return len(b.shape) }

// Scope returns the storage scope: "global", "shared", "local", ...
func (b *Buffer) Scope() string { return b.scope }

// NumElements is the product of the extents.
func (b *Buffer) NumElements() int64 {
	n := int64(1)
	for _, d := range b.shape {
		n *= d
	}
	return n
}

// WithScope returns a copy of b in another storage scope.
func (b *Buffer) WithScope(scope string) *Buffer {
	return NewBuffer(b.name, b.dtype, b.shape, scope)
}

// WithName returns a copy of b with another name.
func (b *Buffer) WithName(name string) *Buffer {
	return NewBuffer(name, b.dtype, b.shape, b.scope)
}

func (b *Buffer) String() string {
	return fmt.Sprintf("%s%v(%s, %s)", b.name, b.shape, b.dtype, b.scope)
}

// Range is the half-open interval [Min, Min+Extent) of one buffer dimension
// in an access region.
type Range struct {
	Min, Extent Expr
}

// RangeOf returns [min, min+extent) with int32 constants.
func RangeOf(min, extent int64) Range { return Range{Min: Int(min), Extent: Int(extent)} }

// PointRange returns the single point e.
func PointRange(e Expr) Range { return Range{Min: e, Extent: IntImmOf(indexType(e), 1)} }

func indexType(e Expr) DType {
	if t := e.DType(); t.IsInt() {
		return t
	}
	return Int32
}

// BufferRegion is the part of a buffer a block reads or writes: one Range
// per dimension, in terms of the block's iter vars.
type BufferRegion struct {
	Buffer *Buffer
	Region []Range
}

// FullRegion returns the whole of b.
func FullRegion(b *Buffer) BufferRegion {
	r := make([]Range, len(b.shape))
	for i, d := range b.shape {
		r[i] = RangeOf(0, d)
	}
	return BufferRegion{Buffer: b, Region: r}
}

// PointRegion returns the single element of b at idx.
func PointRegion(b *Buffer, idx ...Expr) BufferRegion {
	checkIndices("region", b, idx)
	r := make([]Range, len(idx))
	for i, e := range idx {
		r[i] = PointRange(e)
	}
	return BufferRegion{Buffer: b, Region: r}
}
