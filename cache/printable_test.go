package cache_test

import (
	"strings"
	"testing"

	"dragonx/cache"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`stage.rl["log"]`, `stage.rl["log"]`},
		{"stage.é ü", "stage.é ü"},
		{"stage.x\x1b[2J\x1b]0;pwned\a", `"stage.x\x1b[2J\x1b]0;pwned\a"`},
		{"two\nlines", `"two\nlines"`},
		{"tab\there", `"tab\there"`},
		{"bidi\u202egnp.exe", `"bidi\u202egnp.exe"`},
		{"bad \xff utf-8", `"bad \xff utf-8"`},
		{"csi \u009b31m", `"csi \u009b31m"`},
	} {
		if got := cache.Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestProblemIsPrintable checks that the printers of the cache package
// (verify's problems, import's refusal) escape what came from an entry.
func TestProblemIsPrintable(t *testing.T) {
	p := cache.Problem{Kind: cache.ProblemMissingBlob, Key: cache.Key{1}, Stage: "stage.a\x1b[2J", Detail: "file \x1b]0;x\a"}
	if s := p.String(); strings.ContainsAny(s, "\x1b\a") {
		t.Errorf("Problem.String() = %q: it holds control characters", s)
	}
	e := &cache.ImportError{Problems: []string{"blobs/\x1b[2J: not a plain regular file"}}
	if s := e.Error(); strings.ContainsAny(s, "\x1b") {
		t.Errorf("ImportError.Error() = %q: it holds control characters", s)
	}
}
