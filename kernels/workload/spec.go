package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"dragonx/kernels/ir"
)

// MaxSpecBytes bounds the size of a spec document Parse accepts. The
// largest custom workload of shared/data/tvm-traces is under 10 KiB; a
// megabyte leaves room for hand-written modules and keeps a hostile input
// from costing more than a few milliseconds.
const MaxSpecBytes = 1 << 20

// maxElements bounds the number of elements of any buffer a family builds:
// TVM indexes buffers with int32 when every extent fits, and te_workload's
// shapes are Python ints that become int32 immediates, so a larger buffer
// would not be the function TVM builds.
const maxElements = math.MaxInt32

// FieldError reports an invalid workload spec and names the field at fault:
// a family parameter ("k"), "family" itself, or a path into a custom
// workload ("blocks[2].body").
type FieldError struct {
	Family string // the spec's family, when known
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("kernels: workload")
	if e.Family != "" {
		b.WriteString(" " + e.Family)
	}
	if e.Field != "" {
		b.WriteString(": field " + e.Field)
	}
	b.WriteString(": " + e.Reason)
	return b.String()
}

func fieldErrorf(family, field, format string, args ...any) error {
	return &FieldError{Family: family, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Spec is a parsed, validated workload: a family and its parameters, or a
// custom module. A Spec is immutable and safe for concurrent use.
type Spec struct {
	fam    *family
	vals   []value // one per fam.fields, defaults filled in
	custom *Custom // family "custom"
}

// value is one parameter value; which member is set depends on the field's
// kind.
type value struct {
	i int64
	f float64
	b bool
	s string
}

// Parse decodes and validates a JSON workload spec. Family specs are flat
// objects: {"family":"C2D","N":1,"H":56,"W":56,"CI":64,"CO":64,"k":3,"s":1,
// "p":1}. Every required field of the family must be present, once, with a
// value of its type; optional fields get their defaults; any other field is
// refused. A spec with "family":"custom" describes a module block by block
// (see Custom). Errors are *FieldError values naming the field, except for
// malformed JSON.
func Parse(data []byte) (*Spec, error) {
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("kernels: workload: spec is %d bytes, more than %d", len(data), MaxSpecBytes)
	}
	obj, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	famRaw, ok := obj.get("family")
	if !ok {
		return nil, fieldErrorf("", "family", "missing (known families: %s)", strings.Join(FamilyNames(), ", "))
	}
	var name string
	if err := json.Unmarshal(famRaw, &name); err != nil {
		return nil, fieldErrorf("", "family", "want a string, got %s", abbrev(famRaw))
	}
	if name == CustomFamily {
		c, err := parseCustom(data)
		if err != nil {
			return nil, err
		}
		return &Spec{fam: &family{name: CustomFamily, op: "custom module"}, custom: c}, nil
	}
	fam := lookupFamily(name)
	if fam == nil {
		return nil, fieldErrorf("", "family", "unknown family %q (known: %s)", name, strings.Join(FamilyNames(), ", "))
	}
	for _, kv := range obj {
		if kv.key != "family" && fam.field(kv.key) < 0 {
			return nil, fieldErrorf(fam.name, kv.key, "unknown field (%s takes %s)", fam.name, fam.fieldList())
		}
	}
	s := &Spec{fam: fam, vals: make([]value, len(fam.fields))}
	for i, f := range fam.fields {
		raw, ok := obj.get(f.name)
		if !ok {
			if f.required {
				return nil, fieldErrorf(fam.name, f.name, "missing (%s)", f.doc)
			}
			s.vals[i] = f.def
			continue
		}
		v, err := f.decode(raw)
		if err != nil {
			return nil, &FieldError{Family: fam.name, Field: f.name, Reason: err.Error()}
		}
		s.vals[i] = v
	}
	if err := fam.check(s); err != nil {
		return nil, err
	}
	return s, nil
}

// ParseString is Parse of a string, for tests and literals.
func ParseString(s string) (*Spec, error) { return Parse([]byte(s)) }

// Build parses a spec and builds its function: Parse followed by
// Spec.Build.
func Build(data []byte) (*ir.PrimFunc, error) {
	s, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return s.Build()
}

// Family returns the spec's family name ("C2D", ..., or "custom").
func (s *Spec) Family() string { return s.fam.name }

// Custom returns the custom module description, or nil for a family spec.
func (s *Spec) Custom() *Custom { return s.custom }

// Build returns the unscheduled function, exactly as TVM's te_workload and
// te.create_prim_func build it (see the package documentation). Each call
// returns a new function that the caller owns.
func (s *Spec) Build() (*ir.PrimFunc, error) {
	if s.custom != nil {
		return s.custom.Build()
	}
	f, err := s.fam.build(s)
	if err != nil {
		return nil, fmt.Errorf("kernels: workload %s: %w", s.Canonical(), err)
	}
	return f, nil
}

// Int returns the integer parameter name. It panics if the family has no
// such integer field (a programming error).
func (s *Spec) Int(name string) int64 { return s.val(name, kindInt).i }

// Float returns the float parameter name (panics as Int).
func (s *Spec) Float(name string) float64 { return s.val(name, kindFloat).f }

// Bool returns the bool parameter name (panics as Int).
func (s *Spec) Bool(name string) bool { return s.val(name, kindBool).b }

// Str returns the string parameter name (panics as Int).
func (s *Spec) Str(name string) string { return s.val(name, kindString).s }

// DType returns the element type of the workload's buffers.
func (s *Spec) DType() ir.DType {
	if s.custom != nil {
		return s.custom.dtype
	}
	t, err := ir.ParseDType(s.Str("dtype"))
	if err != nil {
		panic(err) // validated by Parse
	}
	return t
}

func (s *Spec) val(name string, k fieldKind) value {
	i := s.fam.field(name)
	if i < 0 || s.fam.fields[i].kind != k {
		panic(fmt.Sprintf("kernels: workload %s has no %s field %q", s.fam.name, k, name))
	}
	return s.vals[i]
}

// Canonical returns the canonical JSON form of the spec: compact, the
// family first, then the family's fields in the order of its table
// (reference §4.1), with optional fields left out when they hold their
// default. Two specs that describe the same workload have the same
// canonical form, and Parse(Canonical()) gives the spec back. For a custom
// workload it is the normalized description (Custom.Canonical).
func (s *Spec) Canonical() string {
	if s.custom != nil {
		return s.custom.Canonical()
	}
	var b strings.Builder
	b.WriteString(`{"family":`)
	b.WriteString(strconv.Quote(s.fam.name))
	for i, f := range s.fam.fields {
		v := s.vals[i]
		if !f.required && v == f.def {
			continue
		}
		b.WriteString(",")
		b.WriteString(strconv.Quote(f.name))
		b.WriteString(":")
		b.WriteString(f.format(v))
	}
	b.WriteString("}")
	return b.String()
}

// String returns the canonical form.
func (s *Spec) String() string { return s.Canonical() }

// Hash returns the stable hash of the spec: the hexadecimal SHA-256 of its
// canonical form. It depends only on what the spec says, not on how the
// builders lower it, so it names a workload across dragonx versions.
func (s *Spec) Hash() string {
	sum := sha256.Sum256([]byte(s.Canonical()))
	return hex.EncodeToString(sum[:])
}

// Label is a short human name: the family and its required parameters in
// table order, then the optional ones that differ from their default, e.g.
// "C2D(1,224,224,3,64,7,2,3)" or "DENSE(128,128,128,act=relu)". A custom
// workload is labelled with its name.
func (s *Spec) Label() string {
	if s.custom != nil {
		return "custom(" + s.custom.Name + ")"
	}
	var parts []string
	for i, f := range s.fam.fields {
		v := s.vals[i]
		switch {
		case f.required:
			parts = append(parts, f.plain(v))
		case v != f.def:
			parts = append(parts, f.name+"="+f.plain(v))
		}
	}
	return s.fam.name + "(" + strings.Join(parts, ",") + ")"
}

// MarshalJSON writes the canonical form.
func (s *Spec) MarshalJSON() ([]byte, error) { return []byte(s.Canonical()), nil }

// UnmarshalJSON parses data with Parse, so that specs can be read from
// JSON lines with encoding/json.
func (s *Spec) UnmarshalJSON(data []byte) error {
	p, err := Parse(data)
	if err != nil {
		return err
	}
	*s = *p
	return nil
}

// Equal reports whether two specs have the same canonical form.
func (s *Spec) Equal(t *Spec) bool { return s.Canonical() == t.Canonical() }

// fieldKind is the JSON type of a parameter.
type fieldKind uint8

const (
	kindInt fieldKind = iota
	kindFloat
	kindBool
	kindString
)

func (k fieldKind) String() string {
	return [...]string{"integer", "number", "bool", "string"}[k]
}

// field describes one parameter of a family.
type field struct {
	name     string
	kind     fieldKind
	doc      string
	required bool
	def      value
	min      int64    // kindInt: smallest allowed value
	positive bool     // kindFloat: must be > 0
	choices  []string // kindString: allowed values
}

// size is a required integer extent (at least 1).
func size(name, doc string) field {
	return field{name: name, kind: kindInt, doc: doc, required: true, min: 1}
}

// nonneg is a required integer that may be 0 (padding).
func nonneg(name, doc string) field {
	return field{name: name, kind: kindInt, doc: doc, required: true, min: 0}
}

// optInt is an optional integer at least 1 with a default.
func optInt(name, doc string, def int64) field {
	return field{name: name, kind: kindInt, doc: doc, min: 1, def: value{i: def}}
}

func optBool(name, doc string, def bool) field {
	return field{name: name, kind: kindBool, doc: doc, def: value{b: def}}
}

func optFloat(name, doc string, def float64) field {
	return field{name: name, kind: kindFloat, doc: doc, positive: true, def: value{f: def}}
}

func optChoice(name, doc, def string, choices ...string) field {
	return field{name: name, kind: kindString, doc: doc, def: value{s: def}, choices: choices}
}

func choice(name, doc string, choices ...string) field {
	return field{name: name, kind: kindString, doc: doc, required: true, choices: choices}
}

var intLiteral = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

func (f field) decode(raw json.RawMessage) (value, error) {
	switch f.kind {
	case kindInt:
		s := string(raw)
		if !intLiteral.MatchString(s) {
			return value{}, fmt.Errorf("want an integer, got %s", abbrev(raw))
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return value{}, fmt.Errorf("%s is out of range", s)
		}
		if n < f.min {
			if f.min == 1 {
				return value{}, fmt.Errorf("%d must be at least 1 (%s)", n, f.doc)
			}
			return value{}, fmt.Errorf("%d is negative (%s)", n, f.doc)
		}
		if n > maxElements {
			return value{}, fmt.Errorf("%d is larger than %d", n, maxElements)
		}
		return value{i: n}, nil
	case kindFloat:
		var x float64
		if err := json.Unmarshal(raw, &x); err != nil || raw[0] == '"' {
			return value{}, fmt.Errorf("want a number, got %s", abbrev(raw))
		}
		if f.positive && !(x > 0) {
			return value{}, fmt.Errorf("%s must be positive", string(raw))
		}
		return value{f: x}, nil
	case kindBool:
		switch string(raw) {
		case "true":
			return value{b: true}, nil
		case "false":
			return value{b: false}, nil
		}
		return value{}, fmt.Errorf("want true or false, got %s", abbrev(raw))
	default:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return value{}, fmt.Errorf("want a string, got %s", abbrev(raw))
		}
		if len(f.choices) > 0 && !slices.Contains(f.choices, s) {
			return value{}, fmt.Errorf("%q is not one of %s", s, strings.Join(f.choices, ", "))
		}
		return value{s: s}, nil
	}
}

// format writes v as a JSON value.
func (f field) format(v value) string {
	switch f.kind {
	case kindInt:
		return strconv.FormatInt(v.i, 10)
	case kindFloat:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	case kindBool:
		return strconv.FormatBool(v.b)
	}
	return strconv.Quote(v.s)
}

// plain writes v without JSON quoting, for labels.
func (f field) plain(v value) string {
	if f.kind == kindString {
		return v.s
	}
	return f.format(v)
}

// abbrev shortens a raw JSON value for an error message.
func abbrev(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// object is a JSON object's members in input order.
type object []member

type member struct {
	key string
	raw json.RawMessage
}

func (o object) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == key {
			return m.raw, true
		}
	}
	return nil, false
}

// decodeObject reads one JSON object, refusing duplicate keys and trailing
// data.
func decodeObject(data []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("kernels: workload: invalid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("kernels: workload: a spec is a JSON object")
	}
	var obj object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("kernels: workload: invalid JSON: %w", err)
		}
		key := tok.(string) // object keys are strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("kernels: workload: invalid JSON at field %s: %w", key, err)
		}
		if _, dup := obj.get(key); dup {
			return nil, fieldErrorf("", key, "appears twice")
		}
		obj = append(obj, member{key, raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("kernels: workload: invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("kernels: workload: invalid JSON: data after the spec object")
	}
	return obj, nil
}
