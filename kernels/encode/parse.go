package encode

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"dragonx/kernels/trace"
)

// ErrSyntax is wrapped by every error about the form of a script (as
// opposed to its meaning, which replaying it checks).
var ErrSyntax = errors.New("script syntax")

// maxScript bounds the size of a script that Parse accepts.
const maxScript = 1 << 22

// sInst is one instruction of a script, as written.
type sInst struct {
	kind     string
	inputs   []sNode
	attrs    []trace.Value // block names (#k) resolved
	decision *trace.Value
	line     int
}

type nodeKind uint8

const (
	nodeValue  nodeKind = iota // a literal (None, a quoted string, a number, ...)
	nodeRef                    // b3, l12, v0
	nodeArray                  // [ ... ]
	nodeObject                 // { "key" value ... }: elems alternate keys and values
	nodeInline                 // ( inst ): its outputs, spliced in
)

type sNode struct {
	kind   nodeKind
	val    trace.Value
	ref    ref
	elems  []sNode
	inline *sInst
}

// parser reads script text. blocks are the workload's block names by
// pre-order index (#k).
type parser struct {
	src    []byte
	pos    int
	line   int
	blocks []string
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: line %d, byte %d: %s", ErrSyntax, p.line, p.pos, fmt.Sprintf(format, args...))
}

// parseScript reads a whole script: one instruction per line, each line
// ended by a newline.
func parseScript(src []byte, blocks []string) ([]sInst, error) {
	if len(src) > maxScript {
		return nil, fmt.Errorf("%w: the script has %d bytes, more than %d", ErrSyntax, len(src), maxScript)
	}
	p := &parser{src: src, line: 1, blocks: blocks}
	var out []sInst
	for p.pos < len(p.src) {
		in, err := p.inst(false)
		if err != nil {
			return nil, err
		}
		p.spaces()
		if p.pos >= len(p.src) || p.src[p.pos] != '\n' {
			return nil, p.errorf("expected the end of the line after instruction %s, found %s", in.kind, p.desc())
		}
		p.pos++
		p.line++
		out = append(out, in)
	}
	return out, nil
}

func (p *parser) spaces() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
}

// desc describes what is at the cursor, for messages.
func (p *parser) desc() string {
	if p.pos >= len(p.src) {
		return "the end of the script"
	}
	c := p.src[p.pos]
	if c == '\n' {
		return "the end of the line"
	}
	end := p.pos + 1
	for end < len(p.src) && end-p.pos < 16 && isWordByte(p.src[end]) && isWordByte(c) {
		end++
	}
	return strconv.Quote(string(p.src[p.pos:end]))
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.'
}

// peek returns the next non-space byte (0 at the end).
func (p *parser) peek() byte {
	p.spaces()
	if p.pos >= len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func (p *parser) word() string {
	start := p.pos
	for p.pos < len(p.src) && isWordByte(p.src[p.pos]) {
		p.pos++
	}
	return string(p.src[start:p.pos])
}

// inst reads KIND input* ['|' attr*] ['=' attr]; inner is true inside
// an inline instruction's parentheses.
func (p *parser) inst(inner bool) (sInst, error) {
	in := sInst{line: p.line}
	if c := p.peek(); c < 'A' || c > 'Z' {
		return in, p.errorf("expected an instruction kind, found %s", p.desc())
	}
	at := p.pos
	in.kind = p.word()
	if err := isKind(in.kind); err != nil {
		p.pos = at
		return in, p.errorf("%v", err)
	}
	inlined := false
	for {
		c := p.peek()
		if c == 0 || c == '\n' || c == '|' || c == '=' || c == ')' {
			break
		}
		if c == '(' {
			if inner {
				return in, p.errorf("an inlined instruction cannot inline another")
			}
			if inlined {
				return in, p.errorf("an instruction inlines at most one other")
			}
			inlined = true
			p.pos++
			sub, err := p.inst(true)
			if err != nil {
				return in, err
			}
			if p.peek() != ')' {
				return in, p.errorf("expected ')' after the inlined %s, found %s", sub.kind, p.desc())
			}
			p.pos++
			if sub.decision == nil {
				return in, p.errorf("the inlined %s has no decision (only sampling instructions are inlined)", sub.kind)
			}
			in.inputs = append(in.inputs, sNode{kind: nodeInline, inline: &sub})
			continue
		}
		n, err := p.input(0)
		if err != nil {
			return in, err
		}
		in.inputs = append(in.inputs, n)
	}
	if p.peek() == '|' {
		p.pos++
		for {
			c := p.peek()
			if c == 0 || c == '\n' || c == '=' || c == ')' {
				break
			}
			v, err := p.attr(0)
			if err != nil {
				return in, err
			}
			in.attrs = append(in.attrs, v)
		}
		if len(in.attrs) == 0 {
			return in, p.errorf("'|' with no attribute after it (leave it out when there are none)")
		}
	}
	if p.peek() == '=' {
		p.pos++
		if c := p.peek(); c == 0 || c == '\n' || c == ')' {
			return in, p.errorf("'=' with no decision after it")
		}
		v, err := p.attr(0)
		if err != nil {
			return in, err
		}
		in.decision = &v
	}
	return in, nil
}

func (p *parser) input(depth int) (sNode, error) {
	if depth > maxDepth {
		return sNode{}, p.errorf("values nested deeper than %d", maxDepth)
	}
	switch c := p.peek(); {
	case c == '[':
		p.pos++
		n := sNode{kind: nodeArray, elems: []sNode{}}
		for p.peek() != ']' {
			if c := p.peek(); c == 0 || c == '\n' {
				return sNode{}, p.errorf("unterminated '['")
			}
			e, err := p.input(depth + 1)
			if err != nil {
				return sNode{}, err
			}
			n.elems = append(n.elems, e)
		}
		p.pos++
		return n, nil
	case c == '{':
		p.pos++
		n := sNode{kind: nodeObject, elems: []sNode{}}
		for p.peek() != '}' {
			k, err := p.key()
			if err != nil {
				return sNode{}, err
			}
			e, err := p.input(depth + 1)
			if err != nil {
				return sNode{}, err
			}
			n.elems = append(n.elems, sNode{val: k}, e)
		}
		p.pos++
		return n, nil
	case c == '"':
		s, err := p.str()
		if err != nil {
			return sNode{}, err
		}
		// A quoted literal input is written in the trace with its quotes.
		return sNode{val: trace.StringValue(`"` + s + `"`)}, nil
	case c == 'b' || c == 'l' || c == 'v':
		at := p.pos
		w := p.word()
		typ, _ := rvTypeOf(w)
		if len(w) < 2 || (w[1] == '0' && len(w) > 2) {
			p.pos = at
			return sNode{}, p.errorf("expected a value, found %s", p.desc())
		}
		k, err := strconv.Atoi(w[1:])
		if err != nil || k < 0 {
			p.pos = at
			return sNode{}, p.errorf("malformed reference %s", strconv.Quote(w))
		}
		return sNode{kind: nodeRef, ref: ref{typ, k}}, nil
	case c == 'N' && p.has("None"):
		p.pos += len("None")
		return sNode{val: trace.StringValue("None")}, nil
	case c == '#':
		return sNode{}, p.errorf("a block name (#k) is an attribute, not an input")
	}
	v, err := p.scalar()
	if err != nil {
		return sNode{}, err
	}
	return sNode{val: v}, nil
}

func (p *parser) attr(depth int) (trace.Value, error) {
	if depth > maxDepth {
		return trace.Value{}, p.errorf("values nested deeper than %d", maxDepth)
	}
	switch c := p.peek(); c {
	case '[':
		p.pos++
		vs := []trace.Value{}
		for p.peek() != ']' {
			if c := p.peek(); c == 0 || c == '\n' {
				return trace.Value{}, p.errorf("unterminated '['")
			}
			v, err := p.attr(depth + 1)
			if err != nil {
				return trace.Value{}, err
			}
			vs = append(vs, v)
		}
		p.pos++
		return trace.ArrayValue(vs...), nil
	case '{':
		p.pos++
		var ms []trace.Member
		for p.peek() != '}' {
			k, err := p.key()
			if err != nil {
				return trace.Value{}, err
			}
			v, err := p.attr(depth + 1)
			if err != nil {
				return trace.Value{}, err
			}
			ms = append(ms, trace.Member{Key: k.Str, Value: v})
		}
		p.pos++
		return trace.ObjectValue(ms...), nil
	case '"':
		s, err := p.str()
		if err != nil {
			return trace.Value{}, err
		}
		return trace.StringValue(s), nil
	case '#':
		p.pos++
		at := p.pos
		w := p.word()
		k, err := strconv.Atoi(w)
		if err != nil || k < 0 || (len(w) > 1 && w[0] == '0') {
			p.pos = at
			return trace.Value{}, p.errorf("expected a block index after '#', found %s", p.desc())
		}
		if k >= len(p.blocks) {
			p.pos = at
			return trace.Value{}, p.errorf("block #%d: the workload has %d blocks (#0 to #%d)", k, len(p.blocks), len(p.blocks)-1)
		}
		return trace.StringValue(p.blocks[k]), nil
	}
	return p.scalar()
}

func (p *parser) key() (trace.Value, error) {
	if c := p.peek(); c != '"' {
		if c == 0 || c == '\n' {
			return trace.Value{}, p.errorf("unterminated '{'")
		}
		return trace.Value{}, p.errorf("expected a quoted key, found %s", p.desc())
	}
	s, err := p.str()
	if err != nil {
		return trace.Value{}, err
	}
	return trace.StringValue(s), nil
}

func (p *parser) has(w string) bool {
	end := p.pos + len(w)
	return end <= len(p.src) && string(p.src[p.pos:end]) == w && (end == len(p.src) || !isWordByte(p.src[end]))
}

// str reads a Go-quoted string.
func (p *parser) str() (string, error) {
	start := p.pos
	p.pos++
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '\\':
			p.pos += 2
			continue
		case '\n':
			p.pos = start
			return "", p.errorf("unterminated string")
		case '"':
			p.pos++
			s, err := strconv.Unquote(string(p.src[start:p.pos]))
			if err != nil {
				p.pos = start
				return "", p.errorf("malformed string %s", p.desc())
			}
			return s, nil
		}
		p.pos++
	}
	p.pos = start
	return "", p.errorf("unterminated string")
}

// scalar reads null, true, false, NaN, Infinity, -Infinity or a number
// (a float has a '.' or an exponent).
func (p *parser) scalar() (trace.Value, error) {
	for _, w := range [...]string{"null", "true", "false", "NaN", "Infinity", "-Infinity"} {
		if p.has(w) {
			p.pos += len(w)
			switch w {
			case "null":
				return trace.Value{Kind: trace.Null}, nil
			case "true":
				return trace.BoolValue(true), nil
			case "false":
				return trace.BoolValue(false), nil
			case "NaN":
				return trace.FloatValue(math.NaN()), nil
			case "Infinity":
				return trace.FloatValue(math.Inf(1)), nil
			}
			return trace.FloatValue(math.Inf(-1)), nil
		}
	}
	start := p.pos
	isFloat := false
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '.' || c == 'e' || c == 'E' {
			isFloat = true
		} else if !(c >= '0' && c <= '9' || c == '-' || c == '+') {
			break
		}
		p.pos++
	}
	text := string(p.src[start:p.pos])
	if text == "" {
		return trace.Value{}, p.errorf("expected a value, found %s", p.desc())
	}
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			p.pos = start
			return trace.Value{}, p.errorf("malformed number %s", strconv.Quote(text))
		}
		return trace.FloatValue(f), nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		p.pos = start
		return trace.Value{}, p.errorf("malformed integer %s", strconv.Quote(text))
	}
	return trace.IntValue(n), nil
}
