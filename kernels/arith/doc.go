// Package arith is the integer arithmetic that region inference and the
// legality checks of schedule primitives need, on kernels/ir expressions:
// TVM's arith module, reduced.
//
// An Analyzer holds constant ranges of variables (Bind, BindRange, usually
// the loops around a block; BindLoop for a loop, whose extent may be
// symbolic: its variable is bounded by the largest value of the extent,
// LoopBound, and relaxed over [0, extent-1], LoopSet) and answers:
//
//   - Simplify: constant folding and a canonical form for integer
//     expressions (sum of coefficient*term plus a constant), with
//     floordiv/floormod by constants distributed over multiples of the
//     divisor and removed where the ranges allow: after a split,
//     floordiv(i_0*16 + i_1, 16) becomes i_0 when 0 <= i_1 < 16.
//     Comparisons, min and max are decided where the bounds allow;
//     a >= b is written b <= a, as TVM's rewrite simplifier does, and
//     the constants of an integer comparison are gathered on one side
//     (x - 16 >= 0 is 16 <= x).
//   - Bound: constant bounds [Min, Max] of an expression (ConstIntBound),
//     and CanProve, CanProveEqual, ConstDiff built on them.
//   - EvalSet: the symbolic interval an expression covers when some
//     variables range over sets and the others stay symbolic (region
//     relaxation for compute-at and cache stages); Union, Intersect,
//     IsEmpty, ToRange and RelaxRegion work on IntSets.
//   - DetectLinear, DetectIterSum and CheckAffineBinding: linear forms,
//     mixed-radix digit sums (TVM's IterSumExpr, recognising fused and split
//     patterns like floordiv(floormod(v, a), b)) and the affine-binding
//     condition primitives check before moving blocks.
//   - IterMapSimplify: TVM's IterMapSimplify reduced to schedule bindings
//     (DetectIterMap's sums of splits of fused iterators, written back as
//     TVM's NormalizeIterMapToExpr writes them), the form Split and Fuse
//     leave bindings in; DetectBijective and BijectiveMap.Inverse: the
//     bijective iter map and its inverse that TVM's affine compute-at
//     path uses; AffineBinding: TVM's IsAffineBinding on the same
//     rewriter (surjective iter map, unit scales).
//
// Simplify with no bounds (the package-level Simplify) is what
// te.create_prim_func applies to compute bodies.
//
// The tests check every rewrite against an independent evaluator on random
// expressions and points, and FuzzSimplify does the same under the fuzzer.
package arith
