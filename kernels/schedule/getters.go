package schedule

import (
	"dragonx/kernels/ir"
)

// GetBlock returns the block named name in the function named funcName
// (TVM's get_block; traces record the function name, "main"). It is an
// error if there is no such block or more than one.
func (s *Schedule) GetBlock(name, funcName string) (BlockRV, error) {
	const prim = "GetBlock"
	if funcName != "" && funcName != s.f.Name {
		return BlockRV{}, s.errorf(prim, "no function named %q (the function is %q)", funcName, s.f.Name)
	}
	var found *ir.Block
	n := 0
	ir.WalkStmt(s.f.Body, func(x ir.Stmt) bool {
		if b, ok := x.(*ir.Block); ok && b.Name == name {
			found = b
			n++
		}
		return true
	})
	switch n {
	case 0:
		return BlockRV{}, s.errorf(prim, "no block named %q", name)
	case 1:
		return s.newBlockRV(found), nil
	}
	return BlockRV{}, s.errorf(prim, "%d blocks are named %q", n, name)
}

// GetLoops returns the loops above b up to its scope block, outermost
// first.
func (s *Schedule) GetLoops(b BlockRV) ([]LoopRV, error) {
	blk := s.blockOf(b)
	if blk == nil {
		return nil, s.errorf("GetLoops", "unknown block random variable")
	}
	// A walk to the block in the scratch path, without the copies
	// locateBlock makes: GetLoops is the most frequent instruction.
	if !s.findPath(blk) {
		return nil, s.staleBlock("GetLoops", b, blk)
	}
	n := 0
	first := len(s.path) - 2
	for i := len(s.path) - 3; i >= 0; i-- {
		if _, isBlock := s.path[i].(*ir.Block); isBlock {
			break
		}
		if _, isFor := s.path[i].(*ir.For); isFor {
			n++
			first = i
		}
	}
	out := make([]LoopRV, 0, n)
	for _, x := range s.path[first : len(s.path)-2] {
		if l, ok := x.(*ir.For); ok {
			out = append(out, s.newLoopRV(l))
		}
	}
	return out, nil
}

// GetChildBlocks returns the blocks directly under a block (in its body)
// or a loop, in program order. rv is a BlockRV or a LoopRV.
func (s *Schedule) GetChildBlocks(rv RV) ([]BlockRV, error) {
	const prim = "GetChildBlocks"
	var under ir.Stmt
	switch x := rv.(type) {
	case BlockRV:
		b, err := s.block(prim, x)
		if err != nil {
			return nil, err
		}
		under = b
	case LoopRV:
		l, err := s.loop(prim, x)
		if err != nil {
			return nil, err
		}
		under = l.Body
	default:
		return nil, s.errorf(prim, "expected a block or a loop, got %v", rv)
	}
	rs := childRealizes(under)
	out := make([]BlockRV, len(rs))
	for i, r := range rs {
		out[i] = s.newBlockRV(r.Block)
	}
	return out, nil
}

// GetProducers returns the blocks of b's scope that b depends on (that
// write what it reads, or what it also writes), in TVM's order.
func (s *Schedule) GetProducers(b BlockRV) ([]BlockRV, error) {
	return s.relatives("GetProducers", b, true)
}

// GetConsumers returns the blocks of b's scope that depend on b.
func (s *Schedule) GetConsumers(b BlockRV) ([]BlockRV, error) {
	return s.relatives("GetConsumers", b, false)
}

func (s *Schedule) relatives(prim string, rv BlockRV, producers bool) ([]BlockRV, error) {
	defer s.releasePaths(s.markPaths())
	b, bp, err := s.blockContext(prim, rv)
	if err != nil {
		return nil, err
	}
	sc, err := s.scopeOf(prim, rv, b, bp)
	if err != nil {
		return nil, err
	}
	var list []*ir.Block
	if producers {
		list = sc.producers(b)
	} else {
		list = sc.consumers(b)
	}
	out := make([]BlockRV, len(list))
	for i, x := range list {
		out[i] = s.newBlockRV(x)
	}
	return out, nil
}
