package verdict_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"dragonx/kernels/internal/fixtures"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
)

func TestVerdicts(t *testing.T) {
	f, err := fixtures.DenseNT(8, 8, 8)
	if err != nil {
		t.Fatal(err)
	}
	good := `[[["GetBlock",[],["T_matmul_NT","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2","l3"]],["SamplePerfectTile",["l1"],[2,64],["v4","v5"]],["Split",["l1","v4","v5"],[1,0],["l6","l7"]]],[[2,[2,4]]]]`
	tr, err := trace.Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	s, err := trace.Replay(context.Background(), f, tr, trace.Options{})
	v := verdict.FromReplay(s, err)
	got := string(v.JSON())
	if !strings.HasPrefix(got, `{"ok":true,"phase":"replay","inst":-1,"error":"","ir_hash":"`) || !strings.Contains(got, `"insts":4`) || len(v.IRHash) != 16 {
		t.Errorf("ok verdict %s", got)
	}
	if v.IRHash != verdict.Hash(s.Func()) || v.IRHash == verdict.Hash(f) {
		t.Errorf("hash %s", v.IRHash)
	}

	tr.SetDecision(2, trace.IntsValue([]int64{3, 3}))
	s, err = trace.Replay(context.Background(), f, tr, trace.Options{})
	v = verdict.FromReplay(s, err)
	want := `{"ok":false,"phase":"replay","inst":2,"error":"kernels: inst 2 SamplePerfectTile: invalid decision: the product of [3 3] exceeds the extent 8 for l1","ir_hash":"","kind":"SamplePerfectTile","insts":2}`
	if got := string(v.JSON()); got != want {
		t.Errorf("failed verdict\n got %s\nwant %s", got, want)
	}
	s, err = trace.Replay(context.Background(), f, tr, trace.Options{Repair: true})
	v = verdict.FromReplay(s, err)
	if !v.OK || len(v.Repairs) != 1 || !strings.Contains(v.Repairs[0], "repaired to [1,8]") {
		t.Errorf("repaired verdict %s", v.JSON())
	}

	v = verdict.Fail(verdict.PhaseParse, errors.New("kernels: trace: invalid JSON"))
	if got := string(v.JSON()); got != `{"ok":false,"phase":"parse","inst":-1,"error":"kernels: trace: invalid JSON","ir_hash":""}` {
		t.Errorf("parse verdict %s", got)
	}
}
