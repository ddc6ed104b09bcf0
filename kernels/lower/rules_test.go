package lower

import (
	"context"
	"errors"
	"strings"
	"testing"

	"dragonx/kernels/ir"
)

// The rule tests build small scheduled functions by hand. Blocks have no
// iter vars: their bodies and regions use the loop vars directly, which
// lowering accepts (it substitutes bindings, of which there are none).

func threadLoop(v *ir.Var, tag string, n int64, body ...ir.Stmt) *ir.For {
	f := ir.Loop(v, n, ir.Seq(body...))
	f.Kind, f.Thread = ir.ThreadBinding, tag
	return f
}

func serial(v *ir.Var, n int64, body ...ir.Stmt) *ir.For { return ir.Loop(v, n, ir.Seq(body...)) }

// copyBlock is a block dst[di] = src[si] (one-dimensional buffers).
func copyBlock(name string, dst *ir.Buffer, di ir.Expr, src *ir.Buffer, si ir.Expr, pred ir.Expr) *ir.BlockRealize {
	b := &ir.Block{
		Name:   name,
		Reads:  []ir.BufferRegion{ir.PointRegion(src, si)},
		Writes: []ir.BufferRegion{ir.PointRegion(dst, di)},
		Body:   ir.Store(dst, ir.Load(src, si), di),
	}
	return &ir.BlockRealize{Block: b, Predicate: pred}
}

func buf(name string, n int64, scope string) *ir.Buffer {
	return ir.NewBuffer(name, ir.Float32, []int64{n}, scope)
}

func lowerOne(t *testing.T, params, allocs []*ir.Buffer, body ...ir.Stmt) (*Program, error) {
	t.Helper()
	return Lower(context.Background(), ir.NewPrimFunc("f", params, allocs, ir.Seq(body...)))
}

// TestLaunchConfig: grid and block dimensions come from the blockIdx and
// threadIdx extents, a tag bound twice shares one index, and what cannot
// be launched is an error naming the cause.
func TestLaunchConfig(t *testing.T) {
	A, B := buf("A", 4096, "global"), buf("B", 4096, "global")
	bx, by, tx, ty, tx2 := ir.NewVar("bx", ir.Int32), ir.NewVar("by", ir.Int32), ir.NewVar("tx", ir.Int32), ir.NewVar("ty", ir.Int32), ir.NewVar("tx2", ir.Int32)
	idx := ir.Add(ir.Mul(bx, ir.Int(64)), tx)
	cases := []struct {
		name        string
		body        []ir.Stmt
		grid, block [3]int64
		err         string
	}{
		{"x only", []ir.Stmt{threadLoop(bx, "blockIdx.x", 64, threadLoop(tx, "threadIdx.x", 64, copyBlock("c", B, idx, A, idx, nil)))},
			[3]int64{64, 1, 1}, [3]int64{64, 1, 1}, ""},
		{"x and y", []ir.Stmt{threadLoop(bx, "blockIdx.x", 16, threadLoop(by, "blockIdx.y", 4, threadLoop(tx, "threadIdx.x", 8, threadLoop(ty, "threadIdx.y", 8,
			copyBlock("c", B, ir.Add(ir.Mul(ir.Add(ir.Mul(bx, ir.Int(4)), by), ir.Int(64)), ir.Add(ir.Mul(tx, ir.Int(8)), ty)), A, ir.Int(0), nil)))))},
			[3]int64{16, 4, 1}, [3]int64{8, 8, 1}, ""},
		{"tag bound twice", []ir.Stmt{threadLoop(bx, "blockIdx.x", 64, threadLoop(tx, "threadIdx.x", 64, copyBlock("c", B, idx, A, idx, nil)),
			threadLoop(tx2, "threadIdx.x", 64, copyBlock("d", A, ir.Add(ir.Mul(bx, ir.Int(64)), tx2), B, idx, nil)))},
			[3]int64{64, 1, 1}, [3]int64{64, 1, 1}, ""},
		{"tag bound with two extents", []ir.Stmt{threadLoop(bx, "blockIdx.x", 64, threadLoop(tx, "threadIdx.x", 64, copyBlock("c", B, idx, A, idx, nil)),
			threadLoop(tx2, "threadIdx.x", 32, copyBlock("d", A, tx2, B, tx2, nil)))},
			[3]int64{}, [3]int64{}, "threadIdx.x is bound with extent 64 and, at loop tx2, 32"},
		{"host loop", []ir.Stmt{serial(bx, 64, threadLoop(tx, "threadIdx.x", 64, copyBlock("c", B, idx, A, idx, nil)))},
			[3]int64{}, [3]int64{}, "root-level statement 0 (serial loop bx) is not a loop bound to blockIdx or threadIdx"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := lowerOne(t, []*ir.Buffer{A, B}, nil, c.body...)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			k := p.Kernels[0]
			if k.Grid != c.grid || k.Block != c.block {
				t.Errorf("grid %v block %v, want %v %v", k.Grid, k.Block, c.grid, c.block)
			}
			if strings.Contains(p.String(), " tx2") {
				t.Errorf("the second threadIdx.x loop's var is not the implicit index:\n%s", p)
			}
		})
	}
}

// TestAllocations: a shared buffer is compacted to the region one thread
// block touches (relaxed over threadIdx and the loops under the
// allocation point, narrowed by a split predicate), a local one to what
// one thread touches; accesses are flattened relative to the offset.
func TestAllocations(t *testing.T) {
	A, B := buf("A", 4096, "global"), buf("B", 4096, "global")
	S, L := buf("S", 4096, "shared"), buf("L", 4096, "local")
	bx, tx, i, tx2 := ir.NewVar("bx", ir.Int32), ir.NewVar("tx", ir.Int32), ir.NewVar("i", ir.Int32), ir.NewVar("tx2", ir.Int32)
	// S[bx*64 + tx*2 + i] = A[...] for i < 2 under tx < 32: 64 elements
	// from bx*64; then B[...] = S[bx*64 + tx2] under a second threadIdx.x.
	sIdx := ir.Add(ir.Add(ir.Mul(bx, ir.Int(64)), ir.Mul(tx, ir.Int(2))), i)
	shared := threadLoop(bx, "blockIdx.x", 64,
		threadLoop(tx, "threadIdx.x", 32, serial(i, 2, copyBlock("fetch", S, sIdx, A, sIdx, nil))),
		threadLoop(tx2, "threadIdx.x", 32, copyBlock("use", B, ir.Add(ir.Mul(bx, ir.Int(64)), tx2), S, ir.Add(ir.Mul(bx, ir.Int(64)), tx2), nil)))
	// The same with the fetch guarded by an imperfect split: tx*2+i < 40.
	guarded := threadLoop(bx, "blockIdx.x", 64,
		threadLoop(tx, "threadIdx.x", 32, serial(i, 2, copyBlock("fetch", S, sIdx, A, sIdx, ir.LT(ir.Add(ir.Mul(tx, ir.Int(2)), i), ir.Int(40))))),
		threadLoop(tx2, "threadIdx.x", 32, copyBlock("use", B, ir.Add(ir.Mul(bx, ir.Int(64)), tx2), S, ir.Add(ir.Mul(bx, ir.Int(64)), tx2), ir.LT(tx2, ir.Int(40)))))
	// L[bx*128 + tx*4 + i], i < 4: 4 elements per thread.
	lIdx := ir.Add(ir.Add(ir.Mul(bx, ir.Int(128)), ir.Mul(tx, ir.Int(4))), i)
	local := threadLoop(bx, "blockIdx.x", 32, threadLoop(tx, "threadIdx.x", 32,
		serial(i, 4, copyBlock("in", L, lIdx, A, lIdx, nil)),
		serial(tx2, 4, copyBlock("out", B, ir.Add(ir.Add(ir.Mul(bx, ir.Int(128)), ir.Mul(tx, ir.Int(4))), tx2), L, ir.Add(ir.Add(ir.Mul(bx, ir.Int(128)), ir.Mul(tx, ir.Int(4))), tx2), nil))))
	cases := []struct {
		name   string
		body   ir.Stmt
		alloc  *ir.Buffer
		bytes  int64
		offset string
		access string // a line the printed program must hold
	}{
		{"shared", shared, S, 256, "blockIdx.x * 64", "S[threadIdx.x * 2 + i] = A[blockIdx.x * 64 + threadIdx.x * 2 + i]"},
		{"shared under a predicate", guarded, S, 160, "blockIdx.x * 64", "if threadIdx.x * 2 + i < 40:"},
		{"local", local, L, 16, "blockIdx.x * 128 + threadIdx.x * 4", "L[i] = A[blockIdx.x * 128 + threadIdx.x * 4 + i]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := lowerOne(t, []*ir.Buffer{A, B}, []*ir.Buffer{S, L}, c.body)
			if err != nil {
				t.Fatal(err)
			}
			k := p.Kernels[0]
			if len(k.Allocs) != 1 || k.Allocs[0].Buffer != c.alloc {
				t.Fatalf("allocations %v, want %s only", k.Allocs, c.alloc.Name())
			}
			a := k.Allocs[0]
			if a.Bytes != c.bytes || ir.ExprString(a.Offset[0]) != c.offset {
				t.Errorf("%s: %d B from %s, want %d B from %s", a.Buffer.Name(), a.Bytes, ir.ExprString(a.Offset[0]), c.bytes, c.offset)
			}
			if s := p.String(); !strings.Contains(s, c.access) {
				t.Errorf("no line %q in\n%s", c.access, s)
			}
		})
	}
}

// TestPredicatesAndInit: a block predicate becomes a guard around the
// block; a reduction's init runs under an If on the reduce iterator being
// at its start, before the update, as a separate statement.
func TestPredicatesAndInit(t *testing.T) {
	A, B := buf("A", 100, "global"), buf("B", 4, "global")
	bx, tx, k := ir.NewVar("bx", ir.Int32), ir.NewVar("tx", ir.Int32), ir.NewVar("k", ir.Int32)
	vi, vk := ir.NewVar("vi", ir.Int32), ir.NewVar("vk", ir.Int32)
	red := &ir.Block{
		Name:     "sum",
		IterVars: []ir.IterVar{{Var: vi, Dom: ir.Dom{Extent: 4}, Kind: ir.Spatial}, {Var: vk, Dom: ir.Dom{Extent: 25}, Kind: ir.Reduce}},
		Reads:    []ir.BufferRegion{ir.PointRegion(B, vi), ir.PointRegion(A, ir.Add(ir.Mul(vi, ir.Int(25)), vk))},
		Writes:   []ir.BufferRegion{ir.PointRegion(B, vi)},
		Init:     ir.Store(B, ir.F32(0), vi),
		Body:     ir.Store(B, ir.Add(ir.Load(B, vi), ir.Load(A, ir.Add(ir.Mul(vi, ir.Int(25)), vk))), vi),
	}
	// tx runs over 8 threads for 4 rows: an imperfect split, guarded by
	// bx*8 + tx < 4.
	body := threadLoop(bx, "blockIdx.x", 1, threadLoop(tx, "threadIdx.x", 8, serial(k, 25,
		&ir.BlockRealize{IterValues: []ir.Expr{ir.Add(ir.Mul(bx, ir.Int(8)), tx), k}, Predicate: ir.LT(ir.Add(ir.Mul(bx, ir.Int(8)), tx), ir.Int(4)), Block: red})))
	p, err := lowerOne(t, []*ir.Buffer{A, B}, nil, body)
	if err != nil {
		t.Fatal(err)
	}
	want := `  for k in [0, 25) serial:
    block sum:  // reads B, A, writes B
      if blockIdx.x * 8 + threadIdx.x < 4:
        if init k == 0:
          B[blockIdx.x * 8 + threadIdx.x] = T.float32(0)
        B[blockIdx.x * 8 + threadIdx.x] = B[blockIdx.x * 8 + threadIdx.x] + A[blockIdx.x * 200 + threadIdx.x * 25 + k]
`
	if s := p.String(); !strings.Contains(s, want) {
		t.Errorf("lowered:\n%s\nwant the block as\n%s", s, want)
	}
}

// TestSymbolicExtent: a loop extent that depends on an outer loop stays an
// expression (with the implicit indices substituted), and the loop kinds
// are kept.
func TestSymbolicExtent(t *testing.T) {
	A, B := buf("A", 64, "global"), buf("B", 64, "global")
	tx, i, j, v := ir.NewVar("tx", ir.Int32), ir.NewVar("i", ir.Int32), ir.NewVar("j", ir.Int32), ir.NewVar("v", ir.Int32)
	idx := ir.Add(ir.Add(ir.Mul(tx, ir.Int(8)), i), j)
	inner := ir.LoopExpr(j, ir.Add(ir.FloorMod(tx, ir.Int(2)), ir.Int(1)), copyBlock("c", B, idx, A, idx, nil))
	un := ir.Loop(i, 2, inner)
	un.Kind = ir.Unrolled
	vec := ir.Loop(v, 4, copyBlock("d", A, ir.Add(ir.Mul(tx, ir.Int(4)), v), B, ir.Int(0), nil))
	vec.Kind = ir.Vectorized
	p, err := lowerOne(t, []*ir.Buffer{A, B}, nil, threadLoop(tx, "threadIdx.x", 8, un, vec))
	if err != nil {
		t.Fatal(err)
	}
	s := p.String()
	for _, want := range []string{
		"  for i in [0, 2) unroll:\n    for j in [0, threadIdx.x % 2 + 1) serial:\n",
		"  for v in [0, 4) vectorize:\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
}

// TestCrossThreadReduction: a sum over threadIdx.x becomes the all-reduce
// sequence (accumulator init, the thread's part, store to the shared
// slots, barrier, fold, write-back by thread 0); one over threadIdx.y is
// refused with ErrCrossThreadReduction naming the block.
func TestCrossThreadReduction(t *testing.T) {
	A, B := buf("A", 64, "global"), buf("B", 1, "global")
	for _, c := range []struct {
		tag  string
		want string
		err  string
	}{
		{"threadIdx.x", "sum_red_init sum sum_red_store | sum_red_fold sum_write_back", ""},
		{"threadIdx.y", "", "block sum: cross-thread reduction of a form not lowered: only a reduction over threadIdx.x is lowered, this one uses threadIdx.y"},
	} {
		t.Run(c.tag, func(t *testing.T) {
			k, tx := ir.NewVar("k", ir.Int32), ir.NewVar("t", ir.Int32)
			vk := ir.NewVar("vk", ir.Int32)
			red := &ir.Block{
				Name:     "sum",
				IterVars: []ir.IterVar{{Var: vk, Dom: ir.Dom{Extent: 64}, Kind: ir.Reduce}},
				Reads:    []ir.BufferRegion{ir.PointRegion(B, ir.Int(0)), ir.PointRegion(A, vk)},
				Writes:   []ir.BufferRegion{ir.PointRegion(B, ir.Int(0))},
				Init:     ir.Store(B, ir.F32(0), ir.Int(0)),
				Body:     ir.Store(B, ir.Add(ir.Load(B, ir.Int(0)), ir.Load(A, vk)), ir.Int(0)),
			}
			body := threadLoop(ir.NewVar("b", ir.Int32), "blockIdx.x", 1, serial(k, 2, threadLoop(tx, c.tag, 32,
				&ir.BlockRealize{IterValues: []ir.Expr{ir.Add(ir.Mul(k, ir.Int(32)), tx)}, Block: red})))
			p, err := lowerOne(t, []*ir.Buffer{A, B}, nil, body)
			if c.err != "" {
				if !errors.Is(err, ErrCrossThreadReduction) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want ErrCrossThreadReduction: %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range p.Kernels[0].Body {
				switch x := s.(type) {
				case *Block:
					names = append(names, x.Name)
				case *Loop:
					names = append(names, x.Body[0].(*Block).Name)
				case *Barrier:
					names = append(names, "|")
				}
			}
			if got := strings.Join(names, " "); got != c.want {
				t.Errorf("got %s, want %s\n%s", got, c.want, p)
			}
		})
	}
}
