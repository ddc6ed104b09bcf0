package arith

import (
	"fmt"
	"slices"

	"dragonx/kernels/ir"
)

// AffineBinding decides whether values (a block's iter values) are an
// affine binding of the loop iterators iters under the block's predicate
// pred (nil for none), as TVM's IsAffineBinding does: DetectIterMap at the
// surjective level must detect every value as one fused split of the
// iterators (plus a base), the splits of each iterator must not overlap
// and must divide its extent (CheckMapping), and the fused split of every
// value that uses an iterator must have scale 1, so that vl = l * 16 is
// refused while vl = l * 16 + k (k in [0, 16)) is not.
//
// Variables other than iters may appear in terms added to a value (outer
// loops, when only the loops under some loop are iterators: TVM's partial
// affine binding); they go to the base.
//
// decided is false when values or pred are outside what the rewriter of
// IterMapSimplify covers (padding, symbolic scales, predicates other than
// upper bounds, ...): the caller must then decide another way. When
// decided, err is nil for an affine binding and says why not otherwise.
func (a *Analyzer) AffineBinding(values []ir.Expr, iters []LoopIter, pred ir.Expr) (decided bool, err error) {
	if len(iters) == 0 {
		return true, nil // TVM: no loops, an affine binding
	}
	if a.im == nil {
		a.im = new(iterMapper)
	}
	m := a.im
	// An iterator of extent 1 is its only value, 0, as in TVM's rewriter
	// (whatever simplify_trivial_iterators says).
	if !m.detect(values, iters, pred, true, true) {
		return false, nil
	}
	for i, s := range m.sums {
		if len(s.args) > 0 && s.args[0].scale != 1 {
			return true, fmt.Errorf("binding %d (%s) is its loops' fused iterator times %d, not an affine binding (its smallest step must be 1)", i, ir.ExprString(values[i]), s.args[0].scale)
		}
	}
	if mk := m.surjectiveProblem(); mk != nil {
		return true, fmt.Errorf("the bindings use parts of iterator %s that overlap or do not divide its extent %d, not an affine binding", markString(mk), mk.extent)
	}
	return true, nil
}

// surjectiveProblem is TVM's CheckMapping at the surjective level on
// m.sums: it returns the first mark whose splits (reached from the sums,
// and through the fused marks' sources) cannot be ordered by lower factor
// without overlap into digits of the mark (TryNormalizeSplits, skipping
// unused digits as SearchSkipLowerFactor does), or nil.
func (m *iterMapper) surjectiveProblem() *imark {
	// The marks reached, in order of first visit, and the splits of each
	// (a handful of marks: linear lookups beat a map here, and the lists
	// are reused across calls).
	marks, splits := m.surjMarks[:0], m.surjSplits[:0]
	var visit func(s isplit)
	visit = func(s isplit) {
		k := slices.Index(marks, s.m)
		if k < 0 {
			k = len(marks)
			marks = append(marks, s.m)
			if k < cap(splits) {
				splits = splits[:k+1] // reuse the list this slot had
				splits[k] = splits[k][:0]
			} else {
				splits = append(splits, nil)
			}
			for _, c := range s.m.src {
				visit(c)
			}
		}
		splits[k] = append(splits[k], s)
	}
	for _, s := range m.sums {
		for _, a := range s.args {
			visit(a)
		}
	}
	defer func() {
		clear(marks)
		m.surjMarks, m.surjSplits = marks[:0], splits[:0]
	}()
	for i, mk := range marks {
		ss := splits[i]
		used := m.surjUsed[:0]
		for range ss {
			used = append(used, false)
		}
		m.surjUsed = used
		expected := int64(1)
		for range ss {
			j := -1
			for k, s := range ss {
				if !used[k] && s.lower == expected {
					j = k
					break
				}
			}
			if j < 0 {
				j = skipLowerFactor(ss, used, expected)
				if j < 0 {
					return mk
				}
			}
			used[j] = true
			expected = ss[j].lower * ss[j].extent
		}
		if mk.extent%expected != 0 {
			return mk
		}
	}
	return nil
}

// skipLowerFactor is TVM's SearchSkipLowerFactor with constant factors:
// among the unused splits, all of whose lower factors expected must
// divide, the one with the smallest lower factor; -1 if none.
func skipLowerFactor(ss []isplit, used []bool, expected int64) int {
	res := -1
	for i, s := range ss {
		if used[i] {
			continue
		}
		if s.lower%expected != 0 {
			return -1
		}
		if res == -1 || ss[res].lower%s.lower == 0 {
			res = i
		}
	}
	return res
}

// markString names a mark: its variable, or the sum it fuses.
func markString(mk *imark) string {
	if mk.v != nil {
		return mk.v.Name()
	}
	return ir.ExprString(sumExpr(ir.Int32, mk.src, 0, nil))
}
