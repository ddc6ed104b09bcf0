package vocab

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func defaultVocab(t testing.TB) *Vocab {
	t.Helper()
	v, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRoundTripCorpus: every script and kernel text of the corpus
// tokenizes, and its ids decode to the very text.
func TestRoundTripCorpus(t *testing.T) {
	v := defaultVocab(t)
	for _, c := range corpus(t, 2) {
		ids, err := v.Encode(c.text)
		if err != nil {
			t.Fatalf("%s %s: %v", c.family, c.kind, err)
		}
		back, err := v.Decode(ids)
		if err != nil || back != c.text {
			t.Fatalf("%s %s: decodes to %q (%v), want %q", c.family, c.kind, back, err, c.text)
		}
	}
}

// TestWordPieces: how words are cut.
func TestWordPieces(t *testing.T) {
	v := defaultVocab(t)
	for _, c := range []struct{ text, want string }{
		{"Split l12 (SamplePerfectTile l0 | 5 64 = [1 1 4 8 4]) | 1 0\n",
			"Split l12 ( SamplePerfectTile l0 | 5 64 = [ 1 1 4 8 4 ] ) | 1 0 \n"},
		{"GetBlock | #13 \"main\"\n", "GetBlock | #13 \"main\" \n"},
		{"GetLoops l300 b64\n", "GetLoops l30 ##0 b6 ##4 \n"},
		{"store $2 v0 4096 -1 -7\n", "store $2 v0 409 ##6 -1 - ##7 \n"},
		{"Annotate b0 \"ab c\"\n", "Annotate b0 \" ##a ##b ##  ##c ##\" \n"},
		{"[]\n", "[ ] \n"},
		// A word never starts with a continuation token (issue 29): a
		// word that is one, or begins like one, starts with "#".
		{"##0", "# ### ##0"},
		{"Split l0 ##4 | 1 0", "Split l0 # ### ##4 | 1 0"},
		{"(##)", "( # ### )"},
	} {
		ids, err := v.Encode(c.text)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		var got []string
		for _, id := range ids {
			tok, _ := v.Token(id)
			got = append(got, tok)
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%q: tokens %q, want %q", c.text, g, c.want)
		}
		if back, err := v.Decode(ids); err != nil || back != c.text {
			t.Errorf("%q decodes to %q (%v)", c.text, back, err)
		}
	}
}

// TestEncodeErrors: text that cannot be tokenized is refused with the
// byte offset.
func TestEncodeErrors(t *testing.T) {
	v := defaultVocab(t)
	for _, c := range []struct{ text, want string }{
		{"GetLoops b0 \n", "byte 11: a space that does not separate"},
		{"GetLoops  b0\n", "byte 8: a space that does not separate"},
		{"GetLoops\tb0\n", `byte 8: "\t" cannot be tokenized`},
		{"Split [ 1]\n", "byte 7: unexpected space"},
		{"Split[1]\n", "byte 5: a space is missing"},
		{"Annotate \"é\"\n", `byte 10: "\xc3" cannot be tokenized`},
		{"Annotate \"ab\n", "byte 9: unterminated string"},
		{" GetLoops\n", "byte 0: unexpected space"},
	} {
		_, err := v.Encode(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Encode(%q): %v, want an error containing %q", c.text, err, c.want)
		}
	}
	for _, c := range []struct {
		ids  []int
		want string
	}{
		{[]int{-1}, "id -1 (position 0) is outside"},
		{[]int{5, v.VocabSize()}, "outside the vocabulary"},
		{[]int{1}, "has no text"},
		{[]int{mustID(t, v, "##7")}, "continuation"},
	} {
		if _, err := v.Decode(c.ids); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%v): %v, want an error containing %q", c.ids, err, c.want)
		}
	}
}

func mustID(t *testing.T, v *Vocab, tok string) int {
	t.Helper()
	id, ok := v.ID(tok)
	if !ok {
		t.Fatalf("%q is not a token", tok)
	}
	return id
}

// TestIdentity: the identity is that of the file, and changes with it.
func TestIdentity(t *testing.T) {
	v := defaultVocab(t)
	w, err := Parse(defaultData)
	if err != nil {
		t.Fatal(err)
	}
	if v.Identity() != w.Identity() || !strings.HasPrefix(v.Identity(), "sha256:") {
		t.Fatalf("identities %s and %s", v.Identity(), w.Identity())
	}
	other := strings.Replace(string(defaultData), "\"kernel\"\n", "\"kernel2\"\n", 1)
	x, err := Parse([]byte(other))
	if err != nil {
		t.Fatal(err)
	}
	if x.Identity() == v.Identity() {
		t.Fatal("another vocabulary has the same identity")
	}
	for _, bad := range []string{"\"<pad>\"\n", "\"<pad>\"\n\"<eos>\"\n\"a\"\n\"a\"\n", "\"<pad>\"\n\"<eos>\"\nx\n", "\"<pad>\"\n\"<eos>\"\n\"##\"\n"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeds", bad)
		}
	}
}

func FuzzEncode(f *testing.F) {
	v, err := Default()
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Split l0 (SamplePerfectTile l0 | 5 64 = [1 1 4 8 4]) | 1 0\n")
	f.Add("store $2 v0 v1 v2 add $2 v0 v1 v2 mul $0 v0 v1 v3 $1 v0 v3 v2\n")
	f.Add("@kernel\nkernel \"main\"\n@target\n")
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := v.Encode(s)
		if err != nil {
			return
		}
		back, err := v.Decode(ids)
		if err != nil || back != s {
			t.Fatalf("%q encodes to ids that decode to %q (%v)", s, back, err)
		}
	})
}

// jsonTokens counts the tokens of a plain JSON tokenizer: each of
// [ ] { } , : and each string, number or literal is one.
func jsonTokens(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case strings.IndexByte("[]{},:", c) >= 0:
			n++
			i++
		case c == '"':
			i++
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i++
			n++
		case c == ' ' || c == '\n':
			i++
		default:
			for i < len(s) && strings.IndexByte("[]{},: \n\"", s[i]) < 0 {
				i++
			}
			n++
		}
	}
	return n
}

type stat struct {
	n, sum, max int
}

func (s *stat) add(x int) {
	s.n++
	s.sum += x
	s.max = max(s.max, x)
}

func (s stat) mean() float64 { return float64(s.sum) / math.Max(1, float64(s.n)) }

// TestCompactness measures, on the scripts of accepted draws (full
// traces: the postprocessors' part is in the JSON, not in the script),
// tokens per script against the JSON trace tokenized character-wise and
// by a plain JSON tokenizer, per family; and the kernel text's tokens.
// The goal is at least 3 times fewer tokens than the plain JSON
// tokenizer. `go test ./kernels/vocab -run Compactness -v -corpus-draws 32`
// prints the table of docs/encoding.md.
func TestCompactness(t *testing.T) {
	v := defaultVocab(t)
	texts := corpus(t, *corpusDraws)
	type row struct{ script, chars, json, kernel, prefix stat }
	rows := map[string]*row{}
	all := &row{}
	for _, c := range texts {
		if c.family == "tvm" {
			continue
		}
		r := rows[c.family]
		if r == nil {
			r = &row{}
			rows[c.family] = r
		}
		ids, err := v.Encode(c.text)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.kind == "kernel":
			r.kernel.add(len(ids))
			all.kernel.add(len(ids))
		case c.full:
			for _, x := range []*row{r, all} {
				x.script.add(len(ids))
				x.chars.add(len(c.json))
				x.json.add(jsonTokens(c.json))
			}
		default:
			r.prefix.add(len(ids))
			all.prefix.add(len(ids))
		}
	}
	fams := make([]string, 0, len(rows))
	for f := range rows {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-6s %8s %12s %12s %12s %8s %10s %10s\n", "family", "accepted", "script tok", "JSON chars", "JSON tok", "ratio", "kernel tok", "rejected")
	line := func(name string, r *row) {
		ratio := r.json.mean() / math.Max(1, r.script.mean())
		fmt.Fprintf(&b, "%-6s %8d %6.0f/%-5d %6.0f/%-5d %6.0f/%-5d %8.1f %10.0f %5.0f/%-4d\n", name, r.script.n,
			r.script.mean(), r.script.max, r.chars.mean(), r.chars.max, r.json.mean(), r.json.max, ratio,
			r.kernel.mean(), r.prefix.mean(), r.prefix.max)
	}
	for _, f := range fams {
		line(f, rows[f])
	}
	line("all", all)
	t.Log("tokens per text, mean/max; ratio = JSON tokens / script tokens; rejected = scripts of draws a postprocessor rejected (no postprocessors' part)" + b.String())
	if all.script.n == 0 {
		t.Fatal("no accepted draw in the corpus")
	}
	if ratio := all.json.mean() / all.script.mean(); ratio < 3 {
		t.Errorf("scripts are %.2f times shorter than JSON (plain JSON tokenizer), want at least 3", ratio)
	}
}

// TestNumberScheme measures the choice of MaxNumber: tokens of the
// corpus (scripts and kernel texts) and vocabulary size when integers up
// to N are single tokens (and continuations), larger ones cut greedily.
func TestNumberScheme(t *testing.T) {
	v := defaultVocab(t)
	texts := corpus(t, 2)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%6s %8s %14s %14s\n", "N", "vocab", "script tokens", "kernel tokens")
	for _, n := range []int{9, 99, 255, 1024} {
		var toks []string
		for _, tok := range v.tokens {
			num := strings.TrimPrefix(tok, "##")
			if k, err := strconv.Atoi(num); err == nil && k > n && strconv.Itoa(k) == num {
				continue
			}
			toks = append(toks, tok)
		}
		w, err := Parse(vocabFile(toks))
		if err != nil {
			t.Fatal(err)
		}
		var script, kernel int
		for _, c := range texts {
			ids, err := w.Encode(c.text)
			if err != nil {
				t.Fatal(err)
			}
			if c.kind == "kernel" {
				kernel += len(ids)
			} else {
				script += len(ids)
			}
		}
		fmt.Fprintf(&b, "%6d %8d %14d %14d\n", n, w.VocabSize(), script, kernel)
	}
	t.Log("integers up to N one token:" + b.String())
}

// BenchmarkEncode and BenchmarkDecode measure the tokenizer's throughput
// (tokens/s) on the corpus's scripts.
func BenchmarkEncode(b *testing.B) {
	v := defaultVocab(b)
	texts := corpus(b, 2)
	ntok := 0
	for _, c := range texts {
		ids, _ := v.Encode(c.text)
		ntok += len(ids)
	}
	b.ResetTimer()
	var ids []int
	for i := 0; i < b.N; i++ {
		for _, c := range texts {
			ids, _ = v.AppendEncode(ids[:0], c.text)
		}
	}
	b.ReportMetric(float64(ntok)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkDecode(b *testing.B) {
	v := defaultVocab(b)
	texts := corpus(b, 2)
	var all [][]int
	ntok := 0
	for _, c := range texts {
		ids, _ := v.Encode(c.text)
		all = append(all, ids)
		ntok += len(ids)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, ids := range all {
			v.Decode(ids)
		}
	}
	b.ReportMetric(float64(ntok)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
