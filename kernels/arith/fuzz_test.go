package arith

import (
	"errors"
	"testing"

	"dragonx/kernels/ir"
)

// decodeExpr turns bytes into an integer expression over i in [0, 8),
// j in [0, 16) and a free x, with a small stack machine: each byte is an
// instruction. It returns nil when the bytes do not form an expression.
func decodeExpr(data []byte, i, j, x *ir.Var) ir.Expr {
	var st []ir.Expr
	pop2 := func() (ir.Expr, ir.Expr, bool) {
		if len(st) < 2 {
			return nil, nil, false
		}
		a, b := st[len(st)-2], st[len(st)-1]
		st = st[:len(st)-2]
		return a, b, true
	}
	for _, c := range data {
		op, arg := c%16, int64(c/16)
		switch op {
		case 0:
			st = append(st, i)
		case 1:
			st = append(st, j)
		case 2:
			st = append(st, x)
		case 3:
			st = append(st, ir.Int(arg-4))
		case 4, 5, 6, 7, 8:
			a, b, ok := pop2()
			if !ok {
				return nil
			}
			st = append(st, []func(ir.Expr, ir.Expr) ir.Expr{ir.Add, ir.Sub, ir.Min, ir.Max, ir.Mul}[op-4](a, b))
		case 9, 10, 11:
			if len(st) < 1 {
				return nil
			}
			a := st[len(st)-1]
			k := ir.Int(arg%7 + 1)
			st[len(st)-1] = []func(ir.Expr, ir.Expr) ir.Expr{ir.FloorDiv, ir.FloorMod, ir.Mul}[op-9](a, k)
		case 12:
			a, b, ok := pop2()
			if !ok {
				return nil
			}
			st = append(st, ir.SelectOf(ir.LT(a, b), a, b))
		}
		if len(st) > 64 {
			return nil
		}
	}
	// Operands are shared, so a few bytes can describe a tree of 2^n
	// nodes, which any tree walk (the oracle's too) would take forever on.
	if len(st) != 1 || treeSize(st[0], 2000) > 2000 {
		return nil
	}
	return st[0]
}

// treeSize counts the nodes of e as a tree, stopping past limit.
func treeSize(e ir.Expr, limit int) int {
	n := 0
	ir.WalkExpr(e, func(ir.Expr) bool {
		n++
		return n <= limit
	})
	return n
}

func FuzzSimplify(f *testing.F) {
	f.Add([]byte{0, 0x93, 0x09, 1, 4})       // i*? // ? + j
	f.Add([]byte{0, 0x3b, 1, 4, 0x39, 0x1a}) // (i*4 + j) // 2 % ?
	f.Add([]byte{2, 0, 6, 1, 7, 0x3a})       // max(min(x, i), j) % 4
	f.Add([]byte{0, 1, 12, 2, 5})            // select(i < j, i, j) - x
	f.Fuzz(func(t *testing.T, data []byte) {
		i, j, x := ir.NewVar("i", ir.Int32), ir.NewVar("j", ir.Int32), ir.NewVar("x", ir.Int32)
		e := decodeExpr(data, i, j, x)
		if e == nil {
			return
		}
		a := NewAnalyzer()
		a.BindRange(i, 0, 8)
		a.BindRange(j, 0, 16)
		s := a.Simplify(e)
		b := a.Bound(e)
		for iv := int64(0); iv < 8; iv++ {
			for jv := int64(0); jv < 16; jv += 3 {
				for _, xv := range []int64{-7, 0, 5} {
					env := map[*ir.Var]int64{i: iv, j: jv, x: xv}
					want, err := evalInt(e, env)
					if err != nil {
						return
					}
					got, err := evalInt(s, env)
					if errors.Is(err, errOverflow) {
						return
					}
					if err != nil || got != want {
						t.Fatalf("Simplify(%s) = %s: at i=%d j=%d x=%d got %d (%v), want %d", ir.ExprString(e), ir.ExprString(s), iv, jv, xv, got, err, want)
					}
					if want < b.Min || want > b.Max {
						t.Fatalf("Bound(%s) = %v excludes %d", ir.ExprString(e), b, want)
					}
				}
			}
		}
	})
}
