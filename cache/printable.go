package cache

import (
	"strconv"
	"unicode/utf8"
)

// Printable returns s as it is safe to print on a terminal: unchanged when
// every rune of it is valid UTF-8 and printable (strconv.IsPrint: no
// control character, no escape sequence, no newline, no bidirectional
// override), and otherwise quoted and escaped as strconv.Quote writes it,
// so that the reader sees what the bytes are. Every printer of a string
// that comes from a cache, a remote or a bundle (a manifest's stage name,
// kind, host; an entry name; a problem found in them) passes it through
// this, so a crafted entry cannot rewrite the terminal.
func Printable(s string) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
		i += n
	}
	return s
}
