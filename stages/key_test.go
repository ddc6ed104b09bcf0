package stages

import (
	"reflect"
	"strings"
	"testing"
)

func TestDiffJSON(t *testing.T) {
	tests := []struct {
		name, a, b string
		want       []string
	}{
		{"rl.reward", `{"bonus_scale":1,"gate":"numeric"}`, `{"bonus_scale":2,"gate":"numeric"}`,
			[]string{"rl.reward.bonus_scale changed 1 -> 2"}},
		{"env", `{"A":"x"}`, `{"A":"x","B":"y"}`, []string{`env.B added: "y"`}},
		{"env", `{"A":"x","B":"y"}`, `{"A":"x"}`, []string{`env.B removed`}},
		{"command", `"seq 1 3 > n"`, `"seq 1 5 > n"`, []string{`command changed "seq 1 3 > n" -> "seq 1 5 > n"`}},
		{"command", `["a","b"]`, `["a","c"]`, []string{`command changed ["a","b"] -> ["a","c"]`}},
		{"script", `"` + strings.Repeat("x", 90) + `\necho 1"`, `"` + strings.Repeat("x", 90) + `\necho 2"`,
			[]string{`script changed at line 2: "echo 1" -> "echo 2"`}},
		{"same", `{"a":1}`, `{"a":1}`, nil},
	}
	for _, tt := range tests {
		if got := diffJSON(tt.name, tt.a, tt.b); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("diffJSON(%q, %s, %s) = %q; want %q", tt.name, tt.a, tt.b, got, tt.want)
		}
	}
}

// TestKeySchemeStable pins the key of a fixed stage: if this changes, the
// key scheme changed, and KeyScheme must be bumped so old cache entries miss
// instead of matching wrongly.
func TestKeySchemeStable(t *testing.T) {
	lines := []string{
		KeyScheme,
		"kind exec",
		"kind-version 1",
		`param command "seq 1 3 > nums.txt"`,
		`input "in/nums.txt" sha256:0000000000000000000000000000000000000000000000000000000000000000`,
	}
	got := hashLines(lines).String()
	const want = "9ee800c7ec3b5a47b30d0715fce132bc9d52bf5f4a6e6cc4e0e79093baf99d30"
	if got != want {
		t.Errorf("hashLines = %s; want %s (if the scheme changed on purpose, bump KeyScheme and update this)", got, want)
	}
}
