package dragon

import (
	"strings"
	"testing"
)

func TestWordTokenizer(t *testing.T) {
	tok, err := NewWordTokenizer([]string{"<s>", "split", "l0", "l1", "32", ";"})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode("  split l0 32\n; ")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 4, 5}; !equalInts(ids, want) {
		t.Errorf("Encode = %v; want %v", ids, want)
	}
	text, err := tok.Decode(ids)
	if err != nil || text != "split l0 32 ;" {
		t.Errorf("Decode(%v) = %q, %v; want %q", ids, text, err, "split l0 32 ;")
	}
	if _, err := tok.Encode("split l7"); err == nil || !strings.Contains(err.Error(), `"l7"`) {
		t.Errorf("Encode of an unknown word: %v", err)
	}
	if _, err := tok.Decode([]int{0, 6}); err == nil {
		t.Error("Decode of an id outside the vocabulary gave no error")
	}
	if tok.VocabSize() != 6 {
		t.Errorf("VocabSize() = %d; want 6", tok.VocabSize())
	}
	bad := [][]string{nil, {"a", "a"}, {"a b"}, {""}}
	for _, v := range bad {
		if _, err := NewWordTokenizer(v); err == nil {
			t.Errorf("NewWordTokenizer(%q) gave no error", v)
		}
	}
}

func TestVocabularyIdentity(t *testing.T) {
	a := VocabularyIdentity("word/v1", []string{"a", "b"})
	tests := []struct {
		kind   string
		tokens []string
		same   bool
	}{
		{"word/v1", []string{"a", "b"}, true},
		{"word/v1", []string{"b", "a"}, false},
		{"word/v2", []string{"a", "b"}, false},
		{"word/v1", []string{"ab"}, false},
		{"word/v1", []string{"a", "b", ""}, false},
	}
	for _, tt := range tests {
		if got := VocabularyIdentity(tt.kind, tt.tokens); (got == a) != tt.same {
			t.Errorf("VocabularyIdentity(%q, %q) = %s; same as %s: %v, want %v", tt.kind, tt.tokens, got, a, got == a, tt.same)
		}
	}
	if !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+64 {
		t.Errorf("identity %q is not sha256:<64 hex>", a)
	}
	tok, _ := NewWordTokenizer([]string{"a", "b"})
	if tok.Identity() != a {
		t.Errorf("WordTokenizer identity %s; want %s", tok.Identity(), a)
	}
}

// FuzzWordTokenizer checks that encoding and decoding round-trip any text
// made of vocabulary words, and that Encode never panics.
func FuzzWordTokenizer(f *testing.F) {
	f.Add("split l0 32 ;")
	f.Add("  \t\n")
	f.Add("split\u00a0l0 ;;")
	tok, err := NewWordTokenizer([]string{"split", "l0", "32", ";"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ids, err := tok.Encode(text)
		if err != nil {
			return
		}
		back, err := tok.Decode(ids)
		if err != nil {
			t.Fatalf("Decode(Encode(%q)) failed: %v", text, err)
		}
		if want := strings.Join(strings.Fields(text), " "); back != want {
			t.Fatalf("Decode(Encode(%q)) = %q; want %q", text, back, want)
		}
	})
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
