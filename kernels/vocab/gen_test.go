package vocab

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
)

var update = flag.Bool("update", false, "rewrite vocab.txt from the fixed tokens and the corpus")

// fixedTokens are the tokens the vocabulary must hold whatever the corpus:
// the special and structural tokens, every instruction kind, the words
// of both texts, the numbers and the printable ASCII bytes, word-initial
// and continuation.
func fixedTokens() []string {
	out := []string{Pad, EOS, "\n", "[", "]", "(", ")", "{", "}", "|", "=", "#", "$", "-1",
		"@kernel", "@script", "@bucket", "@target",
		"None", "true", "false", "null", "NaN", "Infinity", "-Infinity"}
	for _, k := range trace.Kinds() {
		out = append(out, k.Name)
	}
	out = append(out, "kernel", "param", "alloc", "block", "seq", "for", "realize", "where", "store",
		"if", "ifelse", "nop", "reads", "writes", "ann", "init", "not", "select", "cast",
		"parallel", "vectorized", "unrolled", "thread_binding")
	for op := ir.OpAdd; op <= ir.OpOr; op++ {
		out = append(out, op.String())
	}
	for op := ir.CallIfThenElse; ; op++ {
		name := op.String()
		if _, ok := ir.ParseCallOp(name); !ok {
			break
		}
		out = append(out, name)
	}
	for dt := ir.Bool; dt <= ir.Float64; dt++ {
		out = append(out, dt.String())
	}
	for _, s := range []string{"main", "root", "global", "shared", "local", "shared.dyn",
		"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
		"vthread.x", "vthread.y", "vthread.z",
		"meta_schedule.tiling_structure", "meta_schedule.cooperative_fetch",
		"meta_schedule.thread_extent_low_inclusive", "meta_schedule.thread_extent_high_inclusive",
		"meta_schedule.unroll_explicit", "meta_schedule.unroll_implicit", "meta_schedule.vectorize",
		"meta_schedule.parallel", "pragma_auto_unroll_max_step", "pragma_unroll_explicit"} {
		out = append(out, strconv.Quote(s))
	}
	// References (script: blocks, loops, values, block names; kernel:
	// iter vars, loops, buffers) up to their limits are one token.
	for _, r := range []struct {
		prefix string
		n      int
	}{{"b", 64}, {"l", 256}, {"v", 64}, {"#", 64}, {"i", 64}, {"$", 64}} {
		for k := 0; k < r.n; k++ {
			out = append(out, r.prefix+strconv.Itoa(k))
		}
	}
	for n := 0; n <= MaxNumber; n++ {
		out = append(out, strconv.Itoa(n))
	}
	for n := 0; n <= MaxNumber; n++ {
		out = append(out, "##"+strconv.Itoa(n))
	}
	for c := byte(0x21); c < 0x7f; c++ {
		out = append(out, string(c))
	}
	for c := byte(0x20); c < 0x7f; c++ {
		out = append(out, "##"+string(c))
	}
	return out
}

// corpusTokens are the words of the corpus worth a token of their own:
// quoted strings and floats that occur at least twice.
func corpusTokens(texts []text) []string {
	count := map[string]int{}
	for _, t := range texts {
		for _, w := range words(t.text) {
			count[w]++
		}
	}
	var out []string
	for w, n := range count {
		if n < 2 {
			continue
		}
		if strings.HasPrefix(w, `"`) && len(w) >= 2 {
			out = append(out, w)
			continue
		}
		if _, err := strconv.ParseFloat(w, 64); err == nil && strings.ContainsAny(w, ".e") {
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}

// words cuts text as Encode does (without checking the spacing).
func words(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\n':
			i++
		case isOpen(c) || isClose(c):
			out = append(out, s[i:i+1])
			i++
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(s))
			out = append(out, s[i:j])
			i = j
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \n[](){}\"", rune(s[j])) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

func vocabFile(tokens []string) []byte {
	var b bytes.Buffer
	seen := map[string]bool{}
	for _, t := range tokens {
		if seen[t] {
			continue
		}
		seen[t] = true
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		e.Encode(t) // a string always encodes; Encode ends the line
	}
	return b.Bytes()
}

// TestVocabFile: vocab.txt holds every fixed token (every instruction
// kind among them: a kind added to kernels/trace needs the file
// regenerated, with -update, which changes the vocabulary's identity).
func TestVocabFile(t *testing.T) {
	if *update {
		data := vocabFile(append(fixedTokens(), corpusTokens(corpus(t, *corpusDraws))...))
		if err := os.WriteFile("vocab.txt", data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range fixedTokens() {
		if _, ok := v.ID(tok); !ok {
			t.Errorf("vocab.txt lacks %q: regenerate it with go test ./kernels/vocab -run TestVocabFile -update", tok)
		}
	}
	t.Logf("%d tokens, identity %s", v.VocabSize(), v.Identity())
}
