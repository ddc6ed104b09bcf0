package trace

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ValueKind is the kind of a JSON value in a trace.
type ValueKind uint8

// The kinds. Integers and floats are told apart as they are written: a
// number with a fraction or an exponent is a float.
const (
	Null ValueKind = iota
	Bool
	Int
	Float
	String
	Array
	Object
)

var kindNames = [...]string{"null", "bool", "int", "float", "string", "array", "object"}

func (k ValueKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Value is a JSON value of a trace: an instruction's input or attribute, a
// decision. Strings hold what TVM wrote: an RV name ("b0"), "None", or a
// literal wrapped in quotes ("\"SSSRRSRS\"") for inputs; a bare string for
// attributes. Values are never modified once built; they may share
// storage.
type Value struct {
	Kind ValueKind
	// Int holds an Int, a Bool as 0 or 1, and the bits of a Float (read
	// it with Float).
	Int int64
	Str string
	// Array holds the elements of an Array, and the keys (as String
	// values) and values of an Object, alternating, in the order written.
	Array []Value
}

// Member is one key/value pair of an object.
type Member struct {
	Key   string
	Value Value
}

// Members returns the pairs of an Object.
func (v Value) Members() []Member {
	if v.Kind != Object {
		return nil
	}
	out := make([]Member, len(v.Array)/2)
	for i := range out {
		out[i] = Member{Key: v.Array[2*i].Str, Value: v.Array[2*i+1]}
	}
	return out
}

// ObjectValue builds an Object.
func ObjectValue(ms ...Member) Value {
	a := make([]Value, 0, 2*len(ms))
	for _, m := range ms {
		a = append(a, StringValue(m.Key), m.Value)
	}
	return Value{Kind: Object, Array: a}
}

// Float returns the value of a Float, or of an Int as a float64.
func (v Value) Float() float64 {
	if v.Kind == Int {
		return float64(v.Int)
	}
	return math.Float64frombits(uint64(v.Int))
}

// IsTrue reports whether the value is true: a Bool true, or a non-zero
// Int (TVM writes most flags as 0/1).
func (v Value) IsTrue() bool { return (v.Kind == Bool || v.Kind == Int) && v.Int != 0 }

// Constructors.
func IntValue(v int64) Value     { return Value{Kind: Int, Int: v} }
func FloatValue(v float64) Value { return Value{Kind: Float, Int: int64(math.Float64bits(v))} }
func StringValue(s string) Value { return Value{Kind: String, Str: s} }
func BoolValue(b bool) Value {
	if b {
		return Value{Kind: Bool, Int: 1}
	}
	return Value{Kind: Bool}
}
func ArrayValue(vs ...Value) Value { return Value{Kind: Array, Array: vs} }

// IntsValue is an array of integers.
func IntsValue(vs []int64) Value {
	a := make([]Value, len(vs))
	for i, v := range vs {
		a[i] = IntValue(v)
	}
	return ArrayValue(a...)
}

// Equal reports whether two values are the same (floats by bits).
func (v Value) Equal(w Value) bool {
	if v.Kind != w.Kind {
		return false
	}
	switch v.Kind {
	case Bool, Int, Float:
		return v.Int == w.Int
	case String:
		return v.Str == w.Str
	case Array, Object:
		if len(v.Array) != len(w.Array) {
			return false
		}
		for i := range v.Array {
			if !v.Array[i].Equal(w.Array[i]) {
				return false
			}
		}
	}
	return true
}

// String returns the value in TVM's compact JSON.
func (v Value) String() string { return string(v.AppendJSON(nil)) }

// AppendJSON appends the value in TVM's compact JSON: no spaces, floats
// with 20 significant digits (C's %.20g, which TVM's writer uses).
func (v Value) AppendJSON(b []byte) []byte {
	switch v.Kind {
	case Null:
		return append(b, "null"...)
	case Bool:
		return strconv.AppendBool(b, v.Int != 0)
	case Int:
		return strconv.AppendInt(b, v.Int, 10)
	case Float:
		return appendFloat(b, v.Float())
	case String:
		return appendString(b, v.Str)
	case Array:
		b = append(b, '[')
		for i, x := range v.Array {
			if i > 0 {
				b = append(b, ',')
			}
			b = x.AppendJSON(b)
		}
		return append(b, ']')
	case Object:
		b = append(b, '{')
		for i := 0; i+1 < len(v.Array); i += 2 {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, v.Array[i].Str)
			b = append(b, ':')
			b = v.Array[i+1].AppendJSON(b)
		}
		return append(b, '}')
	}
	return b
}

func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	return strconv.AppendFloat(b, f, 'g', 20, 64)
}

const hexDigits = "0123456789abcdef"

func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}

// maxDepth bounds nesting, so that hostile input cannot exhaust the stack.
const maxDepth = 64

// ErrSyntax is wrapped by every JSON syntax error.
var ErrSyntax = errors.New("invalid JSON")

type parser struct {
	data  []byte
	src   string // data as a string: unescaped strings are slices of it
	pos   int
	stack []Value // elements of the arrays being parsed
	slab  []Value // storage handed out to finished arrays
}

func newParser(data []byte) *parser {
	return &parser{data: data, src: string(data), stack: make([]Value, 0, 32)}
}

// finish moves the elements pushed since mark into storage of exactly
// their size, carved from a slab: one allocation for many small arrays.
func (p *parser) finish(mark int) []Value {
	n := len(p.stack) - mark
	if n > len(p.slab) {
		// About one value per 16 bytes of what is left to read (TVM's
		// traces hold one per 16 or so).
		p.slab = make([]Value, max(n, (len(p.data)-p.pos)/16+32))
	}
	out := p.slab[:n:n]
	p.slab = p.slab[n:]
	copy(out, p.stack[mark:])
	p.stack = p.stack[:mark] // the stack dies with the parser: no need to clear it
	return out
}

// parseValue parses one JSON value (TVM's writer may also produce NaN and
// Infinity, which are accepted) and requires only whitespace after it.
func parseValue(data []byte) (Value, error) {
	p := newParser(data)
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	p.space()
	if p.pos != len(p.data) {
		return Value{}, p.errorf("unexpected %s after the value", p.peekDesc())
	}
	return v, nil
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", ErrSyntax, p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) peekDesc() string {
	if p.pos >= len(p.data) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return strconv.QuoteRune(r)
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) literal(word string) bool {
	if len(p.data)-p.pos >= len(word) && string(p.data[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *parser) value(depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, p.errorf("nesting deeper than %d", maxDepth)
	}
	p.space()
	if p.pos >= len(p.data) {
		return Value{}, p.errorf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '[':
		p.pos++
		mark := len(p.stack)
		p.space()
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			return Value{Kind: Array, Array: []Value{}}, nil
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return Value{}, err
			}
			p.stack = append(p.stack, v)
			p.space()
			if p.pos >= len(p.data) {
				return Value{}, p.errorf("unterminated array")
			}
			if p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.data[p.pos] == ']' {
				p.pos++
				return Value{Kind: Array, Array: p.finish(mark)}, nil
			}
			return Value{}, p.errorf("expected ',' or ']' in array, found %s", p.peekDesc())
		}
	case c == '{':
		p.pos++
		mark := len(p.stack)
		p.space()
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			return Value{Kind: Object, Array: []Value{}}, nil
		}
		for {
			p.space()
			if p.pos >= len(p.data) || p.data[p.pos] != '"' {
				return Value{}, p.errorf("expected a string key in object, found %s", p.peekDesc())
			}
			k, err := p.str()
			if err != nil {
				return Value{}, err
			}
			p.space()
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return Value{}, p.errorf("expected ':' after object key, found %s", p.peekDesc())
			}
			p.pos++
			v, err := p.value(depth + 1)
			if err != nil {
				return Value{}, err
			}
			p.stack = append(p.stack, StringValue(k), v)
			p.space()
			if p.pos >= len(p.data) {
				return Value{}, p.errorf("unterminated object")
			}
			if p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.data[p.pos] == '}' {
				p.pos++
				return Value{Kind: Object, Array: p.finish(mark)}, nil
			}
			return Value{}, p.errorf("expected ',' or '}' in object, found %s", p.peekDesc())
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: String, Str: s}, nil
	case c == 't':
		if p.literal("true") {
			return Value{Kind: Bool, Int: 1}, nil
		}
	case c == 'f':
		if p.literal("false") {
			return Value{Kind: Bool}, nil
		}
	case c == 'n':
		if p.literal("null") {
			return Value{Kind: Null}, nil
		}
	case c == 'N':
		if p.literal("NaN") {
			return FloatValue(math.NaN()), nil
		}
	case c == 'I':
		if p.literal("Infinity") {
			return FloatValue(math.Inf(1)), nil
		}
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return Value{}, p.errorf("unexpected %s", p.peekDesc())
}

func (p *parser) number() (Value, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
		if p.literal("Infinity") {
			return FloatValue(math.Inf(-1)), nil
		}
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	intStart := p.pos
	if digits() == 0 {
		return Value{}, p.errorf("malformed number")
	}
	if p.data[intStart] == '0' && p.pos-intStart > 1 {
		return Value{}, p.errorf("number with a leading zero")
	}
	isFloat := false
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		isFloat = true
		if digits() == 0 {
			return Value{}, p.errorf("malformed number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		isFloat = true
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return Value{}, p.errorf("malformed number")
		}
	}
	text := p.src[start:p.pos]
	if text == "-0" {
		// The float -0 prints as -0 (%.20g); keep it a float so that it
		// prints back the same.
		return FloatValue(math.Copysign(0, -1)), nil
	}
	if !isFloat && p.pos-intStart <= 18 {
		// 18 digits cannot overflow: no need for ParseInt.
		v := int64(0)
		for _, c := range p.data[intStart:p.pos] {
			v = v*10 + int64(c-'0')
		}
		if intStart > start {
			v = -v
		}
		return Value{Kind: Int, Int: v}, nil
	}
	if !isFloat {
		if v, err := strconv.ParseInt(text, 10, 64); err == nil {
			return Value{Kind: Int, Int: v}, nil
		}
		return Value{}, p.errorf("integer %s does not fit in 64 bits", text)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return Value{}, p.errorf("number %s is out of range", text)
	}
	return FloatValue(f), nil
}

func (p *parser) str() (string, error) {
	p.pos++ // the opening quote
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := p.src[start:p.pos]
			p.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	buf := append([]byte(nil), p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			if !utf8.Valid(buf) {
				return "", p.errorf("string is not valid UTF-8")
			}
			return string(buf), nil
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		p.pos++
		if p.pos >= len(p.data) {
			break
		}
		e := p.data[p.pos]
		p.pos++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf("malformed \\u escape")
			}
			if utf16.IsSurrogate(r) {
				if p.literal("\\u") {
					if r2, ok := p.hex4(); ok {
						r = utf16.DecodeRune(r, r2)
					} else {
						return "", p.errorf("malformed \\u escape")
					}
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", p.errorf("unknown escape \\%c", e)
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if len(p.data)-p.pos < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(v), true
}
