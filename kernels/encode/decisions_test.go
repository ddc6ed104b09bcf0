package encode

import (
	"encoding/binary"
	"errors"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

var update = flag.Bool("update", false, "rewrite the goldens in testdata")

func testVocab(t testing.TB) *vocab.Vocab {
	t.Helper()
	v, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// words returns the ids of space-separated vocabulary tokens, as a
// decision stream holds them (continuation tokens included).
func words(t testing.TB, v *vocab.Vocab, s string) []int {
	t.Helper()
	if s == "" {
		return []int{}
	}
	var ids []int
	for _, w := range strings.Split(s, " ") {
		id, ok := v.ID(w)
		if !ok {
			t.Fatalf("no token %q", w)
		}
		ids = append(ids, id)
	}
	return ids
}

func specOf(t testing.TB, js string) *workload.Spec {
	t.Helper()
	s, err := workload.ParseString(js)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// decisionsCases are prompts of each shape: construction and refinement,
// with and without a bucket, a spec with float, bool and string fields, a
// stream with a continuation token, an empty source, and a custom module.
func decisionsCases(t testing.TB) []struct {
	name string
	p    DecisionsPrompt
} {
	v := testVocab(t)
	custom, err := os.ReadFile("../workload/testdata/tvm-traces/metal-batch-matmul-32x128x80-k32/workload.json")
	if err != nil {
		t.Fatal(err)
	}
	return []struct {
		name string
		p    DecisionsPrompt
	}{
		{"construction", DecisionsPrompt{Spec: specOf(t, `{"family":"SFM","M":768,"N":64}`), Bucket: -1,
			Target: words(t, v, "GetConsumers b2 2 GetConsumers 1 0 <eos>")}},
		{"asked", DecisionsPrompt{Spec: specOf(t, `{"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":1}`), Bucket: -1}},
		{"refinement", DecisionsPrompt{Spec: specOf(t, `{"family":"GMM","B":1,"N":128,"M":128,"K":128}`), Bucket: 93,
			Source: words(t, v, "4 2 8 409 ##6 1"), Target: words(t, v, "2 4 16 1 <eos>")}},
		{"no bucket", DecisionsPrompt{Spec: specOf(t, `{"family":"LNORM","M":64,"N":256,"eps":0.001}`), Bucket: -1,
			Source: words(t, v, "1"), Target: words(t, v, "<eos>")}},
		{"empty source", DecisionsPrompt{Spec: specOf(t, `{"family":"POOL","N":1,"H":14,"W":14,"C":32,"k":2,"s":2,"p":0,"pool":"avg","count_include_pad":false}`), Bucket: 0,
			Source: []int{}, Target: words(t, v, "<eos>")}},
		{"custom", DecisionsPrompt{Spec: specOf(t, string(custom)), Bucket: -1, Target: words(t, v, "3 1 <eos>")}},
	}
}

// TestDecisionsPromptGolden: each case's text (Text) is the golden's, and
// its ids parse back into the same parts.
func TestDecisionsPromptGolden(t *testing.T) {
	v := testVocab(t)
	var all strings.Builder
	for _, c := range decisionsCases(t) {
		ids, err := c.p.Format(v)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		text, err := c.p.Text(v)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		all.WriteString("=== " + c.name + "\n" + text)
		if len(c.p.Target) > 0 {
			all.WriteString("\n")
		}
		q, err := ParseDecisionsPrompt(v, ids)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, text)
		}
		if (q.Spec == nil) != (c.p.Spec.Custom() != nil) || q.Spec != nil && !q.Spec.Equal(c.p.Spec) {
			t.Errorf("%s: the spec parses back as %v", c.name, q.Spec)
		}
		if q.Bucket != c.p.Bucket || !slices.Equal(q.Source, c.p.Source) || (q.Source == nil) != (c.p.Source == nil) || !slices.Equal(q.Target, c.p.Target) {
			t.Errorf("%s: parsed back as %+v", c.name, q)
		}
	}
	const golden = "testdata/decisions_prompts.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(all.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if all.String() != string(want) {
		t.Errorf("the prompts differ from %s (go test -run %s -update rewrites it):\n%s", golden, t.Name(), all.String())
	}
}

// TestDecisionsPromptShorter: the spec prompt of a convolution is at most a
// third of the script format's kernel prompt.
func TestDecisionsPromptShorter(t *testing.T) {
	v := testVocab(t)
	s := specOf(t, `{"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,"p":1}`)
	ids, err := (&DecisionsPrompt{Spec: s, Bucket: -1}).Format(v)
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	k, err := Kernel(f)
	if err != nil {
		t.Fatal(err)
	}
	text, err := (&Prompt{Kernel: k, Bucket: -1}).Format()
	if err != nil {
		t.Fatal(err)
	}
	full, err := v.Encode(string(text))
	if err != nil {
		t.Fatal(err)
	}
	if 3*len(ids) > len(full) {
		t.Errorf("the decisions prompt has %d tokens, the script format's %d: want at most a third", len(ids), len(full))
	}
}

// TestParseDecisionsPromptErrors: malformed prompts are refused with an
// error, never accepted.
func TestParseDecisionsPromptErrors(t *testing.T) {
	v := testVocab(t)
	enc := func(s string) []int {
		ids, err := v.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	sfm := "@kernel SFM M 768 N 64\nS768 R64 | S768 S64 | S768 R64 | S768 S64\n"
	ok := enc(sfm + "@target\n")
	if _, err := ParseDecisionsPrompt(v, ok); err != nil {
		t.Fatalf("the valid prompt: %v", err)
	}
	for _, c := range []struct {
		name string
		ids  []int
		want string
	}{
		{"empty", nil, "start with @kernel"},
		{"no target", enc(sfm), "no @script or @target"},
		{"unknown family", enc("@kernel XYZ M 1\nS1\n@target\n"), "unknown family"},
		{"odd words", enc("@kernel SFM M 768 N\nS768\n@target\n"), "pairs"},
		{"bad value", enc("@kernel SFM M [1] N 64\nS768\n@target\n"), "JSON number"},
		{"wrong blocks", enc("@kernel SFM M 768 N 64\nS768 R64\n@target\n"), "is not the spec's blocks"},
		{"one line", enc("@kernel SFM M 768 N 64\n@target\n"), "two lines"},
		{"default written", enc("@kernel LNORM M 64 N 256 eps 1e-05\nS64 R256 | S64 R256 | S64 S256\n@target\n"), ""},
		{"bucket without source", enc(sfm + "@bucket 3\n@target\n"), ""},
		{"bucket too large", enc(sfm + "@script\n1\n@bucket 256\n@target\n"), "@bucket wants"},
		{"source without newline", append(enc(sfm+"@script\n1"), enc("@target\n")...), "newline"},
		{"target without newline", enc(sfm + "@target 1"), "@target and a newline"},
		{"id outside", append(slices.Clone(ok), v.VocabSize()), "outside the vocabulary"},
		{"kernel text", enc("@kernel\nnot a kernel\n@target\n"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParseDecisionsPrompt(v, c.ids)
			if err == nil {
				t.Fatalf("accepted: %+v", p)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// FuzzParseDecisionsPrompt: any ids (two bytes each) are refused with an
// error or accepted as exactly what Format writes of the result; never a
// panic.
func FuzzParseDecisionsPrompt(f *testing.F) {
	v := testVocab(f)
	for _, c := range decisionsCases(f) {
		ids, err := c.p.Format(v)
		if err != nil {
			f.Fatal(err)
		}
		b := make([]byte, 2*len(ids))
		for i, id := range ids {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(id))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ids := make([]int, len(b)/2)
		for i := range ids {
			ids[i] = int(binary.LittleEndian.Uint16(b[2*i:])) % (v.VocabSize() + 8)
		}
		p, err := ParseDecisionsPrompt(v, ids)
		if err != nil {
			if !errors.Is(err, ErrSyntax) && p != nil {
				t.Fatalf("an error with a prompt: %v", err)
			}
			return
		}
		again, err := p.Format(v)
		if err != nil {
			t.Fatalf("an accepted prompt does not format: %v", err)
		}
		if !slices.Equal(again, ids) {
			t.Fatalf("an accepted prompt formats to other ids")
		}
	})
}
