package encode

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"dragonx/kernels/postproc"
)

// TestEncodeSpans: each span holds the decision of its instruction, as
// written after " = ", in script order.
func TestEncodeSpans(t *testing.T) {
	f := benchFunc(t, "GMM", 0)
	tr := draws(t, f, 1, 1)[0].Trace
	script, spans, err := EncodeSpans(f, tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != len(tr.WithoutPostproc().Decisions) {
		t.Fatalf("%d spans for %d decisions", len(spans), len(tr.WithoutPostproc().Decisions))
	}
	for k, sp := range spans {
		d, ok := tr.Decision(sp.Inst)
		if !ok {
			t.Fatalf("span %d: instruction %d has no decision", k, sp.Inst)
		}
		want := strings.NewReplacer(",", " ").Replace(d.String())
		if got := string(script[sp.Start:sp.End]); got != want || string(script[sp.Start-3:sp.Start]) != " = " {
			t.Fatalf("span %d: %q, want %q after \" = \"", k, got, want)
		}
		if k > 0 && sp.Start <= spans[k-1].End {
			t.Fatalf("spans out of order: %v", spans)
		}
	}
}

// TestDecoderLines: applying a script line by line builds the same trace
// as Decode (without the postprocessors), and a bad line breaks the
// decoder for good.
func TestDecoderLines(t *testing.T) {
	ctx := context.Background()
	for _, fam := range []string{"GMM", "C2D", "SFM"} {
		f := benchFunc(t, fam, 0)
		script, err := Encode(f, draws(t, f, 2, 1)[0].Trace)
		if err != nil {
			t.Fatal(err)
		}
		d := NewDecoder(f, Options{})
		for _, line := range bytes.SplitAfter(script, []byte{'\n'}) {
			if len(line) == 0 {
				continue
			}
			if err := d.Line(line); err != nil {
				t.Fatalf("%s: %q: %v", fam, line, err)
			}
		}
		want, err := Decode(ctx, f, script, Options{Postprocs: []postproc.Postproc{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Session().Trace().String(); got != want.String() {
			t.Fatalf("%s: line by line %s, Decode %s", fam, got, want)
		}
		fork := d.Fork()
		if err := fork.Line([]byte("GetLoops b99\n")); err == nil || !strings.Contains(err.Error(), "b99") {
			t.Fatalf("a bad line: %v", err)
		}
		if err := fork.Line([]byte("EnterPostproc\n")); err == nil {
			t.Fatal("a broken decoder accepts a line")
		}
		if err := d.Line([]byte("GetBlock | #0 \"main\"\n")); err != nil {
			t.Fatalf("the fork's failure broke the original: %v", err)
		}
		if err := d.Line([]byte("GetBlock\nGetBlock\n")); err == nil {
			t.Fatal("two lines accepted as one")
		}
	}
}
