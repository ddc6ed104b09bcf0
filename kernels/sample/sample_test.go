package sample

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/space"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

func benchFunc(t testing.TB, family string, index int) *ir.PrimFunc {
	t.Helper()
	spec, err := workload.BenchmarkSpec(family, index)
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func traces(ss []*Sample) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Trace.String())
	}
	return out
}

// TestDrawDeterministic: the same seed gives the same traces byte for
// byte, from a space generated afresh; another seed gives other traces;
// a draw does not depend on the draws before it.
func TestDrawDeterministic(t *testing.T) {
	ctx := context.Background()
	f := benchFunc(t, "GMM", 0)
	a, err := Draw(ctx, f, 7, 12, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Draw(ctx, f, 7, 12, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ta, tb := traces(a), traces(b)
	if len(ta) != 12 {
		t.Fatalf("got %d samples, want 12", len(ta))
	}
	for i := range ta {
		if ta[i] != tb[i] || a[i].Sketch != b[i].Sketch || a[i].Seed != b[i].Seed {
			t.Errorf("draw %d differs between two runs of seed 7", i)
		}
		if a[i].Index != i {
			t.Errorf("draw %d has index %d", i, a[i].Index)
		}
	}
	c, err := Draw(ctx, f, 8, 12, Options{})
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for i, tc := range traces(c) {
		if tc == ta[i] {
			same++
		}
	}
	if same == len(ta) {
		t.Errorf("seeds 7 and 8 give the same %d traces", same)
	}
	sp, err := NewSpace(ctx, f, 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	one, err := sp.Draw(ctx, 7, 9)
	if err != nil {
		t.Fatal(err)
	}
	if one.Trace.String() != ta[9] {
		t.Errorf("draw 9 alone differs from draw 9 of 12")
	}
}

// TestDrawFreshDecisions: the sketches carry no decisions; every sampling
// instruction of a drawn trace has one, and the draws do not all repeat
// the same decisions.
func TestDrawFreshDecisions(t *testing.T) {
	ctx := context.Background()
	sp, err := NewSpace(ctx, benchFunc(t, "C2D", 0), 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for k, sk := range sp.Sketches() {
		if len(sk.Decisions) != 0 || sk.Postproc() >= 0 {
			t.Errorf("sketch %d has %d decisions, EnterPostproc at %d", k, len(sk.Decisions), sk.Postproc())
		}
	}
	ss, err := sp.DrawN(ctx, 3, 16)
	if err != nil {
		t.Fatal(err)
	}
	decisions := map[string]bool{}
	for _, s := range ss {
		var ds []string
		for i, in := range s.Trace.Insts {
			if !strings.HasPrefix(in.Kind, "Sample") {
				continue
			}
			d, ok := s.Trace.Decision(i)
			if !ok {
				t.Errorf("draw %d: inst %d %s has no decision", s.Index, i, in.Kind)
			}
			ds = append(ds, d.String())
		}
		if len(ds) == 0 {
			t.Fatalf("draw %d has no sampling instruction", s.Index)
		}
		decisions[strings.Join(ds, " ")] = true
	}
	if len(decisions) < 8 {
		t.Errorf("16 draws took only %d distinct sets of decisions", len(decisions))
	}
}

// TestDrawMatchesVerdict: an accepted draw is a full trace that the static
// verdict passes, giving it back byte for byte from its pre-postproc part;
// a rejected draw's trace gets the same rejection from the verdict.
func TestDrawMatchesVerdict(t *testing.T) {
	ctx := context.Background()
	f := benchFunc(t, "GMM", 1)
	ss, err := Draw(ctx, f, 1, 16, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ok, rejected int
	for _, s := range ss {
		if s.OK() {
			ok++
			if s.Trace.Postproc() < 0 {
				t.Fatalf("draw %d: accepted without EnterPostproc", s.Index)
			}
			v := verdict.CheckTrace(ctx, f, s.Trace.WithoutPostproc(), verdict.Options{})
			if !v.OK || v.Trace().String() != s.Trace.String() {
				t.Errorf("draw %d: the verdict on its sketch part gives %s and another trace", s.Index, v.JSON())
			}
			continue
		}
		rejected++
		r := s.Rejection
		if r.Phase == "" || r.Error() == "" || (r.Phase != verdict.PhaseReplay && r.Postproc == "") {
			t.Errorf("draw %d: rejection without a phase, postprocessor or reason: %+v", s.Index, r)
		}
		if s.Trace.Postproc() >= 0 {
			t.Errorf("draw %d: rejected trace has EnterPostproc", s.Index)
		}
		v := verdict.CheckTrace(ctx, f, s.Trace, verdict.Options{Seed: s.Seed})
		if v.OK || v.Phase != r.Phase || v.Postproc != r.Postproc || v.Error != r.Error() {
			t.Errorf("draw %d rejected in phase %s by %s (%v); the verdict says %s", s.Index, r.Phase, r.Postproc, r, v.JSON())
		}
	}
	if ok == 0 || rejected == 0 {
		t.Errorf("16 draws of GMM/1: %d accepted, %d rejected; want some of each to test both", ok, rejected)
	}
}

// TestDrawCount: count 0 gives nothing, a negative count an error.
func TestDrawCount(t *testing.T) {
	ctx := context.Background()
	f := benchFunc(t, "NRM", 0)
	ss, err := Draw(ctx, f, 1, 0, Options{})
	if err != nil || len(ss) != 0 {
		t.Errorf("count 0: %d samples, %v", len(ss), err)
	}
	if _, err := Draw(ctx, f, 1, -1, Options{}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("count -1: %v, want an error saying it is negative", err)
	}
}

// TestDrawCancelled: a cancelled context stops the draws with its error.
func TestDrawCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := benchFunc(t, "GMM", 0)
	sp, err := NewSpace(ctx, f, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	ss, err := sp.DrawN(ctx, 1, 4)
	if !errors.Is(err, context.Canceled) || len(ss) != 0 {
		t.Errorf("cancelled: %d samples, error %v; want none and context.Canceled", len(ss), err)
	}
	if _, err := NewSpace(ctx, f, 1, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("NewSpace cancelled: %v", err)
	}
}

// TestDrawOptions: the rules and postprocessors can be chosen. Without
// postprocessors every draw is accepted and ends with EnterPostproc;
// without rules the space is the one sketch of GetBlocks.
func TestDrawOptions(t *testing.T) {
	ctx := context.Background()
	f := benchFunc(t, "C2D", 0)
	ss, err := Draw(ctx, f, 1, 8, Options{Postprocs: []postproc.Postproc{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if !s.OK() || s.Trace.Insts[len(s.Trace.Insts)-1].Kind != "EnterPostproc" {
			t.Errorf("draw %d without postprocessors: %v", s.Index, s.Rejection)
		}
	}
	sp, err := NewSpace(ctx, f, 1, Options{Rules: []space.Rule{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Sketches()) != 1 {
		t.Fatalf("no rules: %d sketches, want 1", len(sp.Sketches()))
	}
	for _, in := range sp.Sketches()[0].Insts {
		if in.Kind != "GetBlock" {
			t.Errorf("no rules: the sketch has inst %s", in.Kind)
		}
	}
}

// TestDrawConcurrent: draws made from several goroutines on one space are
// the sequential draws (run with -race to check the sharing).
func TestDrawConcurrent(t *testing.T) {
	ctx := context.Background()
	sp, err := NewSpace(ctx, benchFunc(t, "C2D", 0), 4, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := sp.DrawN(ctx, 4, 8)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]*Sample, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			s, err := sp.Draw(ctx, 4, i)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = s
		})
	}
	wg.Wait()
	for i := range got {
		if got[i] == nil || got[i].Trace.String() != want[i].Trace.String() {
			t.Errorf("draw %d made concurrently differs", i)
		}
	}
}
