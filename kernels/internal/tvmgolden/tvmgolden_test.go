package tvmgolden

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiffIgnoresOnlyHeaderBlankLinesAndTrailingSpace(t *testing.T) {
	want := Header + "\n\n@T.prim_func\ndef main():\n    x = 1\n"
	if d := Diff("@T.prim_func  \n\ndef main():\n    x = 1\n\n", want); d != "" {
		t.Errorf("equal up to header/blank/trailing space, got %s", d)
	}
	// Indentation, names and expressions are compared.
	for _, got := range []string{
		"@T.prim_func\ndef main():\n  x = 1\n",
		"@T.prim_func\ndef main():\n    y = 1\n",
		"@T.prim_func\ndef main():\n    x = 1 + 0\n",
		"@T.prim_func\ndef main():\n",
	} {
		if Diff(got, want) == "" {
			t.Errorf("Diff(%q) found no difference", got)
		}
	}
	d := Diff("a\nb\nc\n", "a\nB\nc\n")
	if !strings.Contains(d, "line 2") || !strings.Contains(d, "1 of 3") {
		t.Errorf("Diff does not locate the difference: %s", d)
	}
}

func TestReadKnownFailures(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k.txt")
	if err := os.WriteFile(p, []byte("# comment\n\nc1: reason one\nc2 : reason: with colon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := ReadKnownFailures(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(k) != 2 || k["c1"] != "reason one" || k["c2"] != "reason: with colon" {
		t.Errorf("got %v", k)
	}
	if k, err := ReadKnownFailures(filepath.Join(dir, "missing.txt")); err != nil || len(k) != 0 {
		t.Errorf("a missing file is an empty list, got %v, %v", k, err)
	}
	for _, bad := range []string{"no reason\n", "c1:\n", ": r\n", "c: a\nc: b\n"} {
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadKnownFailures(p); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestTallyKeepsTheListHonest(t *testing.T) {
	tl := &Tally{Known: KnownFailures{"known": "r", "fixed": "r", "stale": "r"}}
	mismatch := errors.New("differs")
	if err := tl.Record("ok", nil); err != nil {
		t.Errorf("a matching unlisted case: %v", err)
	}
	if err := tl.Record("known", mismatch); err != nil {
		t.Errorf("a listed failing case: %v", err)
	}
	if err := tl.Record("fixed", nil); err == nil {
		t.Error("a listed case that matches was not reported")
	}
	if err := tl.Record("new", mismatch); err == nil {
		t.Error("an unlisted failing case was not reported")
	}
	if s := tl.Known.Stale([]string{"ok", "known", "fixed", "new"}); len(s) != 1 || s[0] != "stale" {
		t.Errorf("Stale() = %v", s)
	}
	if tl.Matched != 2 || tl.Total != 4 || !strings.HasPrefix(tl.Summary(), "matched 2/4") {
		t.Errorf("tally %d/%d, summary %q", tl.Matched, tl.Total, tl.Summary())
	}
}
