// Package search is MetaSchedule's evolutionary search over the CUDA design
// space of a workload (metaschedule-reference.md §3; docs/search.md).
//
// # Mutators
//
// A Mutator changes one decision of a trace and drops the postprocessors'
// part, as TVM's mutators do (Trace::WithDecision with remove_postproc);
// the search replays the result and runs the postprocessors afresh.
// CUDAMutators are TVM's Mutator::DefaultCUDA with its probabilities:
//
//	MutateTileSize       0.9   move a divisor d > 1 of one tile of a
//	                           SamplePerfectTile decision to another tile
//	                           (the innermost stays within the instruction's
//	                           max_innermost_factor), or resample the vector
//	                           length of a cooperative fetch
//	MutateUnroll         0.08  resample the SampleCategorical of an
//	                           unroll_explicit/unroll_implicit annotation
//	MutateThreadBinding  0.02  resample the SampleCategorical that is the
//	                           factor of a Split whose inner loop is bound to
//	                           threadIdx.x
//
// A resampled categorical never keeps its value: the new index is drawn
// with the other candidates' probabilities. MutateTileSize draws uniformly
// among all possible (source, destination, divisor) moves of a decision
// (TVM draws the source, the destination and then the divisor, retrying
// when the move is impossible: the same moves, weighted a little
// differently). Mutators are deterministic for a generator state.
package search
