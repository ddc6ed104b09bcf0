package cudagen

import (
	"context"
	"math/rand/v2"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
	"dragonx/kernels/sample"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// sampledPrograms lowers up to n accepted draws of the first benchmark
// shape of each of the 13 benchmark families.
func sampledPrograms(t *testing.T, n int) map[string][]*lower.Program {
	t.Helper()
	ctx := context.Background()
	out := map[string][]*lower.Program{}
	for _, fam := range workload.Families()[:13] {
		spec, err := workload.BenchmarkSpec(fam.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		f, err := spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		for seed := int64(1); seed <= 8 && len(out[fam.Name]) < n; seed++ {
			draws, err := sample.DrawSpec(ctx, spec, seed, 32, sample.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range draws {
				if !d.OK() || len(out[fam.Name]) == n {
					continue
				}
				s, err := trace.Replay(ctx, f, d.Trace, trace.Options{})
				if err != nil {
					t.Fatalf("%s draw %d: %v", fam.Name, d.Index, err)
				}
				p, err := lower.Lower(ctx, s.Func())
				if err != nil {
					continue
				}
				out[fam.Name] = append(out[fam.Name], p)
			}
		}
	}
	return out
}

// TestSampledVectorProofs checks the vectorization proofs on the indices
// of real programs: for every vectorized loop of sampled traces of every
// family, each index or condition the proofs accept is evaluated at random
// points of its variables' ranges (enclosing loops, thread and block
// indices), lane by lane: an aligned index must be base + lane with base a
// multiple of the width, a lane-invariant one the same on every lane, a
// uniform condition the same on every lane. Every program must also
// generate.
func TestSampledVectorProofs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for fam, ps := range sampledPrograms(t, 4) {
		for _, p := range ps {
			if _, err := Generate(p); err != nil {
				t.Errorf("%s: %v", fam, err)
			}
			for _, k := range p.Kernels {
				ranges := map[*ir.Var]int64{}
				for d := range 3 {
					if v := k.BlockIdx[d]; v != nil {
						ranges[v] = k.Grid[d]
					}
					if v := k.ThreadIdx[d]; v != nil {
						ranges[v] = k.Block[d]
					}
				}
				walkVector(k.Body, ranges, func(l *lower.Loop, rs map[*ir.Var]int64) {
					w, ok := ir.IsConstInt(l.Extent)
					if !ok || (w != 2 && w != 4) {
						return
					}
					var idx, conds []ir.Expr
					walkStmts(l.Body, func(s lower.Stmt) {
						switch x := s.(type) {
						case *lower.Store:
							idx = append(idx, x.Index)
							visitLoads(x.Value, false, func(ld *ir.BufferLoad, _ bool) { idx = append(idx, ld.Indices()...) })
						case *lower.If:
							conds = append(conds, x.Cond)
						}
					})
					for _, e := range idx {
						al := aligned(e, l.Var, w)
						c, inv := laneCoef(e, l.Var, w)
						inv = inv && c == 0
						if !al && !inv {
							continue
						}
						checked++
						for range 200 {
							env := point(rng, rs)
							env[l.Var] = 0
							base, ok := ir.EvalInt(e, env)
							if !ok {
								t.Fatalf("%s: cannot evaluate %s", fam, ir.ExprString(e))
							}
							if al && base%w != 0 {
								t.Fatalf("%s: %s proved aligned to %d, is %d at %v", fam, ir.ExprString(e), w, base, env)
							}
							for lane := int64(1); lane < w; lane++ {
								env[l.Var] = lane
								got, _ := ir.EvalInt(e, env)
								want := base
								if al {
									want = base + lane
								}
								if got != want {
									t.Fatalf("%s: %s lane %d: %d, proof says %d", fam, ir.ExprString(e), lane, got, want)
								}
							}
						}
					}
					for _, e := range conds {
						if !uniformCond(e, l.Var, w) {
							continue
						}
						checked++
						for range 200 {
							env := point(rng, rs)
							env[l.Var] = 0
							c0, _ := ir.EvalInt(e, env)
							for lane := int64(1); lane < w; lane++ {
								env[l.Var] = lane
								if c, _ := ir.EvalInt(e, env); c != c0 {
									t.Fatalf("%s: %s proved uniform, lane %d differs", fam, ir.ExprString(e), lane)
								}
							}
						}
					}
				})
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d proved indices and conditions checked", checked)
	}
	t.Logf("%d proved indices and conditions checked at 200 points each", checked)
}

func point(rng *rand.Rand, rs map[*ir.Var]int64) map[*ir.Var]int64 {
	env := make(map[*ir.Var]int64, len(rs)+1)
	for v, n := range rs {
		env[v] = rng.Int64N(n)
	}
	return env
}

// walkVector calls fn on every Vectorized loop with the ranges of the
// variables in scope (constant-extent loops around it).
func walkVector(ss []lower.Stmt, rs map[*ir.Var]int64, fn func(*lower.Loop, map[*ir.Var]int64)) {
	for _, s := range ss {
		switch x := s.(type) {
		case *lower.Loop:
			if x.Kind == lower.Vectorized {
				fn(x, rs)
				continue
			}
			n, ok := ir.IsConstInt(x.Extent)
			if !ok || n <= 0 {
				continue
			}
			inner := make(map[*ir.Var]int64, len(rs)+1)
			for k, v := range rs {
				inner[k] = v
			}
			inner[x.Var] = n
			walkVector(x.Body, inner, fn)
		case *lower.Block:
			walkVector(x.Body, rs, fn)
		case *lower.If:
			walkVector(x.Then, rs, fn)
			walkVector(x.Else, rs, fn)
		}
	}
}

func walkStmts(ss []lower.Stmt, fn func(lower.Stmt)) {
	for _, s := range ss {
		fn(s)
		switch x := s.(type) {
		case *lower.Loop:
			walkStmts(x.Body, fn)
		case *lower.Block:
			walkStmts(x.Body, fn)
		case *lower.If:
			walkStmts(x.Then, fn)
			walkStmts(x.Else, fn)
		}
	}
}
