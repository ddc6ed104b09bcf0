package stages

import (
	"bytes"
	"fmt"
	"math"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Limits on what an experiment may hold. They are far beyond any real
// experiment and keep a hostile or broken file from crashing or stalling
// the engine; docs/experiments.md lists them.
const (
	// MaxNesting bounds how deeply brackets, braces, parentheses, blocks,
	// strings and template interpolations nest in one HCL source. HCL's
	// parser and evaluator recurse once per level, so an unbounded depth
	// (a file of 100,000 "(") overflows the stack and kills the process.
	MaxNesting = 256
	// MaxNameLength bounds a stage name. A stage's name becomes a file
	// name under out/ (with an instance key, out/NAME/KEY), and file
	// systems refuse names over 255 bytes.
	MaxNameLength = 200
)

// checkNesting returns an error diagnostic, positioned at the first token
// past the limit, when src (HCL native syntax) nests deeper than
// MaxNesting; nil otherwise. HCL's parser recurses once per level; this
// check does not, and runs before it.
//
// A byte scanner that follows the states of HCL's lexer (code, quoted
// string, heredoc, interpolation) finds the depth without allocating; only
// when it finds the limit passed does the lexer itself run, to confirm and
// to place the diagnostic. Running the lexer on every file doubled the
// cost of loading a large experiment.
func checkNesting(src []byte, filename string, start hcl.Pos) *hcl.Diagnostic {
	if scanNesting(src) <= MaxNesting {
		return nil
	}
	return lexNesting(src, filename, start)
}

// lexNesting is checkNesting by HCL's lexer.
func lexNesting(src []byte, filename string, start hcl.Pos) *hcl.Diagnostic {
	toks, _ := hclsyntax.LexConfig(src, filename, start)
	_, over := tokenDepth(toks, MaxNesting)
	if over == nil {
		return nil
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Nesting too deep",
		Detail: fmt.Sprintf("Brackets, braces, parentheses, blocks, strings and interpolations nest more than %d levels deep here; dragonx refuses such input rather than risk running out of stack. Split the expression with locals.",
			MaxNesting),
		Subject: over,
	}
}

// tokenDepth returns the greatest nesting depth of toks and, when it is
// over limit, the range of the first token that goes over.
func tokenDepth(toks hclsyntax.Tokens, limit int) (int, *hcl.Range) {
	depth, maxDepth := 0, 0
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			depth++
			maxDepth = max(maxDepth, depth)
			if depth > limit {
				return maxDepth, t.Range.Ptr()
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			// Unbalanced closers are the parser's to report; never let them
			// hide openers that follow.
			depth = max(depth-1, 0)
		}
	}
	return maxDepth, nil
}

// scanNesting returns the greatest depth that lexNesting would count in
// src, or more (never less; math.MaxInt when unsure): it mirrors the states of HCL's lexer
// (hclsyntax/scan_tokens.rl) byte by byte. Where the lexer would stop at
// bytes it cannot match, this scan goes on, which can only count more.
// FuzzScanNesting checks it against the lexer.
func scanNesting(src []byte) int {
	const (
		code = iota
		quoted
		heredoc
	)
	type frame struct {
		state       int
		marker      []byte // heredoc: the closing marker
		startOfLine bool   // heredoc: at the start of a line
	}
	stack := []frame{{state: code}}
	depth, maxDepth, braces := 0, 0, 0
	var retBraces []int
	open := func() {
		depth++
		maxDepth = max(maxDepth, depth)
	}
	closeOne := func() { depth = max(depth-1, 0) }
	// interp enters a template sequence (${ or %{) at src[i:i+2].
	interp := func(i int) int {
		open()
		braces++
		retBraces = append(retBraces, braces)
		stack[len(stack)-1].startOfLine = false
		stack = append(stack, frame{state: code})
		i += 2
		if i < len(src) && src[i] == '~' {
			i++
		}
		return i
	}
	// templateChar handles $ and % in a string or heredoc: a sequence, an
	// escaped one ($${, %%{) or a plain character.
	templateChar := func(i int) int {
		c := src[i]
		switch {
		case i+1 < len(src) && src[i+1] == '{':
			return interp(i)
		case i+2 < len(src) && src[i+1] == c && src[i+2] == '{':
			i += 3
			if i < len(src) && src[i] == '~' {
				i++
			}
			return i
		}
		return i + 1
	}
	for i := 0; i < len(src); {
		f := &stack[len(stack)-1]
		switch f.state {
		case code:
			switch c := src[i]; c {
			case '#':
				i = lineEnd(src, i)
			case '/':
				switch {
				case i+1 < len(src) && src[i+1] == '/':
					i = lineEnd(src, i)
				case i+1 < len(src) && src[i+1] == '*':
					if end := bytes.Index(src[i+2:], []byte("*/")); end >= 0 {
						i += 2 + end + 2
					} else {
						i++ // no end: the lexer takes "/" and "*" as operators
					}
				default:
					i++
				}
			case '"':
				open()
				stack = append(stack, frame{state: quoted})
				i++
			case '<':
				marker, next, ok, unsure := heredocIntro(src, i)
				if unsure {
					// A marker that is not ASCII: the lexer's Unicode
					// tables decide, so let the lexer count.
					return math.MaxInt
				}
				if ok {
					open()
					stack = append(stack, frame{state: heredoc, marker: marker, startOfLine: true})
					i = next
				} else {
					i++
				}
			case '{', '[', '(':
				if c == '{' {
					braces++
				}
				open()
				i++
			case ']', ')':
				closeOne()
				i++
			case '~', '}':
				if c == '~' {
					if i+1 >= len(src) || src[i+1] != '}' {
						i++
						continue
					}
					i++
				}
				closeOne()
				if n := len(retBraces); n > 0 && retBraces[n-1] == braces {
					retBraces = retBraces[:n-1]
					if len(stack) > 1 {
						stack = stack[:len(stack)-1]
					}
				}
				braces--
				i++
			default:
				if c >= 0x80 {
					// Outside strings and comments the lexer's Unicode
					// tables decide where a token ends (they may even
					// take an ASCII "#" into an identifier): let the
					// lexer count.
					return math.MaxInt
				}
				i++
			}
		case quoted:
			switch src[i] {
			case '"':
				closeOne()
				stack = stack[:len(stack)-1]
				i++
			case '\\':
				if i+1 < len(src) && src[i+1] != '\n' && src[i+1] != '\r' {
					i += 2
				} else {
					i++
				}
			case '$', '%':
				i = templateChar(i)
			default:
				i++
			}
		case heredoc:
			if f.startOfLine {
				// Bytes that are not UTF-8 are tokens of their own that
				// leave the lexer at the start of the line.
				if utf8Len(src, i) == 0 {
					i++
					continue
				}
				f.startOfLine = false
				if next, ok := heredocEnd(src, i, f.marker); ok {
					closeOne()
					stack = stack[:len(stack)-1]
					i = next
					continue
				}
			}
			switch src[i] {
			case '\n':
				f.startOfLine = true
				i++
			case '$', '%':
				i = templateChar(i)
			default:
				i++
			}
		}
	}
	return maxDepth
}

// lineEnd returns the index after the end of the line holding src[i].
func lineEnd(src []byte, i int) int {
	if nl := bytes.IndexByte(src[i:], '\n'); nl >= 0 {
		return i + nl + 1
	}
	return len(src)
}

// heredocIntro matches a heredoc introducer, <<MARKER or <<-MARKER and a
// newline, at src[i:], returning the marker and the index after it. It is
// unsure when a byte that is not ASCII follows where the marker's
// characters are (whether it is one depends on Unicode tables).
func heredocIntro(src []byte, i int) (marker []byte, next int, ok, unsure bool) {
	j := i + 2
	if j > len(src) || src[i+1] != '<' {
		return nil, 0, false, false
	}
	if j < len(src) && src[j] == '-' {
		j++
	}
	start := j
	for j < len(src) {
		c := src[j]
		if c >= 0x80 {
			return nil, 0, false, true
		}
		ident := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' ||
			j > start && (c == '-' || '0' <= c && c <= '9')
		if !ident {
			break
		}
		j++
	}
	if j == start {
		return nil, 0, false, false
	}
	marker = src[start:j]
	if j < len(src) && src[j] == '\r' {
		j++
	}
	if j >= len(src) || src[j] != '\n' {
		return nil, 0, false, false
	}
	return marker, j + 1, true, false
}

// heredocEnd reports whether the line at src[i:] closes a heredoc with
// marker, as the lexer decides: the line is one run of UTF-8 characters
// other than $, %, CR and LF, then a newline, and is the marker once
// trimmed of spaces. It returns the index after the line.
func heredocEnd(src []byte, i int, marker []byte) (int, bool) {
	j := i
	for j < len(src) {
		c := src[j]
		if c == '$' || c == '%' || c == '\r' || c == '\n' {
			break
		}
		n := utf8Len(src, j)
		if n == 0 {
			return 0, false
		}
		j += n
	}
	if j < len(src) && src[j] == '\r' {
		j++
	}
	if j >= len(src) || src[j] != '\n' {
		return 0, false
	}
	return j + 1, bytes.Equal(bytes.TrimSpace(src[i:j+1]), marker)
}

// utf8Len returns the length of the character at src[i] as HCL's lexer
// reads UTF-8 (a lead byte and its continuation bytes, without Go's
// checks for overlong forms), or 0 for a byte that starts none.
func utf8Len(src []byte, i int) int {
	c := src[i]
	n := 0
	switch {
	case c < 0x80:
		return 1
	case 0xC0 <= c && c <= 0xDF:
		n = 2
	case 0xE0 <= c && c <= 0xEF:
		n = 3
	case 0xF0 <= c && c <= 0xF7:
		n = 4
	default:
		return 0
	}
	if i+n > len(src) {
		return 0
	}
	for _, b := range src[i+1 : i+n] {
		if b < 0x80 || b > 0xBF {
			return 0
		}
	}
	return n
}
