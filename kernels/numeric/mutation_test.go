package numeric_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
	"dragonx/kernels/numeric"
)

// A mutation breaks a lowered program on purpose, as a bug in the
// lowering would; it returns what it changed, or an error when it cannot
// apply to the program.
type mutation func(p *lower.Program) (string, error)

// kernelLoops returns the loops of a kernel body that hold a barrier
// directly in their body (the k loop of a tiled matmul or conv).
func barrierLoop(k *lower.Kernel) *lower.Loop {
	var found *lower.Loop
	var walk func([]lower.Stmt)
	walk = func(ss []lower.Stmt) {
		for _, s := range ss {
			switch x := s.(type) {
			case *lower.Loop:
				n := 0
				for _, c := range x.Body {
					if _, ok := c.(*lower.Barrier); ok {
						n++
					}
				}
				if n >= 2 && found == nil {
					found = x
				}
				walk(x.Body)
			case *lower.Block:
				walk(x.Body)
			case *lower.If:
				walk(x.Then)
				walk(x.Else)
			}
		}
	}
	walk(k.Body)
	return found
}

// dropBarrier removes the n-th barrier (0: before the fetch, 1: between the
// fetch and the compute) of the first loop that holds two.
func dropBarrier(n int) mutation {
	return func(p *lower.Program) (string, error) {
		l := barrierLoop(p.Kernels[0])
		if l == nil {
			return "", errors.New("no loop with two barriers")
		}
		seen := 0
		for i, s := range l.Body {
			if _, ok := s.(*lower.Barrier); ok {
				if seen == n {
					l.Body = append(l.Body[:i:i], l.Body[i+1:]...)
					return fmt.Sprintf("barrier %d of loop %s dropped", n, l.Var.Name()), nil
				}
				seen++
			}
		}
		return "", errors.New("no such barrier")
	}
}

// rewrite rewrites every expression of the kernels of p with fn (stores
// get their buffer passed).
func rewrite(p *lower.Program, fn func(e ir.Expr, store *ir.Buffer) ir.Expr) {
	var walk func([]lower.Stmt)
	walk = func(ss []lower.Stmt) {
		for _, s := range ss {
			switch x := s.(type) {
			case *lower.Loop:
				x.Extent = fn(x.Extent, nil)
				walk(x.Body)
			case *lower.Block:
				walk(x.Body)
			case *lower.If:
				x.Cond = fn(x.Cond, nil)
				walk(x.Then)
				walk(x.Else)
			case *lower.Store:
				x.Index = fn(x.Index, x.Buffer)
				x.Value = fn(x.Value, nil)
			}
		}
	}
	for _, k := range p.Kernels {
		walk(k.Body)
	}
}

// shiftShared moves the region of the first shared buffer by one element
// (its Offset's last dimension +1): every access to it, the fetch's stores
// and the compute's loads, is one lower. With consumerOnly, only the
// compute's loads are, one higher (the consumer believes the region starts
// one element earlier than the producer wrote it).
func shiftShared(consumerOnly bool) mutation {
	return func(p *lower.Program) (string, error) {
		var a *lower.Alloc
		for _, x := range p.Kernels[0].Allocs {
			if x.Scope == lower.ScopeShared && a == nil {
				a = x
			}
		}
		if a == nil {
			return "", errors.New("no shared buffer")
		}
		last := len(a.Offset) - 1
		d := int64(-1)
		if consumerOnly {
			d = 1
		}
		a.Offset[last] = ir.Add(a.Offset[last], ir.Int(-d))
		rewrite(p, func(e ir.Expr, store *ir.Buffer) ir.Expr {
			if store == a.Flat {
				if consumerOnly {
					return e
				}
				return ir.Add(e, ir.Int(d))
			}
			return ir.Rewrite(e, func(x ir.Expr) ir.Expr {
				if l, ok := x.(*ir.BufferLoad); ok && l.Buffer() == a.Flat {
					return ir.Load(a.Flat, ir.Add(l.Indices()[0], ir.Int(d)))
				}
				return x
			})
		})
		if consumerOnly {
			return "shared " + a.Flat.Name() + " read one element off", nil
		}
		return "shared " + a.Flat.Name() + " shifted by one", nil
	}
}

// swapThreadVThread exchanges threadIdx.x and the vthread: each takes the
// other's extent and the other's place in the indices.
func swapThreadVThread(p *lower.Program) (string, error) {
	k := p.Kernels[0]
	var vt *lower.Loop
	for _, s := range k.Body {
		if l, ok := s.(*lower.Loop); ok && l.Kind == lower.VThread {
			vt = l
		}
	}
	tx := k.ThreadIdx[0]
	if vt == nil || tx == nil {
		return "", errors.New("no vthread loop or no threadIdx.x")
	}
	n, ok := ir.IsConstInt(vt.Extent)
	if !ok {
		return "", errors.New("vthread extent not constant")
	}
	m := map[*ir.Var]ir.Expr{tx: vt.Var, vt.Var: tx}
	rewrite(p, func(e ir.Expr, _ *ir.Buffer) ir.Expr { return ir.SubstituteMap(e, m) })
	vt.Extent = ir.Int(k.Block[0])
	k.Block[0] = n
	return fmt.Sprintf("threadIdx.x (%d) and vthread.x (%d) exchanged", vt.Extent.(*ir.IntImm).Value(), n), nil
}

// dropPredicate replaces the first If that is not a reduction init by its
// then branch (an imperfect split's predicate removed).
func dropPredicate(p *lower.Program) (string, error) {
	what := ""
	var walk func([]lower.Stmt) []lower.Stmt
	walk = func(ss []lower.Stmt) []lower.Stmt {
		var out []lower.Stmt
		for _, s := range ss {
			switch x := s.(type) {
			case *lower.Loop:
				x.Body = walk(x.Body)
			case *lower.Block:
				x.Body = walk(x.Body)
			case *lower.If:
				if !x.Init && what == "" && len(x.Else) == 0 {
					what = "predicate " + ir.ExprString(x.Cond) + " dropped"
					out = append(out, walk(x.Then)...)
					continue
				}
				x.Then, x.Else = walk(x.Then), walk(x.Else)
			}
			out = append(out, s)
		}
		return out
	}
	for _, k := range p.Kernels {
		k.Body = walk(k.Body)
	}
	if what == "" {
		return "", errors.New("no predicate")
	}
	return what, nil
}

// computeBeforeFetch moves the compute phase of the k loop before the
// fetch phase (barrier, compute, barrier, fetch): the compute reads shared
// memory before it is fetched.
func computeBeforeFetch(p *lower.Program) (string, error) {
	l := barrierLoop(p.Kernels[0])
	if l == nil {
		return "", errors.New("no loop with two barriers")
	}
	var segs [][]lower.Stmt
	cur := []lower.Stmt{}
	for _, s := range l.Body {
		if _, ok := s.(*lower.Barrier); ok {
			segs = append(segs, cur)
			cur = []lower.Stmt{}
			continue
		}
		cur = append(cur, s)
	}
	segs = append(segs, cur)
	if len(segs) != 3 || len(segs[0]) != 0 {
		return "", fmt.Errorf("loop %s is not barrier, fetch, barrier, compute", l.Var.Name())
	}
	body := []lower.Stmt{&lower.Barrier{}}
	body = append(body, segs[2]...)
	body = append(body, &lower.Barrier{})
	l.Body = append(body, segs[1]...)
	return "compute moved before the fetch in loop " + l.Var.Name(), nil
}

// TestMutationsCaught: the gate fails every mutated program, for the
// reason the mutation must cause; the programs pass unmutated.
func TestMutationsCaught(t *testing.T) {
	ctx := context.Background()
	g := gate(t, numeric.Options{})
	progs := map[string]string{"dense": denseCase, "c2d": c2dCase}
	for _, name := range []string{"dense", "c2d"} {
		c := loadCase(t, progs[name])
		if _, err := g.Check(ctx, c.Workload, c.Program); err != nil {
			t.Fatalf("%s unmutated: %v", name, err)
		}
	}
	for _, tc := range []struct {
		name   string
		mutate mutation
		want   map[string]numeric.Kind // by program
	}{
		{"drop barrier before fetch", dropBarrier(0), map[string]numeric.Kind{"dense": numeric.KindRace, "c2d": numeric.KindRace}},
		{"drop barrier after fetch", dropBarrier(1), map[string]numeric.Kind{"dense": numeric.KindRace, "c2d": numeric.KindRace}},
		{"shift shared region", shiftShared(false), map[string]numeric.Kind{"dense": numeric.KindOutOfBounds, "c2d": numeric.KindOutOfBounds}},
		{"shift shared region, consumer only", shiftShared(true), map[string]numeric.Kind{"dense": numeric.KindOutOfBounds, "c2d": numeric.KindOutOfBounds}},
		{"swap threadIdx.x and vthread.x", swapThreadVThread, map[string]numeric.Kind{"dense": numeric.KindNaN, "c2d": numeric.KindNaN}},
		{"drop split predicate", dropPredicate, map[string]numeric.Kind{"dense": numeric.KindOutOfBounds, "c2d": numeric.KindOutOfBounds}},
		{"compute before fetch", computeBeforeFetch, map[string]numeric.Kind{"dense": numeric.KindNaN, "c2d": numeric.KindNaN}},
	} {
		for _, name := range []string{"dense", "c2d"} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				c := loadCase(t, progs[name])
				what, err := tc.mutate(c.Program)
				if err != nil {
					t.Fatalf("mutation does not apply: %v", err)
				}
				_, err = g.Check(ctx, c.Workload, c.Program)
				var ge *numeric.Error
				if !errors.As(err, &ge) {
					t.Fatalf("%s: not caught: %v", what, err)
				}
				t.Logf("%s (%s): caught: %v", filepath.Base(progs[name]), what, err)
				if ge.Kind != tc.want[name] {
					t.Errorf("caught as %s, want %s", ge.Kind, tc.want[name])
				}
			})
		}
	}
}
