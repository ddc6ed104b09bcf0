package schedule

import (
	"slices"

	"dragonx/kernels/ir"
)

// Annotate sets annotation key of a block or a loop (rv is a BlockRV or a
// LoopRV) to value, replacing any previous value.
func (s *Schedule) Annotate(rv RV, key string, value ir.AnnValue) error {
	const prim = "Annotate"
	anns, err := s.annotations(prim, rv)
	if err != nil {
		return err
	}
	if value == nil {
		return s.errorf(prim, "no value for annotation %q", key)
	}
	anns.Set(key, value)
	return s.done(prim)
}

// Unannotate removes annotation key of a block or a loop; it is an error
// if there is none.
func (s *Schedule) Unannotate(rv RV, key string) error {
	const prim = "Unannotate"
	anns, err := s.annotations(prim, rv)
	if err != nil {
		return err
	}
	if !anns.Delete(key) {
		return s.errorf(prim, "%v has no annotation %q", rv, key)
	}
	return s.done(prim)
}

func (s *Schedule) annotations(prim string, rv RV) (*ir.Annotations, error) {
	switch x := rv.(type) {
	case BlockRV:
		b, err := s.block(prim, x)
		if err != nil {
			return nil, err
		}
		return &b.Annotations, nil
	case LoopRV:
		l, err := s.loop(prim, x)
		if err != nil {
			return nil, err
		}
		return &l.Annotations, nil
	}
	return nil, s.errorf(prim, "expected a block or a loop, got %v", rv)
}

// SetScope sets the storage scope of the i-th buffer block b writes (TVM's
// set_scope). The buffer must be allocated by a block (not a function
// parameter); every use of it is redirected to the new buffer, which is
// named <name>_<scope> as TVM's WithScope names it (B becomes B_shared).
func (s *Schedule) SetScope(b BlockRV, i int64, scope string) error {
	defer s.releasePaths(s.markPaths())
	const prim = "SetScope"
	blk, bp, err := s.blockContext(prim, b)
	if err != nil {
		return err
	}
	buf, err := s.accessBuffer(prim, b, blk, i, true)
	if err != nil {
		return err
	}
	if buf.Scope() == scope {
		return nil
	}
	if err := s.checkStorageScope(prim, scope); err != nil {
		return err
	}
	site := allocationSite(bp.path, buf)
	if site == nil {
		return s.errorf(prim, "buffer %s is not allocated by a block (it is a function parameter), so its scope cannot be set", buf.Name())
	}
	// TVM's WithScope renames the buffer <name>_<scope> as it moves it.
	ir.ReplaceBuffer(site, buf, ir.NewBuffer(buf.Name()+"_"+scope, buf.DType(), buf.Shape(), scope))
	return s.done(prim)
}

// allocationSite returns the block on path that allocates buf.
func allocationSite(path []ir.Stmt, buf *ir.Buffer) *ir.Block {
	for i := len(path) - 1; i >= 0; i-- {
		if b, ok := path[i].(*ir.Block); ok && slices.Contains(b.AllocBuffers, buf) {
			return b
		}
	}
	return nil
}

// StorageAlignKey is the block annotation StorageAlign writes (TVM's
// attr::buffer_dim_align): a list of [buffer_index, axis, factor, offset].
const StorageAlignKey = "buffer_dim_align"

// StorageAlign asks that dimension axis of the i-th buffer block b writes
// be padded so that its stride is a multiple of factor plus offset (TVM's
// storage_align). It records the request in the block's buffer_dim_align
// annotation, which lowering honours; the buffer must be allocated by a
// block, factor must be positive and axis in [-ndim, ndim).
func (s *Schedule) StorageAlign(b BlockRV, i, axis, factor, offset int64) error {
	defer s.releasePaths(s.markPaths())
	const prim = "StorageAlign"
	blk, bp, err := s.blockContext(prim, b)
	if err != nil {
		return err
	}
	buf, err := s.accessBuffer(prim, b, blk, i, true)
	if err != nil {
		return err
	}
	if factor <= 0 {
		return s.errorf(prim, "factor %d is not positive", factor)
	}
	nd := int64(buf.Rank())
	if axis < -nd || axis >= nd {
		return s.errorf(prim, "axis %d is out of range for %s, which has %d dimension(s): want [%d, %d)", axis, buf.Name(), nd, -nd, nd)
	}
	if axis < 0 {
		axis += nd
	}
	if allocationSite(bp.path, buf) == nil {
		return s.errorf(prim, "buffer %s is not allocated by a block (it is a function parameter), so it cannot be aligned", buf.Name())
	}
	var list ir.AnnArray
	if v, ok := blk.Annotations.Get(StorageAlignKey); ok {
		arr, ok := v.(ir.AnnArray)
		if !ok || !validAlignAnnotation(arr) {
			return s.errorf(prim, "the %s annotation of %v is not a list of [buffer_index, axis, factor, offset]", StorageAlignKey, b)
		}
		list = slices.Clone(arr)
	}
	entry := ir.AnnArray{ir.AnnInt(i), ir.AnnInt(axis), ir.AnnInt(factor), ir.AnnInt(offset)}
	replaced := false
	for j, e := range list {
		t := e.(ir.AnnArray)
		if t[0] == ir.AnnInt(i) && t[1] == ir.AnnInt(axis) {
			list[j] = entry
			replaced = true
			break
		}
	}
	if !replaced {
		list = append(list, entry)
	}
	blk.Annotations.Set(StorageAlignKey, list)
	return s.done(prim)
}

func validAlignAnnotation(arr ir.AnnArray) bool {
	for _, e := range arr {
		t, ok := e.(ir.AnnArray)
		if !ok || len(t) != 4 {
			return false
		}
		for _, x := range t {
			if _, ok := x.(ir.AnnInt); !ok {
				return false
			}
		}
	}
	return true
}
