// Package termtext makes text that dragonx did not write itself safe to
// print on a terminal or to put in a report: a stage's log (run's failed-
// stage tail, show, report.md and the HTML report, a log pulled from a
// remote cache), a stage's error text. Every printer of such text goes
// through Clean or a Writer.
//
// Clean removes what a terminal would act on instead of showing: escape
// sequences (CSI such as clear screen "ESC [2J" or colours, OSC such as
// the window title "ESC ]0;title BEL", DCS, SOS, PM and APC strings, and
// two-byte escapes), C0 controls other than newline and tab (carriage
// return, backspace, bell...), DEL, the C1 controls U+0080 to U+009F
// (their 8-bit CSI and OSC with what they introduce), and the
// bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069)
// that reorder what is shown. Bytes that are not UTF-8 become U+FFFD.
// Every other character, newline and tab are kept as they are.
//
// A string (OSC, DCS, ...) that is never terminated ends at the end of its
// line, so that a damaged log loses one line, not the rest. For single-line
// names from a cache (a stage's name in a manifest), cache.Printable quotes
// instead, so that the reader sees the bytes.
package termtext

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"
)

// Clean returns s without control sequences (see the package doc).
func Clean(s string) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	clean(&b, s)
	return b.String()
}

// plain reports whether s is printable ASCII, newlines and tabs only.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// The C1 controls that introduce a sequence, as runes.
const (
	c1DCS = 0x90
	c1SOS = 0x98
	c1CSI = 0x9b
	c1ST  = 0x9c
	c1OSC = 0x9d
	c1PM  = 0x9e
	c1APC = 0x9f
)

func clean(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f):
			b.WriteByte(c)
			i++
		case c == 0x1b:
			i = skipEscape(s, i+1)
		case c < 0x80:
			i++ // another C0 control, or DEL
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n <= 1:
				b.WriteRune(utf8.RuneError)
			case r == c1CSI:
				n = skipCSI(s, i+n) - i
			case r == c1OSC || r == c1DCS || r == c1SOS || r == c1PM || r == c1APC:
				n = skipString(s, i+n) - i
			case r >= 0x80 && r <= 0x9f, isBidi(r):
			default:
				b.WriteString(s[i : i+n])
			}
			i += n
		}
	}
}

// isBidi reports whether r is a bidirectional embedding, override or
// isolate.
func isBidi(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// skipEscape returns the index after the escape sequence whose ESC was
// just before i.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch c := s[i]; {
	case c == '[':
		return skipCSI(s, i+1)
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return skipString(s, i+1)
	case c >= 0x20 && c <= 0x2f: // intermediates, then one final byte
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
			i++
		}
		if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
			i++
		}
		return i
	case c >= 0x30 && c <= 0x7e:
		return i + 1
	}
	return i // ESC before a control or a non-ASCII byte: drop the ESC only
}

// skipCSI returns the index after a control sequence whose introducer
// ended just before i: parameter bytes, intermediate bytes, a final byte.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
		i++
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString returns the index after a control string (OSC, DCS, SOS, PM,
// APC) whose introducer ended just before i: up to BEL or ST (ESC \ or
// U+009C) included, up to another ESC or a newline excluded (an
// unterminated string ends with its line).
func skipString(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case 0x07:
			return i + 1
		case '\n':
			return i
		case 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i
		case 0xc2:
			if i+1 < len(s) && s[i+1] == c1ST {
				return i + 2
			}
		}
		i++
	}
	return i
}

// maxPending bounds what a Writer holds while waiting for a newline: a
// longer line is cleaned in pieces (a sequence cut in two then loses its
// ESC and shows the rest as text, which is harmless).
const maxPending = 64 << 10

// Writer cleans what is written through it line by line (see Clean)
// before passing it on. Call Flush at the end for a last line without a
// newline.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write cleans the complete lines of p (with what came before) and writes
// them on; it reports len(p) unless the underlying writer fails.
func (cw *Writer) Write(p []byte) (int, error) {
	cw.buf = append(cw.buf, p...)
	end := bytes.LastIndexByte(cw.buf, '\n') + 1
	if end == 0 && len(cw.buf) >= maxPending {
		end = len(cw.buf)
	}
	if end == 0 {
		return len(p), nil
	}
	if _, err := io.WriteString(cw.w, Clean(string(cw.buf[:end]))); err != nil {
		return 0, err
	}
	cw.buf = append(cw.buf[:0], cw.buf[end:]...)
	return len(p), nil
}

// Flush writes what is held (a last line without a newline), cleaned.
func (cw *Writer) Flush() error {
	if len(cw.buf) == 0 {
		return nil
	}
	_, err := io.WriteString(cw.w, Clean(string(cw.buf)))
	cw.buf = cw.buf[:0]
	return err
}
