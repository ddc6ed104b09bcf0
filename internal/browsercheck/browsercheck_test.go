package browsercheck

import (
	"context"
	"errors"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dragonx/reports"
)

// needChromium skips the test when no chromium is installed, saying how to
// install one.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := Find(); err != nil {
		t.Skip("chromium not installed: run make setup")
	}
}

func check(t *testing.T, html, shot string) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, err := Check(ctx, html, shot)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkNotebook renders nb as HTML, loads it (writePage, check) and
// reports every problem the browser shows; it returns the page's bytes,
// the screenshot's path and what the browser saw.
func checkNotebook(t *testing.T, nb *reports.Notebook, name string) ([]byte, string, *Result) {
	t.Helper()
	html, err := reports.HTML(nb)
	if err != nil {
		t.Fatal(err)
	}
	page, shot := writePage(t, html, name)
	r := check(t, page, shot)
	if p := r.Problems(); len(p) > 0 {
		t.Errorf("the report has problems in the browser:\n%s", strings.Join(p, "\n"))
	}
	return html, shot, r
}

// writePage writes an HTML page as NAME.html in a temporary folder, or in
// $BROWSERCHECK_KEEP to look at afterwards, and returns its path and the
// path for its screenshot.
func writePage(t *testing.T, html []byte, name string) (page, shot string) {
	t.Helper()
	dir := t.TempDir()
	if d := os.Getenv("BROWSERCHECK_KEEP"); d != "" {
		dir = d
	}
	page, shot = filepath.Join(dir, name+".html"), filepath.Join(dir, name+".png")
	if err := os.WriteFile(page, html, 0o644); err != nil {
		t.Fatal(err)
	}
	return page, shot
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReportRenders renders a sample notebook with reports.HTML and loads
// it: no console error, both figures decoded at the SVGs' sizes, every
// table there, a screenshot that is not blank.
func TestReportRenders(t *testing.T) {
	needChromium(t)
	nb := &reports.Notebook{
		Experiment: "experiments/paper.hcl",
		Scale:      "smoke",
		Cells: []reports.Cell{
			{Stage: "workloads", Kind: "workloads", Key: strings.Repeat("ab", 32), Status: "cached",
				Duration: 2 * time.Second, Params: []reports.KV{{Key: "count", Value: "24"}},
				Outputs: []reports.Output{{Name: "train.jsonl", Digest: "sha256:" + strings.Repeat("cd", 32), Size: 4096}},
				LogTail: "workloads: 24 generated\n</pre><script>console.error('escaped?')</script>"},
			{Stage: "<script>console.error('stage')</script>", Kind: "sft", Status: "ran", Duration: time.Minute},
		},
		Results: &reports.Results{
			Scale: "smoke", Sources: []string{"model:h100"},
			Sections: []reports.Section{{
				Title: "Correctness", Text: "Two figures and a table.",
				Tables: []reports.Table{{Caption: "correct", Header: []string{"policy", "rate"},
					Rows: [][]string{{"sft", "50%"}, {"rl", "75%"}}}},
				Figures: []reports.FigureRef{
					{Name: "bars", Caption: "bars", SVG: readFile(t, "bars.svg")},
					{Name: "curve", Caption: "curve", SVG: readFile(t, "curve.svg")},
				},
			}},
		},
	}
	html, shot, r := checkNotebook(t, nb, "report")
	if want := strings.Count(string(html), "<table"); r.Tables != want || want < 3 {
		t.Errorf("browser counted %d tables, the page has %d", r.Tables, want)
	}
	want := [][2]int{{240, 160}, {300, 120}}
	if len(r.Images) != len(want) {
		t.Fatalf("%d images, want %d: %+v", len(r.Images), len(want), r.Images)
	}
	for i, im := range r.Images {
		if im.NaturalWidth != want[i][0] || im.NaturalHeight != want[i][1] {
			t.Errorf("image %d (%s): natural size %dx%d, want %dx%d", i, im.Alt, im.NaturalWidth, im.NaturalHeight, want[i][0], want[i][1])
		}
	}
	if !strings.HasPrefix(r.Title, "dragonx report") {
		t.Errorf("title %q", r.Title)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Errorf("no screenshot written: %v", err)
	}
	t.Logf("screenshot %dx%d, %d colours, luma variance %.0f; console: %q",
		r.Screenshot.Width, r.Screenshot.Height, r.Screenshot.Colors, r.Screenshot.LumaVariance, r.Console)
}

// TestBrokenPageFails: the check can fail. A page with an image that does
// not exist and a console.error is reported with both.
func TestBrokenPageFails(t *testing.T) {
	needChromium(t)
	r := check(t, filepath.Join("testdata", "broken.html"), "")
	p := strings.Join(r.Problems(), "\n")
	if !strings.Contains(p, "deliberate console error") {
		t.Errorf("the console.error is not reported; problems:\n%s\nconsole: %q", p, r.Console)
	}
	if len(r.Images) != 1 || r.Images[0].Loaded() || !strings.Contains(p, `image 0 (alt "missing"`) {
		t.Errorf("the broken image is not reported: %+v; problems:\n%s", r.Images, p)
	}
	if r.Tables != 1 {
		t.Errorf("%d tables, want 1", r.Tables)
	}
	t.Logf("problems:\n%s", p)
}

// TestBlankPageFails: a page with nothing on it has a blank screenshot.
func TestBlankPageFails(t *testing.T) {
	needChromium(t)
	r := check(t, filepath.Join("testdata", "blank.html"), "")
	if r.Screenshot.NonBlank {
		t.Errorf("blank page's screenshot judged non-blank: %+v", r.Screenshot)
	}
	if p := r.Problems(); len(p) != 1 || !strings.Contains(p[0], "screenshot is blank") {
		t.Errorf("problems %q, want only the blank screenshot", p)
	}
}

func TestMissingPage(t *testing.T) {
	needChromium(t)
	_, err := Check(context.Background(), filepath.Join(t.TempDir(), "none.html"), "")
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Check of a missing file: %v", err)
	}
}

func TestFindNone(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Find()
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "run make setup") {
		t.Errorf("Find with an empty PATH: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	if s := describe(img); s.NonBlank || s.Colors != 1 || s.LumaVariance > 1e-9 {
		t.Errorf("white image: %+v", s)
	}
	// One line of dark "text".
	for x := 20; x < 180; x++ {
		img.Set(x, 50, color.RGBA{0x20, 0x20, 0x20, 0xff})
	}
	if s := describe(img); !s.NonBlank || s.Colors != 2 {
		t.Errorf("image with a line: %+v", s)
	}
}

// TestReportBrokenFigure: a figure whose SVG the browser cannot decode is
// reported (reports.HTML accepts it: it only checks for an <svg element).
func TestReportBrokenFigure(t *testing.T) {
	needChromium(t)
	html, err := reports.HTML(&reports.Notebook{
		Experiment: "e.hcl",
		Results: &reports.Results{Sections: []reports.Section{{
			Title:   "broken",
			Figures: []reports.FigureRef{{Name: "bad", Caption: "bad", SVG: []byte("<svg this is not XML")}},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "bad.html")
	if err := os.WriteFile(page, html, 0o644); err != nil {
		t.Fatal(err)
	}
	r := check(t, page, "")
	if len(r.Images) != 1 || r.Images[0].Loaded() {
		t.Errorf("the undecodable SVG loaded: %+v", r.Images)
	}
	if p := strings.Join(r.Problems(), "\n"); !strings.Contains(p, `image 0 (alt "bad"`) {
		t.Errorf("the undecodable figure is not among the problems:\n%s", p)
	}
}

// TestBrowserFails: a "chromium" that cannot start gives an error naming
// it, not a hang or a Result.
func TestBrowserFails(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "chromium")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'fake chromium: cannot start' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Check(ctx, filepath.Join("testdata", "blank.html"), "")
	if err == nil || r != nil {
		t.Fatalf("Check with a chromium that exits: result %+v, error %v", r, err)
	}
	if !strings.Contains(err.Error(), fake) {
		t.Errorf("the error does not name the browser %s: %v", fake, err)
	}
	t.Log(err)
}
