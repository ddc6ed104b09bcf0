package reports

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Two small hand-written SVG documents for the fixture's figures.
const (
	svgBars = `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80" viewBox="0 0 120 80">` +
		`<rect x="10" y="30" width="30" height="40" fill="#0072B2"/><rect x="60" y="10" width="30" height="60" fill="#E69F00"/></svg>`
	svgLine = `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80" viewBox="0 0 120 80">` +
		`<polyline points="5,75 40,40 80,30 115,5" fill="none" stroke="#009E73" stroke-width="3"/></svg>`
)

// fixture is a small fixed notebook: three stages (ran, cached, not run)
// and results with a table and two figures.
func fixture() *Notebook {
	return &Notebook{
		Title:      "paper.hcl at smoke scale",
		Experiment: "experiments/paper.hcl",
		Scale:      "smoke",
		Cells: []Cell{
			{
				Stage: "workloads", Kind: "workloads",
				Key:    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				Status: "cached", Duration: 1234 * time.Millisecond,
				Params: []KV{{"count", "24"}, {"seed", "1"}},
				Outputs: []Output{
					{Name: "train.jsonl", Digest: "sha256:aaaabbbbccccddddeeeeffff0000111122223333444455556666777788889999", Size: 18231},
					{Name: "test.jsonl", Digest: "sha256:1111222233334444555566667777888899990000aaaabbbbccccddddeeeeffff", Size: 512},
				},
				LogTail: "workloads: 24 generated\nworkloads: 8 in test\n",
			},
			{
				Stage: "sft", Kind: "sft",
				Key:    "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
				Status: "ran", Duration: 83*time.Second + 400*time.Millisecond,
				Params:  []KV{{"steps", "20"}, {"lr", "0.003"}, {"model", `{ layers = 1, width = 64 }`}},
				Outputs: []Output{{Name: "loss.csv", Digest: "sha256:abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcd", Size: 3 << 20}},
				LogTail: "step 19 loss 2.31\nstep 20 loss 2.27",
			},
			{Stage: "bench", Kind: "bench", Status: "not run"},
		},
		Results: &Results{
			Scale:   "smoke",
			Sources: []string{"model:h100"},
			Sections: []Section{
				{
					Title: "Correctness",
					Text:  "Per-attempt correctness of the held-out tasks.\n\nThe paper's figures are quoted from its abstract.",
					Tables: []Table{{
						Caption: "Per-attempt correctness",
						Header:  []string{"policy", "construction", "refinement", "source"},
						Rows: [][]string{
							{"sft", "62.50%", "58.82%", "model:h100 (simulated), scale smoke"},
							{"rl", "75.00%", "64.71%", "model:h100 (simulated), scale smoke"},
							{"paper (8B)", "91.27%", "92.01%", "paper"},
						},
						Notes: []string{"correct: every verdict phase passed"},
					}},
					Figures: []FigureRef{
						{Name: "family_correctness", Caption: "Correct rate per family", SVG: []byte(svgBars)},
						{Name: "rl_curves", Caption: "RL reward per step", SVG: []byte(svgLine)},
					},
				},
			},
		},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it); got:\n%s", name, got)
	}
}

func TestGolden(t *testing.T) {
	nb := fixture()
	md, err := Markdown(nb, "figures")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "notebook.md", md)
	html, err := HTML(nb)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "notebook.html", html)
	rmd, rhtml, err := RenderResults(nb.Results)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "results.md", rmd)
	golden(t, "results.html", rhtml)
}

// attrURL finds every src and href attribute's value.
var attrURL = regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*["']?([^"'\s>]*)`)

func TestHTMLSelfContained(t *testing.T) {
	nb := fixture()
	html, err := HTML(nb)
	if err != nil {
		t.Fatal(err)
	}
	_, rhtml, err := RenderResults(nb.Results)
	if err != nil {
		t.Fatal(err)
	}
	for name, page := range map[string][]byte{"notebook": html, "results": rhtml} {
		s := string(page)
		for _, bad := range []string{"http://", "https://", "<script", "<link", "@import", "url("} {
			if strings.Contains(strings.ToLower(s), bad) {
				t.Errorf("%s page contains %q", name, bad)
			}
		}
		urls := attrURL.FindAllStringSubmatch(s, -1)
		if len(urls) != 2 {
			t.Errorf("%s page: %d src/href attributes, want 2 (the two figures)", name, len(urls))
		}
		for _, m := range urls {
			u := m[1]
			if strings.HasPrefix(u, "//") || !strings.HasPrefix(u, "data:image/svg+xml;base64,") {
				t.Errorf("%s page: src/href %.60q is not an inline SVG data: URI", name, u)
			}
		}
		if !strings.Contains(s, `Content-Security-Policy" content="default-src 'none'; img-src data:`) {
			t.Errorf("%s page has no Content-Security-Policy forbidding fetches", name)
		}
	}
}

func TestHostileStrings(t *testing.T) {
	nb := fixture()
	nb.Title = "<b>bold</b> & co"
	nb.Cells[0].Stage = `<script>alert("stage")</script>`
	nb.Cells[0].Kind = "<i>kind</i>"
	nb.Cells[0].Key = `"><script>alert(1)</script>`
	nb.Cells[0].LogTail = "line one\n</pre><script>alert('log')</script>\n```\nafter fence"
	nb.Cells[1].Params = append(nb.Cells[1].Params, KV{"a|b", "x | `y` | z"})
	nb.Cells[1].Outputs[0].Name = "out|put`name"
	sec := &nb.Results.Sections[0]
	sec.Title = "## not a heading <img src=x onerror=alert(1)>"
	sec.Text = "- not a list\n\n1. not a list either *not emphasis* [not](a link)"
	sec.Tables[0].Rows[0][0] = "sft | injected column"
	sec.Tables[0].Caption = "<u>caption</u>"
	sec.Figures[0].Caption = "evil](javascript:alert(1)) ![x"

	html, err := HTML(nb)
	if err != nil {
		t.Fatal(err)
	}
	h := string(html)
	for _, bad := range []string{"<script", "<b>bold", "<i>kind", "<img src=x", "<u>caption", "http:"} {
		if strings.Contains(h, bad) {
			t.Errorf("HTML contains unescaped %q", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(&#34;stage&#34;)&lt;/script&gt;", "&lt;/pre&gt;&lt;script&gt;", "&lt;b&gt;bold&lt;/b&gt; &amp; co"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks the escaped %q", want)
		}
	}
	// One <pre> per cell with a log, each closed once: the log's "</pre>"
	// did not close it early.
	if o, c := strings.Count(h, "<pre>"), strings.Count(h, "</pre>"); o != 2 || c != 2 {
		t.Errorf("HTML has %d <pre> and %d </pre>, want 2 and 2", o, c)
	}

	md, err := Markdown(nb, "figures")
	if err != nil {
		t.Fatal(err)
	}
	m := string(md)
	// Outside fenced code blocks and code spans (which Markdown shows
	// literally), and with backslash-escaped characters taken out, nothing
	// hostile is left.
	fenced := regexp.MustCompile("(?s)````text\n.*?\n````")
	span := regexp.MustCompile("(``?)[^`\n]+?(``?)")
	escaped := regexp.MustCompile(`\\.`)
	plain := escaped.ReplaceAllString(span.ReplaceAllString(fenced.ReplaceAllString(m, ""), ""), "")
	for _, bad := range []string{"<script", "<b>", "<i>", "<img", "<u>", "](javascript", "[not](a link)", "*not emphasis*"} {
		if strings.Contains(plain, bad) {
			t.Errorf("Markdown contains unescaped %q", bad)
		}
	}
	// Every table row keeps its column count: pipes in cells are escaped.
	lines := strings.Split(m, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") {
			continue
		}
		cols := unescapedPipes(lines[i])
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|") {
			i++
			if n := unescapedPipes(lines[i]); n != cols {
				t.Errorf("Markdown table row %q has %d column separators, its header %d", lines[i], n, cols)
			}
		}
	}
	// The log's own ``` does not end its fence: the fence is longer.
	if !strings.Contains(m, "````text\nline one\n</pre><script>alert('log')</script>\n```\nafter fence\n````") {
		t.Errorf("Markdown log fence does not enclose the log; got:\n%s", m)
	}
	for _, want := range []string{`### \#\# not a heading \<img`, `\- not a list`, `1\. not a list either \*not emphasis\* \[not\](a link)`, `![evil\](javascript:alert(1)) \!`[:14]} {
		if !strings.Contains(m, want) {
			t.Errorf("Markdown lacks the escaped %q", want)
		}
	}
}

// unescapedPipes counts the '|' of a Markdown table line not preceded by a
// backslash.
func unescapedPipes(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '|' && (i == 0 || line[i-1] != '\\') {
			n++
		}
	}
	return n
}

func TestDeterministic(t *testing.T) {
	md1, err := Markdown(fixture(), "figures")
	if err != nil {
		t.Fatal(err)
	}
	html1, err := HTML(fixture())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		md2, _ := Markdown(fixture(), "figures")
		html2, _ := HTML(fixture())
		if !bytes.Equal(md1, md2) || !bytes.Equal(html1, html2) {
			t.Fatal("two renders of the same notebook differ")
		}
	}
	// Rendering does not modify the notebook.
	nb := fixture()
	if _, err := HTML(nb); err != nil {
		t.Fatal(err)
	}
	if _, err := Markdown(nb, "x"); err != nil {
		t.Fatal(err)
	}
	html3, _ := HTML(nb)
	if !bytes.Equal(html1, html3) {
		t.Fatal("rendering changed the notebook")
	}
}

func TestFigureLinks(t *testing.T) {
	png := append(append([]byte{}, pngMagic...), "rest"...)
	nb := fixture()
	nb.Results.Sections[0].Figures = []FigureRef{
		{Name: "both", Caption: "both", SVG: []byte(svgLine), PNG: png},
		{Name: "only_png", Caption: "png only", PNG: png},
	}
	md, err := Markdown(nb, "../figs dir")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"![both](<../figs dir/both.svg>)", "![png only](<../figs dir/only_png.png>)"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	html, err := HTML(nb)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(html, []byte(`src="data:image/svg+xml;base64,`)); n != 1 {
		t.Errorf("%d SVG data URIs, want 1 (the figure with SVG and PNG shows the SVG)", n)
	}
	if n := bytes.Count(html, []byte(`src="data:image/png;base64,iVBORw0KGgpyZXN0"`)); n != 1 {
		t.Errorf("%d PNG data URIs, want 1 (the figure without SVG)", n)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(nb *Notebook)
		want string
	}{
		{"no experiment", func(nb *Notebook) { nb.Experiment = " " }, "no experiment"},
		{"no stage", func(nb *Notebook) { nb.Cells[1].Stage = "" }, "cell 1 has no stage"},
		{"two cells", func(nb *Notebook) { nb.Cells[1].Stage = "workloads" }, `stage "workloads" has two cells`},
		{"status", func(nb *Notebook) { nb.Cells[0].Status = "done" }, `stage "workloads": unknown status "done"`},
		{"duration", func(nb *Notebook) { nb.Cells[0].Duration = -time.Second }, "negative duration"},
		{"size", func(nb *Notebook) { nb.Cells[0].Outputs[0].Size = -1 }, `output "train.jsonl" has negative size`},
		{"figure without bytes", func(nb *Notebook) { nb.Results.Sections[0].Figures[1].SVG = nil }, `figure "rl_curves" has no image bytes`},
		{"figure not SVG", func(nb *Notebook) { nb.Results.Sections[0].Figures[1].SVG = []byte("hello") }, `figure "rl_curves": its SVG bytes have no <svg`},
		{"figure not PNG", func(nb *Notebook) { nb.Results.Sections[0].Figures[1].PNG = []byte("GIF89a") }, "PNG signature"},
		{"figure name", func(nb *Notebook) { nb.Results.Sections[0].Figures[1].Name = "../up" }, `figure name "../up" is not a plain file name`},
		{"figure twice", func(nb *Notebook) { nb.Results.Sections[0].Figures[1].Name = "family_correctness" }, "used twice"},
		{"ragged row", func(nb *Notebook) { nb.Results.Sections[0].Tables[0].Rows[1] = []string{"rl"} }, `table "Per-attempt correctness": row 1 has 1 cells, the header 4`},
		{"no header", func(nb *Notebook) { nb.Results.Sections[0].Tables[0].Header = nil }, "has no header"},
		{"section title", func(nb *Notebook) { nb.Results.Sections[0].Title = "" }, "section 0 has no title"},
		{"source", func(nb *Notebook) { nb.Results.Sources = []string{"h100"} }, `unknown latency source "h100"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nb := fixture()
			c.edit(nb)
			_, err := Markdown(nb, "figures")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Markdown: error %v, want one containing %q", err, c.want)
			}
			_, err = HTML(nb)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("HTML: error %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := HTML(nil); err == nil {
		t.Error("HTML(nil): no error")
	}
	if _, _, err := RenderResults(nil); err == nil {
		t.Error("RenderResults(nil): no error")
	}
	bad := fixture().Results
	bad.Sections[0].Figures[0].SVG = nil
	if _, _, err := RenderResults(bad); err == nil || !strings.Contains(err.Error(), "no image bytes") {
		t.Errorf("RenderResults of a figure with no bytes: error %v", err)
	}
}

func TestLatencyLabels(t *testing.T) {
	cases := []struct {
		r    *Results
		want string
	}{
		{nil, "No results: no latencies are reported."},
		{&Results{}, "The results report no latencies."},
		{&Results{Sources: []string{"model:h100"}}, "Latencies simulated by the GPU model, not measured: model:h100."},
		{&Results{Sources: []string{"measured:cuda:0"}}, "Latencies measured on a GPU: measured:cuda:0."},
		{&Results{Sources: []string{"model:h200", "measured:cuda:1"}}, "Latencies simulated by the GPU model, not measured: model:h200; measured on a GPU: measured:cuda:1."},
	}
	for _, c := range cases {
		if got := latencyLine(c.r); got != c.want {
			t.Errorf("latencyLine(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}
