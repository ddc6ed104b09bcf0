package ir_test

import (
	"fmt"
	"strings"
	"testing"

	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/ir"
)

func TestHashGolden(t *testing.T) {
	// The hash is part of stored data (workload databases): pin it.
	var b strings.Builder
	fmt.Fprintf(&b, "version %d\n", ir.HashVersion)
	fmt.Fprintf(&b, "dense_nt_128 %d\n", ir.Hash(dense(t)))
	fmt.Fprintf(&b, "conv2d_nhwc_224_k7s2p3 %d\n", ir.Hash(conv(t)))
	fmt.Fprintf(&b, "c1d_scheduled %d\n", ir.Hash(fixtures.C1DScheduled()))
	golden(t, "hashes", b.String())
}

func TestHashAndEqual(t *testing.T) {
	a, b := dense(t), dense(t) // built twice: no shared vars
	if ir.Hash(a) != ir.Hash(b) || !ir.Equal(a, b) {
		t.Fatalf("two builds of the same function: Hash %d vs %d, Diff %q", ir.Hash(a), ir.Hash(b), ir.Diff(a, b))
	}
	if c := a.Clone(); ir.Hash(c) != ir.Hash(a) || !ir.Equal(a, c) {
		t.Fatalf("Clone changes Hash or Equal: %q", ir.Diff(a, c))
	}
	// Renaming variables changes neither.
	renamed := a.Clone()
	loops := ir.NewIndex(renamed).Loops(mustBlock(t, renamed, "T_matmul_NT"))
	old := loops[0].Var
	loops[0].Var = ir.NewVar("renamed", ir.Int32)
	ir.SubstituteStmt(loops[0].Body, map[*ir.Var]ir.Expr{old: loops[0].Var})
	if ir.Hash(renamed) != ir.Hash(a) || !ir.Equal(a, renamed) {
		t.Errorf("renaming a loop variable changed Hash or Equal: %q", ir.Diff(a, renamed))
	}
	mutations := []struct {
		name   string
		mutate func(f *ir.PrimFunc)
		diff   string
	}{
		{"extent", func(f *ir.PrimFunc) { ir.NewIndex(f).Loops(mustBlock(t, f, "T_matmul_NT"))[2].SetExtent(64) },
			`for i > for j > for k: extent 64 vs 128`},
		{"loop kind", func(f *ir.PrimFunc) {
			l := ir.NewIndex(f).Loops(mustBlock(t, f, "T_matmul_NT"))[0]
			l.Kind, l.Thread = ir.ThreadBinding, "blockIdx.x"
		}, `for i: kind thread_binding vs serial`},
		{"annotation", func(f *ir.PrimFunc) {
			mustBlock(t, f, "T_matmul_NT").Annotations.Set("meta_schedule.tiling_structure", ir.AnnString("SSSRRSRS"))
		}, `block "T_matmul_NT": annotations differ`},
		{"block name", func(f *ir.PrimFunc) { mustBlock(t, f, "T_matmul_NT").Name = "C" },
			`block "C": name "C" vs "T_matmul_NT"`},
		{"iter kind", func(f *ir.PrimFunc) { mustBlock(t, f, "T_matmul_NT").IterVars[2].Kind = ir.Spatial },
			`iter var v_k: spatial`},
		{"buffer scope", func(f *ir.PrimFunc) {
			old := f.Params[0]
			nb := old.WithScope("shared")
			f.Params[0] = nb
			ir.ReplaceBuffer(f.Body, old, nb)
		}, `buffer p0[128 128](float32, shared) vs p0[128 128](float32, global)`},
		{"store value", func(f *ir.PrimFunc) {
			b := mustBlock(t, f, "T_matmul_NT")
			st := b.Init.(*ir.BufferStore)
			st.Value = ir.F32(1)
		}, `store T_matmul_NT[v_i, v_j] = T.float32(1)`},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			c := a.Clone()
			m.mutate(c)
			if ir.Hash(c) == ir.Hash(a) {
				t.Errorf("Hash unchanged")
			}
			d := ir.Diff(c, a)
			if d == "" || !strings.Contains(d, m.diff) {
				t.Errorf("Diff = %q, want it to contain %q", d, m.diff)
			}
			if ir.Diff(a, dense(t)) != "" {
				t.Errorf("mutating the clone changed the original")
			}
		})
	}
}

func mustBlock(t testing.TB, f *ir.PrimFunc, name string) *ir.Block {
	t.Helper()
	b, err := ir.FindBlock(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCloneIsIndependent(t *testing.T) {
	f := fixtures.C1DScheduled()
	before := f.Script()
	c := f.Clone()
	for _, b := range ir.Blocks(c) {
		b.Annotations.Set("x", ir.AnnInt(1))
		b.Name += "_x"
		for i := range b.IterVars {
			b.IterVars[i].Dom.Extent++
		}
		for _, r := range b.Reads {
			for k := range r.Region {
				r.Region[k].Extent = ir.Int(7)
			}
		}
		b.Reads = append(b.Reads, b.Writes...)
	}
	ir.WalkStmt(c.Body, func(s ir.Stmt) bool {
		switch x := s.(type) {
		case *ir.For:
			n, _ := x.ConstExtent()
			x.SetExtent(n + 1)
			x.Annotations.Set("pragma_unroll_explicit", ir.AnnInt(1))
		case *ir.BlockRealize:
			for i := range x.IterValues {
				x.IterValues[i] = ir.Int(0)
			}
			x.Predicate = ir.False()
		case *ir.BufferStore:
			x.Indices[0] = ir.Int(3)
		case *ir.SeqStmt:
			x.Stmts[0], x.Stmts[len(x.Stmts)-1] = x.Stmts[len(x.Stmts)-1], x.Stmts[0]
		}
		return true
	})
	c.Attrs.Set("global_symbol", ir.AnnString("other"))
	c.Params[0] = c.Params[1]
	if got := f.Script(); got != before {
		t.Errorf("mutating a clone changed the original:\n%s", lineDiff(before, got))
	}
}

func TestIndex(t *testing.T) {
	f := fixtures.C1DScheduled()
	ix := ir.NewIndex(f)
	conv := mustBlock(t, f, "conv1d_nlc")
	var names []string
	for _, l := range ix.Loops(conv) {
		names = append(names, fmt.Sprintf("%s:%s", l.Var.Name(), ir.ExprString(l.ExtentExpr())))
	}
	want := "n_0_l_0_co_0_fused:4 n_1_l_1_co_1_fused:16 n_2_l_2_co_2_fused:4 rl_0:1 rc_0:16 rl_1:1 rc_1:2 n_3:1 l_3:1 co_3:2 rl_2:3 rc_2:2 n_4:1 l_4:4 co_4:8"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("Loops(conv1d_nlc) = %s\nwant %s", got, want)
	}
	if ix.ParentBlock(conv) != f.Root() {
		t.Errorf("ParentBlock(conv1d_nlc) is not the root")
	}
	if r := ix.Realize(conv); r == nil || r.Block != conv {
		t.Errorf("Realize(conv1d_nlc) = %v", r)
	}
	if ix.ParentBlock(f.Root()) != nil || ix.Parent(f.Body) != nil {
		t.Errorf("the root has a parent")
	}
	var kids []string
	for _, b := range ir.ChildBlocks(f.Root()) {
		kids = append(kids, b.Name)
	}
	if got := strings.Join(kids, " "); got != "PadInput_shared weight_shared conv1d_nlc conv1d_nlc_local" {
		t.Errorf("ChildBlocks(root) = %s", got)
	}
	rc0 := ix.Loops(conv)[4]
	kids = kids[:0]
	for _, b := range ir.ChildBlocks(rc0) {
		kids = append(kids, b.Name)
	}
	if got := strings.Join(kids, " "); got != "PadInput_shared weight_shared conv1d_nlc" {
		t.Errorf("ChildBlocks(rc_0) = %s", got)
	}
	if !ix.IsAncestor(rc0, conv) || ix.IsAncestor(conv, rc0) {
		t.Errorf("IsAncestor wrong")
	}

	// Replace: wrap the write-back nest in a new loop, then remove the
	// PadInput_shared loop from its sequence.
	wb := mustBlock(t, f, "conv1d_nlc_local")
	outer := ix.Loops(wb)[3]
	wrap := ir.Loop(ir.NewVar("w", ir.Int32), 1, outer)
	ix.Replace(outer, wrap)
	if got := ix.Loops(wb); len(got) != 7 || got[3] != wrap || ix.Parent(outer) != wrap {
		t.Errorf("after Replace, Loops(conv1d_nlc_local) has %d loops", len(got))
	}
	pad := mustBlock(t, f, "PadInput_shared")
	padLoop := ix.Loops(pad)[5]
	seq := ix.Parent(padLoop).(*ir.SeqStmt)
	ix.Replace(padLoop, nil)
	if len(seq.Stmts) != 2 || ix.Contains(pad) {
		t.Errorf("after removing PadInput_shared: %d statements left, block still indexed: %v", len(seq.Stmts), ix.Contains(pad))
	}
	if _, err := ir.FindBlock(f, "PadInput_shared"); err == nil {
		t.Errorf("FindBlock finds a removed block")
	}
	// Removing one of two statements collapses the sequence.
	w := mustBlock(t, f, "weight_shared")
	ix.Replace(ix.Loops(w)[5], nil)
	if _, ok := ix.Loops(conv)[4].Body.(*ir.SeqStmt); ok {
		t.Errorf("a one-statement sequence was left in place")
	}
	if ix.Parent(ix.Loops(conv)[5]) != ix.Loops(conv)[4] {
		t.Errorf("the index does not know the collapsed sequence's new parent")
	}
	fresh := ir.NewIndex(f)
	if len(fresh.Loops(conv)) != len(ix.Loops(conv)) {
		t.Errorf("incremental index disagrees with a fresh one")
	}
}

func TestFindBlockErrors(t *testing.T) {
	f := dense(t)
	if _, err := ir.FindBlock(f, "nope"); err == nil || !strings.Contains(err.Error(), `no block named "nope"`) {
		t.Errorf("FindBlock(nope) = %v", err)
	}
	c := f.Clone()
	mustBlock(t, c, "T_matmul_NT").Name = "root"
	if _, err := ir.FindBlock(c, "root"); err == nil || !strings.Contains(err.Error(), "2 blocks") {
		t.Errorf("FindBlock(duplicate) = %v", err)
	}
}

func TestSubstituteAndAccesses(t *testing.T) {
	f := dense(t)
	b := mustBlock(t, f, "T_matmul_NT")
	vi := b.IterVars[0].Var
	x := ir.NewVar("x", ir.Int32)
	e := ir.Add(ir.Mul(vi, ir.Int(4)), ir.Int(1))
	got := ir.Substitute(e, func(v *ir.Var) ir.Expr {
		if v == vi {
			return ir.Add(x, ir.Int(2))
		}
		return nil
	})
	if s := ir.ExprString(got); s != "(x + 2) * 4 + 1" {
		t.Errorf("Substitute = %s", s)
	}
	if same := ir.SubstituteMap(e, map[*ir.Var]ir.Expr{x: vi}); same != e {
		t.Errorf("Substitute without a match rebuilt the expression")
	}
	var acc []string
	ir.VisitAccesses(b, false, func(a ir.Access) {
		kind := "R"
		if a.IsWrite() {
			kind = "W"
		}
		acc = append(acc, kind+":"+a.Buffer.Name()+":"+a.Block.Name)
	})
	want := "W:T_matmul_NT:T_matmul_NT R:T_matmul_NT:T_matmul_NT R:p0:T_matmul_NT R:p1:T_matmul_NT W:T_matmul_NT:T_matmul_NT"
	if s := strings.Join(acc, " "); s != want {
		t.Errorf("VisitAccesses = %s\nwant %s", s, want)
	}
	ir.SubstituteStmt(b, map[*ir.Var]ir.Expr{vi: ir.Int(0)})
	if s := ir.StmtString(b.Body); s != "T_matmul_NT[0, v_j] = T_matmul_NT[0, v_j] + p0[0, v_k] * p1[v_j, v_k]" {
		t.Errorf("SubstituteStmt: body = %s", s)
	}
	if vs := ir.CollectVars(ir.Add(ir.Mul(x, vi), x)); len(vs) != 2 || vs[0] != x || vs[1] != vi {
		t.Errorf("CollectVars = %v", vs)
	}
}

func TestAnnotations(t *testing.T) {
	var a ir.Annotations
	a.Set("b", ir.AnnInt(2))
	a.Set("a", ir.AnnString("x"))
	a.Set("c", ir.AnnArray{ir.AnnInt(1), ir.AnnFloat(0.5)})
	a.Set("b", ir.AnnInt(3))
	var keys []string
	for _, kv := range a {
		keys = append(keys, kv.Key)
	}
	if strings.Join(keys, ",") != "a,b,c" {
		t.Errorf("keys = %v, want sorted a,b,c", keys)
	}
	if v, ok := a.Int("b"); !ok || v != 3 {
		t.Errorf("Int(b) = %d, %v", v, ok)
	}
	if !a.Delete("a") || a.Delete("a") {
		t.Errorf("Delete(a) twice did not report true then false")
	}
	if _, ok := a.Get("a"); ok {
		t.Errorf("Get after Delete found a value")
	}
	c := a.Clone()
	c.Set("d", ir.AnnBool(true))
	if len(a) != 2 {
		t.Errorf("changing a clone changed the original")
	}
}
