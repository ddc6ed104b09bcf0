package stages_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"dragonx/internal/safeio"
	"dragonx/stages"
)

// loadWithin loads the experiment at path with opts, failing the test if
// Load takes more than a few seconds (a named pipe must not block it).
func loadWithin(t *testing.T, path string, opts stages.LoadOptions) hcl.Diagnostics {
	t.Helper()
	var diags hcl.Diagnostics
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, diags = stages.Load(path, opts)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("Load(%s) blocked for 10s", path)
	}
	return diags
}

// wantDiag checks that diags hold an error whose summary and detail contain
// the given texts; line > 0 also checks its line.
func wantDiag(t *testing.T, diags hcl.Diagnostics, line int, texts ...string) {
	t.Helper()
	for _, d := range diags {
		all := d.Summary + ": " + d.Detail
		ok := d.Severity == hcl.DiagError
		for _, s := range texts {
			ok = ok && strings.Contains(all, s)
		}
		if ok && line > 0 && (d.Subject == nil || d.Subject.Start.Line != line) {
			t.Errorf("diagnostic %q at %v, want line %d", all, d.Subject, line)
		}
		if ok {
			return
		}
	}
	t.Errorf("no error diagnostic with %q; got:\n%s", texts, diags.Error())
}

func TestLoadRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	exp := filepath.Join(dir, "exp.hcl")
	write := func(src string) {
		if err := os.WriteFile(exp, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("locals {\n  a = file(\"fifo\")\n}\n")
	wantDiag(t, loadWithin(t, exp, stages.LoadOptions{}), 2, "cannot read fifo", "named pipe")

	if _, err := os.Stat("/dev/zero"); err == nil {
		write("locals {\n  a = file(\"/dev/zero\")\n}\n")
		wantDiag(t, loadWithin(t, exp, stages.LoadOptions{}), 2, "/dev/zero", "character device")
		write("variable \"x\" {\n  default = 1\n}\n")
		wantDiag(t, loadWithin(t, exp, stages.LoadOptions{VarFiles: []string{"/dev/zero"}}), 0, "Cannot read variable file", "/dev/zero")
	}

	write("variable \"x\" {\n  default = 1\n}\n")
	wantDiag(t, loadWithin(t, exp, stages.LoadOptions{VarFiles: []string{fifo}}), 0, "Cannot read variable file", "named pipe")
	wantDiag(t, loadWithin(t, fifo, stages.LoadOptions{}), 0, "Cannot read experiment file", "named pipe")

	// A file over the limit is refused with the limit named (a sparse file:
	// no disk is used).
	big := filepath.Join(dir, "big.txt")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(safeio.MaxSource + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	write("locals {\n  a = file(\"big.txt\")\n}\n")
	wantDiag(t, loadWithin(t, exp, stages.LoadOptions{}), 2, "big.txt", "64 MiB")
}

func TestLoadNestingLimit(t *testing.T) {
	dir := t.TempDir()
	deep := 100000
	cases := map[string]string{
		"parens":  "locals {\n  x = " + strings.Repeat("(", deep) + "1" + strings.Repeat(")", deep) + "\n}\n",
		"lists":   "locals {\n  x = " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "\n}\n",
		"interps": "locals {\n  x = " + strings.Repeat(`"${`, deep) + "1" + strings.Repeat(`}"`, deep) + "\n}\n",
		// Closers in strings must not hide the openers after them.
		"hidden": "locals {\n  x = " + strings.Repeat(`["]]]]]]]]", `, deep/10) + "1" + strings.Repeat("]", deep/10) + "\n}\n",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name+".hcl")
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			wantDiag(t, loadWithin(t, p, stages.LoadOptions{}), 2, "Nesting too deep", "256")
			if err := os.WriteFile(p, []byte("variable \"x\" {\n  default = 1\n}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			vf := filepath.Join(dir, name+".vars")
			if err := os.WriteFile(vf, []byte(strings.Replace(src[len("locals {\n"):], "}\n", "", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			wantDiag(t, loadWithin(t, p, stages.LoadOptions{VarFiles: []string{vf}}), 1, "Nesting too deep")
		})
	}
	// Real nesting below the limit loads.
	ok := filepath.Join(dir, "ok.hcl")
	src := "locals {\n  x = " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n}\n"
	if err := os.WriteFile(ok, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, diags := stages.Load(ok, stages.LoadOptions{}); diags.HasErrors() {
		t.Errorf("100 levels: %s", diags.Error())
	}
}

func TestLoadNameLimits(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "exp.hcl")
	long := strings.Repeat("s", 300)
	src := "stage \"" + long + "\" {\n  kind = \"exec\"\n  command = \"true\"\n}\n" +
		"stage \"each\" {\n  kind = \"exec\"\n  for_each = [\"" + long + "\"]\n  command = \"true\"\n}\n"
	if err := os.WriteFile(exp, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	diags := loadWithin(t, exp, stages.LoadOptions{})
	wantDiag(t, diags, 1, "Stage name too long", "300", "200")
	wantDiag(t, diags, 7, "Invalid for_each", "300 bytes")
}
