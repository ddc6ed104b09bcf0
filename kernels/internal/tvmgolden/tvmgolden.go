// Package tvmgolden compares printed TensorIR with modules that TVM
// publishes in its own tests, ported as test data, and keeps the list of
// cases known to differ honest.
//
// The comparison ignores exactly three things, nothing else:
//   - the header line "# from tvm.script import tir as T";
//   - blank lines;
//   - whitespace at the end of a line.
//
// Leading indentation is compared: it is the nesting of the script. The
// ported modules (testdata/*/expected.tir) were brought into our printer's
// form once, when they were ported, by edits that do not change the program;
// each test-data README lists those edits.
package tvmgolden

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Header is the first line TVM's printer writes, and ours.
const Header = "# from tvm.script import tir as T"

// Normalize returns the lines of script that the comparison looks at.
func Normalize(script string) []string {
	var out []string
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "" || line == Header {
			continue
		}
		out = append(out, line)
	}
	return out
}

// Diff compares got with want after Normalize. It returns "" when they are
// the same, or the number (in the normalized lines) of the first line that
// differs, how many lines differ, and the first differing pair.
func Diff(got, want string) string {
	g, w := Normalize(got), Normalize(want)
	first := -1
	n := 0
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			n++
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return ""
	}
	at := func(s []string, i int) string {
		if i < len(s) {
			return strings.TrimSpace(s[i])
		}
		return "<end>"
	}
	return fmt.Sprintf("line %d differs (%d of %d lines differ):\n got: %s\nwant: %s",
		first+1, n, max(len(g), len(w)), at(g, first), at(w, first))
}

// KnownFailures maps a case name to the reason it is known not to match.
type KnownFailures map[string]string

// ReadKnownFailures reads a known-failures file: one "case: reason" per
// line; '#' starts a comment line; blank lines are ignored. A missing file
// is an empty list.
func ReadKnownFailures(path string) (KnownFailures, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return KnownFailures{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tvmgolden: %w", err)
	}
	out := KnownFailures{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, ok := strings.Cut(line, ":")
		name, reason = strings.TrimSpace(name), strings.TrimSpace(reason)
		if !ok || name == "" || reason == "" {
			return nil, fmt.Errorf("tvmgolden: %s:%d: want \"case: reason\", got %q", path, ln, line)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("tvmgolden: %s:%d: case %s listed twice", path, ln, name)
		}
		out[name] = reason
	}
	return out, sc.Err()
}

// Tally counts the cases of one harness against its known failures.
type Tally struct {
	Known    KnownFailures
	Total    int
	Matched  int
	failures []string
}

// Record notes the outcome of one case (mismatch nil: it matched). It
// returns an error when the outcome breaks the list: an unlisted case that
// fails, or a listed case that now matches (take it off the list).
func (t *Tally) Record(name string, mismatch error) error {
	t.Total++
	reason, known := t.Known[name]
	if mismatch == nil {
		t.Matched++
		if known {
			return fmt.Errorf("%s matches TVM now but is listed as a known failure (%s): remove it from the list", name, reason)
		}
		return nil
	}
	t.failures = append(t.failures, fmt.Sprintf("%s: %s", name, firstLine(mismatch.Error())))
	if !known {
		return fmt.Errorf("%s differs from TVM and is not a known failure: %w", name, mismatch)
	}
	return nil
}

// Stale returns the listed cases that are not among cases (the names of
// the case folders), sorted: entries left behind by a renamed or removed
// case. It does not depend on which cases a -run filter let run.
func (k KnownFailures) Stale(cases []string) []string {
	have := make(map[string]bool, len(cases))
	for _, c := range cases {
		have[c] = true
	}
	var out []string
	for name := range k {
		if !have[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Summary is "matched M/N" and the failures, one per line.
func (t *Tally) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "matched %d/%d", t.Matched, t.Total)
	for _, f := range t.failures {
		b.WriteString("\n  ")
		b.WriteString(f)
	}
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
