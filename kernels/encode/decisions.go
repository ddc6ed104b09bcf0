package encode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"dragonx/kernels/ir"
	"dragonx/kernels/workload"
)

// Tokens is what the decisions format needs of a vocabulary: a
// kernels/vocab.Vocab. It is an interface only because kernels/vocab's
// tests read kernels/encode's texts, so this package cannot import it.
type Tokens interface {
	Encode(text string) ([]int, error)
	AppendEncode(ids []int, text string) ([]int, error)
	Decode(ids []int) (string, error)
	ID(token string) (int, bool)
	Token(id int) (string, bool)
	VocabSize() int
}

// DecisionsPrompt is the prompt of the decisions format (docs/encoding.md):
// instead of the kernel text, the workload's spec and the iteration
// domains of its blocks; instead of scripts, decision streams (the tokens
// of a script that its workload's grammar does not force, kernels/grammar's
// Compact, which Expand turns back into the script). It is written as
// token ids, not text, since a stream is a sequence of a script's tokens
// (Decode of the ids is its readable form):
//
//	@kernel SFM M 768 N 64
//	S768 R64 | S768 S64 | S768 R64 | S768 S64
//	@script
//	GetConsumers b2 2 GetConsumers 1 0      (refinement only: the source's stream, without <eos>)
//	@bucket 7                               (optional, refinement only)
//	@target
//	GetConsumers b2 2 GetConsumers 4 3 <eos>   (what the model writes)
//
// The first line is the spec, its family and then each field's name and
// JSON value in the canonical order (workload.Spec.Canonical, so optional
// fields at their default are left out); the second the blocks after the
// root block, each as its iter vars are written on the kernel text's
// block line, separated by "|" ("-" for a block without iter vars). A
// custom module has no spec line: "@kernel" is followed by its kernel
// text, as in Prompt. The marker words are the vocabulary's tokens of
// Prompt's sections, so the format needs no new tokens.
type DecisionsPrompt struct {
	// Spec is the workload; nil for a workload given by its kernel text
	// (a custom module), which is then Func's.
	Spec *workload.Spec
	// Func is the workload's function (nil: Format builds Spec's).
	Func *ir.PrimFunc
	// Source is the existing script's decision stream without its <eos>
	// (nil: not a refinement; empty: a script with no decision).
	Source []int
	// Bucket is the existing script's latency bucket (LatencyBucket), or
	// -1 for none (always -1 without Source).
	Bucket int
	// Target is the decision stream to write, <eos> included (empty when
	// the prompt asks for it).
	Target []int
}

// markers are the ids of the section tokens and the newline.
type markers struct{ kernel, script, bucket, target, nl int }

func markersOf(v Tokens) (markers, error) {
	var m markers
	for _, t := range []struct {
		s  string
		id *int
	}{{"@kernel", &m.kernel}, {"@script", &m.script}, {"@bucket", &m.bucket}, {"@target", &m.target}, {"\n", &m.nl}} {
		id, ok := v.ID(t.s)
		if !ok {
			return m, fmt.Errorf("encode: decisions prompt: the vocabulary has no %q token", t.s)
		}
		*t.id = id
	}
	return m, nil
}

// Format returns the prompt's token ids in v. With an empty Target they
// end with "@target" and a newline: what a model is given, to continue
// with the stream.
func (p *DecisionsPrompt) Format(v Tokens) ([]int, error) {
	if p.Source == nil && p.Bucket >= 0 {
		return nil, errors.New("encode: decisions prompt: a latency bucket without an existing script")
	}
	if p.Bucket > MaxBucket || p.Bucket < -1 {
		return nil, fmt.Errorf("encode: decisions prompt: latency bucket %d is outside 0 to %d", p.Bucket, MaxBucket)
	}
	m, err := markersOf(v)
	if err != nil {
		return nil, err
	}
	head, err := p.head()
	if err != nil {
		return nil, err
	}
	ids, err := v.Encode(head)
	if err != nil {
		return nil, fmt.Errorf("encode: decisions prompt: %w", err)
	}
	if p.Source != nil {
		ids = append(ids, m.script, m.nl)
		ids = append(ids, p.Source...)
		ids = append(ids, m.nl)
		if p.Bucket >= 0 {
			if ids, err = v.AppendEncode(ids, "@bucket "+strconv.Itoa(p.Bucket)+"\n"); err != nil {
				return nil, fmt.Errorf("encode: decisions prompt: %w", err)
			}
		}
	}
	ids = append(ids, m.target, m.nl)
	return append(ids, p.Target...), nil
}

// Text is the prompt for people: the @kernel section's text, and the
// streams as StreamText shows them (the target's <eos> as the word
// "<eos>").
func (p *DecisionsPrompt) Text(v Tokens) (string, error) {
	head, err := p.head()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(head)
	if p.Source != nil {
		src, err := StreamText(v, p.Source)
		if err != nil {
			return "", err
		}
		b.WriteString("@script\n" + src + "\n")
		if p.Bucket >= 0 {
			b.WriteString("@bucket " + strconv.Itoa(p.Bucket) + "\n")
		}
	}
	b.WriteString("@target\n")
	t, err := StreamText(v, p.Target)
	if err != nil {
		return "", err
	}
	b.WriteString(t)
	return b.String(), nil
}

// StreamText shows a decision stream as text: its tokens' strings
// separated by spaces. A continuation token keeps its "##" (vocab.Decode
// would glue it to the token before it, which in a stream is another
// decision, not its number's first token).
func StreamText(v Tokens, ids []int) (string, error) {
	words := make([]string, len(ids))
	for i, id := range ids {
		w, ok := v.Token(id)
		if !ok {
			return "", fmt.Errorf("encode: stream token %d is id %d, outside the vocabulary", i, id)
		}
		words[i] = w
	}
	return strings.Join(words, " "), nil
}

// head is the text of the @kernel section: the spec and block lines, or
// a custom module's kernel text.
func (p *DecisionsPrompt) head() (string, error) {
	f := p.Func
	if f == nil {
		if p.Spec == nil {
			return "", errors.New("encode: decisions prompt: neither a spec nor a function")
		}
		var err error
		if f, err = p.Spec.Build(); err != nil {
			return "", fmt.Errorf("encode: decisions prompt: %w", err)
		}
	}
	if p.Spec == nil || p.Spec.Custom() != nil {
		k, err := Kernel(f)
		if err != nil {
			return "", err
		}
		return "@kernel\n" + string(k), nil
	}
	spec, err := SpecLine(p.Spec)
	if err != nil {
		return "", err
	}
	return "@kernel " + spec + "\n" + BlocksLine(f) + "\n", nil
}

// SpecLine is a family spec as the decisions prompt writes it: the family,
// then each field of its canonical form as name and JSON value, separated
// by spaces ("SFM M 768 N 64").
func SpecLine(s *workload.Spec) (string, error) {
	if s.Custom() != nil {
		return "", fmt.Errorf("encode: a custom module (%s) has no spec line", s.Label())
	}
	dec := json.NewDecoder(strings.NewReader(s.Canonical()))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return "", fmt.Errorf("encode: spec %s: %w", s.Label(), err)
	}
	words := []string{}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", fmt.Errorf("encode: spec %s: %w", s.Label(), err)
		}
		val, err := dec.Token()
		if err != nil {
			return "", fmt.Errorf("encode: spec %s: %w", s.Label(), err)
		}
		var w string
		switch x := val.(type) {
		case json.Number:
			w = x.String()
		case bool:
			w = strconv.FormatBool(x)
		case string:
			w = strconv.Quote(x)
			if key == "family" {
				w = x
			}
		default:
			return "", fmt.Errorf("encode: spec %s: field %v is not a number, bool or string", s.Label(), key)
		}
		if key != "family" {
			words = append(words, key.(string))
		}
		words = append(words, w)
	}
	return strings.Join(words, " "), nil
}

// BlocksLine is the iteration domains of f's blocks after the root, as the
// decisions prompt writes them ("S768 R64 | S768 S64").
func BlocksLine(f *ir.PrimFunc) string {
	var b strings.Builder
	for i, blk := range ir.Blocks(f) {
		if i == 0 {
			continue // the root block, which holds the others
		}
		if i > 1 {
			b.WriteString(" | ")
		}
		if len(blk.IterVars) == 0 {
			b.WriteByte('-')
		}
		for k, iv := range blk.IterVars {
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(iterVarWord(iv))
		}
	}
	return b.String()
}

// maxDecisionsPrompt bounds the number of ids ParseDecisionsPrompt reads:
// a kernel text's tokens and two streams are far fewer.
const maxDecisionsPrompt = 1 << 16

// specWord is a field name of a family spec.
var specWord = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseDecisionsPrompt reads a decisions prompt's ids and checks them: the
// spec line must be a valid spec in canonical form whose function has the
// blocks of the block line (a kernel text must rebuild a function,
// ParseKernel), and the ids must be exactly what Format writes of the
// result. The streams are not checked against the workload's grammar
// (that is kernels/grammar's Expand).
func ParseDecisionsPrompt(v Tokens, ids []int) (*DecisionsPrompt, error) {
	if len(ids) > maxDecisionsPrompt {
		return nil, fmt.Errorf("decode: decisions prompt: %w: %d tokens", ErrSyntax, len(ids))
	}
	for i, id := range ids {
		if id < 0 || id >= v.VocabSize() {
			return nil, fmt.Errorf("decode: decisions prompt: %w: token %d is id %d, outside the vocabulary", ErrSyntax, i, id)
		}
	}
	m, err := markersOf(v)
	if err != nil {
		return nil, err
	}
	syntax := func(format string, args ...any) error {
		return fmt.Errorf("decode: decisions prompt: %w: %s", ErrSyntax, fmt.Sprintf(format, args...))
	}
	if len(ids) == 0 || ids[0] != m.kernel {
		return nil, syntax("it must start with @kernel")
	}
	end := slices.IndexFunc(ids, func(id int) bool { return id == m.script || id == m.target })
	if end < 0 {
		return nil, syntax("no @script or @target")
	}
	head, err := v.Decode(ids[:end])
	if err != nil {
		return nil, fmt.Errorf("decode: decisions prompt: %w", err)
	}
	p := &DecisionsPrompt{Bucket: -1}
	if err := p.parseHead(head); err != nil {
		return nil, err
	}
	rest := ids[end:]
	if rest[0] == m.script {
		if len(rest) < 2 || rest[1] != m.nl {
			return nil, syntax("@script must end its line")
		}
		j := slices.IndexFunc(rest, func(id int) bool { return id == m.bucket || id == m.target })
		if j < 0 || rest[j-1] != m.nl || j < 3 {
			return nil, syntax("the source stream must end with a newline before @bucket or @target")
		}
		p.Source = append([]int{}, rest[2:j-1]...)
		rest = rest[j:]
		if rest[0] == m.bucket {
			k := slices.Index(rest, m.target)
			if k < 0 {
				return nil, syntax("no @target after @bucket")
			}
			b, err := v.Decode(rest[:k])
			if err != nil {
				return nil, fmt.Errorf("decode: decisions prompt: %w", err)
			}
			num, ok := strings.CutPrefix(b, "@bucket ")
			n, err := strconv.Atoi(strings.TrimSuffix(num, "\n"))
			if !ok || err != nil || n < 0 || n > MaxBucket || strconv.Itoa(n)+"\n" != num {
				return nil, syntax("@bucket wants a number from 0 to %d on its line, got %q", MaxBucket, b)
			}
			p.Bucket = n
			rest = rest[k:]
		}
	}
	if rest[0] != m.target || len(rest) < 2 || rest[1] != m.nl {
		return nil, syntax("expected @target and a newline")
	}
	if len(rest) > 2 {
		p.Target = append([]int{}, rest[2:]...)
	}
	again, err := p.Format(v)
	if err != nil {
		return nil, fmt.Errorf("decode: decisions prompt: %w", err)
	}
	if !slices.Equal(again, ids) {
		return nil, syntax("not in canonical form (Format writes it otherwise)")
	}
	return p, nil
}

// parseHead reads the @kernel section's text into p.Spec and p.Func.
func (p *DecisionsPrompt) parseHead(head string) error {
	syntax := func(format string, args ...any) error {
		return fmt.Errorf("decode: decisions prompt: %w: %s", ErrSyntax, fmt.Sprintf(format, args...))
	}
	if k, ok := strings.CutPrefix(head, "@kernel\n"); ok {
		f, err := ParseKernel([]byte(k))
		if err != nil {
			return fmt.Errorf("decode: decisions prompt: %w", err)
		}
		p.Func = f
		return nil
	}
	body, ok := strings.CutPrefix(head, "@kernel ")
	if !ok {
		return syntax("@kernel must be followed by a spec or end its line")
	}
	lines := strings.Split(body, "\n")
	if len(lines) != 3 || lines[2] != "" {
		return syntax("the @kernel section must be two lines, the spec and the blocks")
	}
	words := strings.Split(lines[0], " ")
	if len(words)%2 != 1 {
		return syntax("the spec line must be a family and pairs of field name and value")
	}
	var js bytes.Buffer
	js.WriteString(`{"family":`)
	js.WriteString(strconv.Quote(words[0]))
	for i := 1; i < len(words); i += 2 {
		name, val := words[i], words[i+1]
		if !specWord.MatchString(name) || !jsonScalar(val) {
			return syntax("spec field %q = %q: want a name and a JSON number, bool or string", name, val)
		}
		js.WriteString("," + strconv.Quote(name) + ":" + val)
	}
	js.WriteString("}")
	s, err := workload.Parse(js.Bytes())
	if err != nil {
		return fmt.Errorf("decode: decisions prompt: the spec: %w", err)
	}
	if s.Custom() != nil {
		return syntax("a custom module is written as its kernel text")
	}
	f, err := s.Build()
	if err != nil {
		return fmt.Errorf("decode: decisions prompt: the spec: %w", err)
	}
	if want := BlocksLine(f); lines[1] != want {
		return syntax("the block line %q is not the spec's blocks %q", lines[1], want)
	}
	p.Spec, p.Func = s, f
	return nil
}

// jsonScalar reports whether w is one JSON number, bool or string.
func jsonScalar(w string) bool {
	dec := json.NewDecoder(strings.NewReader(w))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return false
	}
	switch t.(type) {
	case json.Number, bool, string:
	default:
		return false
	}
	_, err = dec.Token()
	return errors.Is(err, io.EOF)
}
