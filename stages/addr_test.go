package stages

import (
	"strconv"
	"strings"
	"testing"
)

// TestKeyDirInjective: distinct instance keys get distinct out/
// directories (issue 9, case 7), every one a single valid name.
func TestKeyDirInjective(t *testing.T) {
	keys := []string{
		"x y", "x_y", "x%20y", "x%y", "é", "ü", "e\u0301", "_", "", "%", ".", "..", "%2E", "...",
		"a/b", "a_b", "a\x00b", "log", "Log", "plain-1.0", "~", "~x", "\xff",
		strings.Repeat("a", 300), strings.Repeat("a", 299), strings.Repeat("é", 150), strings.Repeat("é", 151),
		strings.Repeat("a", 199) + " ", strings.Repeat("a", 199) + "!",
	}
	seen := map[string]string{}
	for _, k := range keys {
		d := keyDir(k)
		if prev, dup := seen[d]; dup {
			t.Errorf("keys %q and %q both map to %q", prev, k, d)
		}
		seen[d] = k
		if d == "" || d == "." || d == ".." || strings.ContainsAny(d, "/\x00") || len(d) > maxKeyDir {
			t.Errorf("keyDir(%q) = %q is not a usable directory name", k, d)
		}
		if len(d) < maxKeyDir && !strings.Contains(d, "~") {
			if back, ok := unescapeKeyDir(d); !ok || back != k {
				t.Errorf("keyDir(%q) = %q does not decode back (%q)", k, d, back)
			}
		}
	}
	if got := keyDir("log"); got != "log" {
		t.Errorf("keyDir(log) = %q; a plain key must stay as it is", got)
	}
}

// unescapeKeyDir inverts keyDir for names that were not shortened.
func unescapeKeyDir(d string) (string, bool) {
	if d == "%" {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(d); i++ {
		if d[i] != '%' {
			b.WriteByte(d[i])
			continue
		}
		if i+2 >= len(d) {
			return "", false
		}
		n, err := strconv.ParseUint(d[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), true
}
