package corpus

import (
	"fmt"
	"math"
	"strconv"
)

// evalExpr evaluates an integer field of a layer table: integers, variable
// names, + - * and / with the usual precedence, and parentheses. Division
// rounds up (ceil), so "r/4" is the side of a feature map after two
// stride-2 stages with "same" padding at any input size r. Every
// intermediate value must stay within ±2^40, which keeps sizes far from
// overflow; a division by zero or a negative divisor is an error.
func evalExpr(src string, vars map[string]int64) (int64, error) {
	p := exprParser{src: src, vars: vars}
	v, err := p.sum()
	if err != nil {
		return 0, fmt.Errorf("expression %q: %w", src, err)
	}
	p.space()
	if p.pos < len(p.src) {
		return 0, fmt.Errorf("expression %q: unexpected %q at offset %d", src, p.src[p.pos:], p.pos)
	}
	return v, nil
}

const exprLimit = 1 << 40

type exprParser struct {
	src   string
	pos   int
	depth int // nesting of parentheses and unary minus
	vars  map[string]int64
}

// maxExprDepth bounds the nesting of an expression.
const maxExprDepth = 64

func (p *exprParser) space() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
}

func (p *exprParser) op(ops string) (byte, bool) {
	p.space()
	if p.pos < len(p.src) {
		for i := 0; i < len(ops); i++ {
			if p.src[p.pos] == ops[i] {
				p.pos++
				return ops[i], true
			}
		}
	}
	return 0, false
}

func checked(v int64) (int64, error) {
	if v > exprLimit || v < -exprLimit {
		return 0, fmt.Errorf("value %d out of range (at most 2^40 in magnitude)", v)
	}
	return v, nil
}

func (p *exprParser) sum() (int64, error) {
	v, err := p.product()
	if err != nil {
		return 0, err
	}
	for {
		o, ok := p.op("+-")
		if !ok {
			return v, nil
		}
		w, err := p.product()
		if err != nil {
			return 0, err
		}
		if o == '+' {
			v += w
		} else {
			v -= w
		}
		if v, err = checked(v); err != nil {
			return 0, err
		}
	}
}

func (p *exprParser) product() (int64, error) {
	v, err := p.atom()
	if err != nil {
		return 0, err
	}
	for {
		o, ok := p.op("*/")
		if !ok {
			return v, nil
		}
		w, err := p.atom()
		if err != nil {
			return 0, err
		}
		if o == '*' {
			if w != 0 && (v > math.MaxInt64/absInt(w) || v < -math.MaxInt64/absInt(w)) {
				return 0, fmt.Errorf("product %d*%d overflows", v, w)
			}
			v *= w
		} else {
			if w <= 0 {
				return 0, fmt.Errorf("division by %d (the divisor must be positive)", w)
			}
			v = ceilDiv(v, w)
		}
		if v, err = checked(v); err != nil {
			return 0, err
		}
	}
}

func absInt(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// ceilDiv rounds a/b up, for b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

func (p *exprParser) atom() (int64, error) {
	p.space()
	if p.pos >= len(p.src) {
		return 0, fmt.Errorf("unexpected end")
	}
	c := p.src[p.pos]
	if c == '(' || c == '-' {
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxExprDepth {
			return 0, fmt.Errorf("nested more than %d deep", maxExprDepth)
		}
	}
	switch {
	case c == '(':
		p.pos++
		v, err := p.sum()
		if err != nil {
			return 0, err
		}
		if _, ok := p.op(")"); !ok {
			return 0, fmt.Errorf("missing ) at offset %d", p.pos)
		}
		return v, nil
	case c == '-':
		p.pos++
		v, err := p.atom()
		return -v, err
	case c >= '0' && c <= '9':
		start := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		v, err := strconv.ParseInt(p.src[start:p.pos], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("number %q: %w", p.src[start:p.pos], err)
		}
		return checked(v)
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		start := p.pos
		for p.pos < len(p.src) {
			c := p.src[p.pos]
			if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') {
				break
			}
			p.pos++
		}
		name := p.src[start:p.pos]
		v, ok := p.vars[name]
		if !ok {
			return 0, fmt.Errorf("unknown variable %q", name)
		}
		return v, nil
	}
	return 0, fmt.Errorf("unexpected %q at offset %d", c, p.pos)
}
