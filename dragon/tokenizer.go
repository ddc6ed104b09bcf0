package dragon

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
)

// Tokenizer turns text into token ids and back. The model only sees ids; a
// checkpoint records the tokenizer's Identity so that a model is never used
// with a vocabulary it was not trained on.
type Tokenizer interface {
	// Encode returns the ids of text, or an error naming what cannot be
	// encoded.
	Encode(text string) ([]int, error)
	// Decode returns the text of ids, or an error for an id outside the
	// vocabulary.
	Decode(ids []int) (string, error)
	// VocabSize is the number of ids; every id is in [0, VocabSize).
	VocabSize() int
	// Identity names the tokenizer exactly: two tokenizers with the same
	// identity encode every text the same way. VocabularyIdentity computes
	// one from a kind name and the vocabulary.
	Identity() string
}

// VocabularyIdentity is the identity of a tokenizer of the given kind (a
// name that changes whenever the encoding rules change, e.g. "word/v1") and
// vocabulary (token strings in id order): "sha256:" and the hex SHA-256 of
// the kind and the length-prefixed tokens.
func VocabularyIdentity(kind string, tokens []string) string {
	h := sha256.New()
	var n [8]byte
	write := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write("dragon tokenizer")
	write(kind)
	binary.LittleEndian.PutUint64(n[:], uint64(len(tokens)))
	h.Write(n[:])
	for _, t := range tokens {
		write(t)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// WordTokenizer is a closed word-level tokenizer: text is split at white
// space and each word must be in the vocabulary. It suits languages with a
// small closed vocabulary (schedule scripts, synthetic tasks). Decode joins
// words with single spaces. It is safe for concurrent use.
type WordTokenizer struct {
	tokens []string
	ids    map[string]int
	id     string
}

// wordTokenizerKind versions WordTokenizer's encoding rules.
const wordTokenizerKind = "word/v1"

// NewWordTokenizer returns a tokenizer whose id i is tokens[i]. Tokens must
// be unique, non-empty and free of white space.
func NewWordTokenizer(tokens []string) (*WordTokenizer, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("dragon: word tokenizer: empty vocabulary")
	}
	ids := make(map[string]int, len(tokens))
	for i, t := range tokens {
		if t == "" || strings.IndexFunc(t, unicode.IsSpace) >= 0 {
			return nil, fmt.Errorf("dragon: word tokenizer: token %d (%q) is empty or contains white space", i, t)
		}
		if j, dup := ids[t]; dup {
			return nil, fmt.Errorf("dragon: word tokenizer: token %q appears twice (ids %d and %d)", t, j, i)
		}
		ids[t] = i
	}
	cp := append([]string(nil), tokens...)
	return &WordTokenizer{tokens: cp, ids: ids, id: VocabularyIdentity(wordTokenizerKind, cp)}, nil
}

// Encode implements Tokenizer.
func (w *WordTokenizer) Encode(text string) ([]int, error) {
	words := strings.Fields(text)
	out := make([]int, len(words))
	for i, word := range words {
		id, ok := w.ids[word]
		if !ok {
			return nil, fmt.Errorf("dragon: word tokenizer: %q (word %d) is not in the vocabulary", word, i)
		}
		out[i] = id
	}
	return out, nil
}

// Decode implements Tokenizer.
func (w *WordTokenizer) Decode(ids []int) (string, error) {
	var b strings.Builder
	for i, id := range ids {
		if id < 0 || id >= len(w.tokens) {
			return "", fmt.Errorf("dragon: word tokenizer: id %d (position %d) is outside the vocabulary of %d", id, i, len(w.tokens))
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.tokens[id])
	}
	return b.String(), nil
}

// VocabSize implements Tokenizer.
func (w *WordTokenizer) VocabSize() int { return len(w.tokens) }

// Identity implements Tokenizer.
func (w *WordTokenizer) Identity() string { return w.id }

// Token returns the string of id, and false when id is outside the vocabulary.
func (w *WordTokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= len(w.tokens) {
		return "", false
	}
	return w.tokens[id], true
}

// ID returns the id of token, and false when it is not in the vocabulary.
func (w *WordTokenizer) ID(token string) (int, bool) {
	id, ok := w.ids[token]
	return id, ok
}
