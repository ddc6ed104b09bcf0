package schedule

// IsReductionBlock reports whether b is a reduction block in its scope
// (TVM's IsReductionBlock): it has an init statement, affine bindings,
// only data-parallel and reduction iter vars, is the only writer of its
// outputs in the scope, and does not index them with reduction iter vars.
// It is false for the root block and for a block the schedule does not
// hold. Rules (CrossThreadReduction) ask it before transforming a block.
func (s *Schedule) IsReductionBlock(b BlockRV) bool {
	const prim = "IsReductionBlock"
	blk, bp, err := s.blockContext(prim, b)
	if err != nil || bp.scope == nil {
		return false
	}
	sc, err := s.scopeOf(prim, b, blk, bp)
	if err != nil {
		return false
	}
	return s.reductionProblem(blk, bp.realize, bp.loops, sc.isDominant(blk)) == 0
}
