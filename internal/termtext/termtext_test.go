package termtext

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain", "step 1: loss 0.25\n\tok\n", "step 1: loss 0.25\n\tok\n"},
		{"utf-8 text", "größe µs → 3×4 ✓\n", "größe µs → 3×4 ✓\n"},
		// The attack of issue 29 (item 9): a window title and clear screen.
		{"title and clear", "a\x1b]0;pwned\x07\x1b[2Jb\n", "ab\n"},
		{"osc ended by ST", "a\x1b]2;t\x1b\\b", "ab"},
		{"osc ended by C1 ST", "a\x1b]2;t\u009cb", "ab"},
		{"osc unterminated", "a\x1b]0;pwned\nnext\n", "a\nnext\n"},
		{"colours", "\x1b[1;31merror\x1b[0m: x", "error: x"},
		{"private csi", "\x1b[?1049h\x1b[?25lx", "x"},
		{"two-byte escapes", "\x1bcx\x1b(By\x1b7z", "xyz"},
		{"dcs", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
		{"esc at the end", "abc\x1b", "abc"},
		{"esc before newline", "a\x1b\nb", "a\nb"},
		{"c0 controls", "a\rb\bc\x07d\x00e\x7ff\n", "abcdef\n"},
		{"c1 csi", "a\u009b2Jb", "ab"},
		{"c1 osc", "a\u009d0;t\u0007b", "ab"},
		{"c1 other", "a\u0085b\u008ec", "abc"},
		{"bidi override", "a\u202eb\u2066c\u2069", "abc"},
		{"invalid utf-8", "a\x9b2Jb\xff", "a\ufffd2Jb\ufffd"},
	} {
		if got := Clean(c.in); got != c.want {
			t.Errorf("%s: Clean(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

func TestWriter(t *testing.T) {
	in := "line 1\n\x1b]0;pw" + "ned\x07\x1b[2" + "Jline 2\nlast \x1b[31mred"
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, piece := range []string{in[:9], in[9:20], in[20:]} {
		if n, err := w.Write([]byte(piece)); n != len(piece) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "line 1\nline 2\nlast red"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
	// A line longer than maxPending is passed on before its newline.
	out.Reset()
	w.Write(bytes.Repeat([]byte("x"), maxPending+1))
	if out.Len() != maxPending+1 {
		t.Errorf("held %d bytes of a long line", maxPending+1-out.Len())
	}
}

// checkClean fails if out holds anything a terminal acts on.
func checkClean(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Clean(%q) = %q is not UTF-8", in, out)
	}
	for _, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || isBidi(r) {
			t.Fatalf("Clean(%q) = %q holds %U", in, out, r)
		}
	}
}

// FuzzClean: the output never holds ESC, another C0 control but newline
// and tab, DEL, a C1 control or a bidirectional override; it is UTF-8;
// cleaning twice changes nothing; text without controls is kept; and a
// Writer fed in two pieces writes what Clean returns.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"plain\n", "\x1b]0;pwned\x07\x1b[2J", "\x1b[1;31mred\x1b[0m", "\u009b2J\u009d0;t\u009c", "a\x1bP\x1b\\", "\xff\xc2", "é\u202e"} {
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, s string, cut int) {
		out := Clean(s)
		checkClean(t, s, out)
		if again := Clean(out); again != out {
			t.Fatalf("Clean(%q) = %q, cleaned again %q", s, out, again)
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
			return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || isBidi(r)
		}) && out != s {
			t.Fatalf("Clean(%q) = %q changed text without controls", s, out)
		}
		// Clean works line by line, so a Writer gives the same result
		// wherever the writes are cut (lines under maxPending).
		if cut < 0 {
			cut = -cut
		}
		cut %= len(s) + 1
		var b bytes.Buffer
		w := NewWriter(&b)
		w.Write([]byte(s[:cut]))
		w.Write([]byte(s[cut:]))
		w.Flush()
		if b.String() != out && len(s) < maxPending {
			t.Fatalf("a Writer given %q in two pieces wrote %q, Clean %q", s, b.String(), out)
		}
	})
}
