//go:build torch

package dragon

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/sugarme/gotch"
	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"
)

// arena owns the tensor handles of one unit of work (a forward and backward
// pass, an optimizer step, a decoding step) and drops them all at once: gotch
// v0.7.0 frees nothing by itself.
//
// Its operations have a sticky error, like bufio.Writer: after the first
// failure every later operation does nothing and returns nil, and err reports
// the first failure. Code can then chain operations and check once.
type arena struct {
	kept []*ts.Tensor
	err  error
	// gemv says that linear's inputs are single rows (see linear).
	gemv bool
}

// keep records t for dropping, or records err.
func (a *arena) keep(t *ts.Tensor, err error) *ts.Tensor {
	if err != nil {
		a.fail("torch", err)
		return nil
	}
	a.kept = append(a.kept, t)
	return t
}

// fail records err (the first one wins).
func (a *arena) fail(op string, err error) {
	if err != nil && a.err == nil {
		// gotch's messages end in a newline.
		a.err = fmt.Errorf("dragon: %s: %s", op, strings.TrimSpace(err.Error()))
	}
}

// free drops every kept handle. The arena can be used again.
func (a *arena) free() {
	for i, t := range a.kept {
		t.Drop()
		a.kept[i] = nil
	}
	a.kept = a.kept[:0]
}

// reset frees the handles and clears the error.
func (a *arena) reset() {
	a.free()
	a.err = nil
}

func (a *arena) matmul(x, y *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Matmul(y, false))
}

// linear is x·wᵀ + b; b may be ts.None. When a.gemv is set, x holds a
// single row and the product is a matrix-vector product.
func (a *arena) linear(x, w, b *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	if !a.gemv {
		return a.keep(ts.Linear(x, w, b))
	}
	// OpenBLAS's sgemm with one row packs the whole weight matrix on every
	// call: 6x slower than sgemv for a 768x256 weight (62 vs 11 µs,
	// measured on the project's machine). KV-cache decoding of a single
	// sequence is made of such products.
	shape, err := x.Size()
	if err != nil {
		a.fail("size", err)
		return nil
	}
	var y *ts.Tensor
	if b == ts.None {
		y = a.keep(w.Mv(a.view(x, -1), false))
	} else {
		y = a.keep(b.Addmv(w, a.view(x, -1), false))
	}
	shape[len(shape)-1] = -1
	return a.view(y, shape...)
}

func (a *arena) layerNorm(x, w, b *ts.Tensor, width int64) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(ts.LayerNorm(x, []int64{width}, w, b, 1e-5, false))
}

func (a *arena) embedding(w, idx *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(ts.Embedding(w, idx, -1, false, false))
}

func (a *arena) dropout(x *ts.Tensor, p float64, train bool) *ts.Tensor {
	if a.err != nil || !train || p == 0 {
		return x
	}
	return a.keep(ts.Dropout(x, p, true))
}

func (a *arena) add(x, y *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Add(y, false))
}

func (a *arena) mul(x, y *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Mul(y, false))
}

func (a *arena) mulScalar(x *ts.Tensor, s *ts.Scalar) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.MulScalar(s, false))
}

func (a *arena) gelu(x *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Gelu(false))
}

func (a *arena) softmax(x *ts.Tensor, dtype gotch.DType) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Softmax(-1, dtype, false))
}

func (a *arena) view(x *ts.Tensor, shape ...int64) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.View(shape, false))
}

func (a *arena) reshape(x *ts.Tensor, shape ...int64) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Reshape(shape, false))
}

func (a *arena) permute(x *ts.Tensor, dims ...int64) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Permute(dims, false))
}

func (a *arena) transpose(x *ts.Tensor, d0, d1 int64) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Transpose(d0, d1, false))
}

func (a *arena) selectAt(x *ts.Tensor, dim, i int64) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Select(dim, i, false))
}

func (a *arena) narrow(x *ts.Tensor, dim, start, n int64) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Narrow(dim, start, n, false))
}

func (a *arena) indexSelect(x *ts.Tensor, dim int64, idx *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.IndexSelect(dim, idx, false))
}

func (a *arena) crossEntropySum(logits, labels *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	const reductionSum = 2
	return a.keep(logits.CrossEntropyLoss(labels, ts.None, reductionSum, ignoreLabel, 0, false))
}

func (a *arena) grad(p *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(p.Grad(false))
}

func (a *arena) sqrt(x *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Sqrt(false))
}

func (a *arena) norm(x *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Norm(false))
}

func (a *arena) stack(xs []*ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	vals := make([]ts.Tensor, len(xs))
	for i, x := range xs {
		vals[i] = *x
	}
	return a.keep(ts.Stack(vals, 0))
}

// inplace records the error of an in-place operation.
func (a *arena) inplace(op string, err error) { a.fail(op, err) }

// backward runs autograd from the scalar x.
func (a *arena) backward(x *ts.Tensor) {
	if a.err != nil {
		return
	}
	a.fail("backward", x.Backward())
}

// tensorOf copies data (whose element type matches dtype) into a new tensor
// of the given shape, without gotch's intermediate byte buffer.
func (a *arena) tensorOf(data unsafe.Pointer, n int, shape []int64, dtype gotch.DType) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(newTensor(data, n, shape, dtype))
}

func (a *arena) int64Tensor(data []int64, shape ...int64) *ts.Tensor {
	if len(data) == 0 {
		a.fail("tensor", fmt.Errorf("empty data"))
		return nil
	}
	return a.tensorOf(unsafe.Pointer(&data[0]), len(data), shape, gotch.Int64)
}

// floatTensor makes a tensor of the model's float type from float64 values.
func (a *arena) floatTensor(data []float64, dtype gotch.DType, shape ...int64) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(floatTensor(data, dtype, shape))
}

// newTensor copies n elements at data into a new tensor. data points at Go
// memory without Go pointers, which cgo lets C read during the call.
func newTensor(data unsafe.Pointer, n int, shape []int64, dtype gotch.DType) (*ts.Tensor, error) {
	if numel(shape) != int64(n) {
		panic(fmt.Sprintf("dragon: %d values for shape %v", n, shape))
	}
	size, err := gotch.DTypeSize(dtype)
	if err != nil {
		return nil, err
	}
	kind, err := gotch.DType2CInt(dtype)
	if err != nil {
		return nil, err
	}
	c := lib.AtTensorOfData(data, shape, uint(len(shape)), uint(size), int(kind))
	if err := ts.TorchErr(); err != nil {
		return nil, err
	}
	return ts.FromCtensor(unsafe.Pointer(c)), nil
}

// floatTensor makes a tensor of dtype (Float or Double) from float64 values.
func floatTensor(data []float64, dtype gotch.DType, shape []int64) (*ts.Tensor, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("empty data")
	}
	if dtype == gotch.Double {
		return newTensor(unsafe.Pointer(&data[0]), len(data), shape, dtype)
	}
	f := make([]float32, len(data))
	for i, x := range data {
		f[i] = float32(x)
	}
	return newTensor(unsafe.Pointer(&f[0]), len(f), shape, gotch.Float)
}

// float32Tensor makes a Float tensor from float32 values.
func float32Tensor(data []float32, shape []int64) (*ts.Tensor, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("empty data")
	}
	return newTensor(unsafe.Pointer(&data[0]), len(data), shape, gotch.Float)
}

// float32Values copies a Float or Double tensor's values out as float32.
func float32Values(t *ts.Tensor, dtype gotch.DType, n int) ([]float32, error) {
	if dtype == gotch.Double {
		d := make([]float64, n)
		if err := t.CopyData(d, uint(n)); err != nil {
			return nil, err
		}
		f := make([]float32, n)
		for i, x := range d {
			f[i] = float32(x)
		}
		return f, nil
	}
	f := make([]float32, n)
	if n == 0 {
		return f, nil
	}
	if err := t.CopyData(f, uint(n)); err != nil {
		return nil, err
	}
	return f, nil
}

// float64Values copies a Float or Double tensor's values out as float64.
func float64Values(t *ts.Tensor, dtype gotch.DType, n int) ([]float64, error) {
	if dtype == gotch.Double {
		d := make([]float64, n)
		if err := t.CopyData(d, uint(n)); err != nil {
			return nil, err
		}
		return d, nil
	}
	f, err := float32Values(t, dtype, n)
	if err != nil {
		return nil, err
	}
	d := make([]float64, n)
	for i, x := range f {
		d[i] = float64(x)
	}
	return d, nil
}

// scalarValue reads a one-element tensor.
func scalarValue(t *ts.Tensor, dtype gotch.DType) (float64, error) {
	v, err := float64Values(t, dtype, 1)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

func (a *arena) logSoftmax(x *ts.Tensor, dtype gotch.DType) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.LogSoftmax(-1, dtype, false))
}

func (a *arena) gather(x *ts.Tensor, dim int64, idx *ts.Tensor) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Gather(dim, idx, false, false))
}

func (a *arena) sum(x *ts.Tensor, dtype gotch.DType) *ts.Tensor {
	if a.err != nil {
		return nil
	}
	return a.keep(x.Sum(dtype, false))
}
