package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"dragonx/internal/browsercheck"
)

// TestCompareReportInBrowser runs the experiment of runs_diff.txtar twice
// with different variables, writes `report -compare` of the two runs and
// loads the page in chromium: no console error, the overlaid loss figure
// decoded, the runs, changes and metrics tables there, and nothing that
// makes the page scroll sideways. BROWSERCHECK_KEEP=DIR keeps the page and
// its screenshot.
func TestCompareReportInBrowser(t *testing.T) {
	if _, err := browsercheck.Find(); err != nil {
		t.Skipf("the comparison page's browser check needs chromium: %v", err)
	}
	ar, err := txtar.ParseFile(filepath.Join("testdata", "script", "runs_diff.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	exp := filepath.Join(dir, "exp.hcl")
	for _, f := range ar.Files {
		if f.Name == "exp.hcl" {
			if err := os.WriteFile(exp, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cacheDir, out := filepath.Join(dir, "cache"), filepath.Join(dir, "out")
	if d := os.Getenv("BROWSERCHECK_KEEP"); d != "" {
		out = d
	}
	for _, vars := range [][]string{nil, {"-var", "final=2.5"}} {
		args := append([]string{"run", "-cache", cacheDir, "-out", out}, vars...)
		if code, _, stderr := runCLI(append(args, exp)...); code != 0 {
			t.Fatalf("dragonx %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
	}
	code, stdout, stderr := runCLI("report", "-cache", cacheDir, "-out", out, "-compare", "last~1,last")
	if code != 0 || !strings.Contains(stdout, "compare.html") {
		t.Fatalf("report -compare: exit %d\n%s%s", code, stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := browsercheck.Check(ctx, filepath.Join(out, "compare.html"), filepath.Join(out, "compare.png"))
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Problems(); len(p) > 0 {
		t.Errorf("compare.html in chromium: %s", strings.Join(p, "; "))
	}
	if len(res.Images) != 1 || res.Tables < 3 {
		t.Errorf("compare.html shows %d images and %d tables; want the loss figure and the runs, changes and metrics tables", len(res.Images), res.Tables)
	}
	if _, ok := res.Mark("metrics-table"); !ok {
		t.Errorf("compare.html has no metrics table; marks %+v", res.Marks)
	}
	if res.PageWidth > res.ViewportWidth {
		t.Errorf("compare.html is %.0f px wide in a %.0f px window: a value does not wrap", res.PageWidth, res.ViewportWidth)
	}
}
