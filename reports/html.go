package reports

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"

	"dragonx/internal/humanize"
)

//go:embed page.html.tmpl
var pageTemplate string

// page is parsed once per call: html/template escapes by context, and a
// fresh template per render keeps the package free of global state.
func page() (*template.Template, error) {
	t, err := template.New("page").Parse(pageTemplate)
	if err != nil {
		return nil, fmt.Errorf("reports: parse HTML template: %w", err)
	}
	return t, nil
}

// HTML renders the notebook as one self-contained HTML page: inline CSS,
// figures as data: URIs, no script, no external URL, and a
// Content-Security-Policy that blocks every fetch but data: images.
func HTML(nb *Notebook) ([]byte, error) {
	if err := nb.validate(); err != nil {
		return nil, err
	}
	v := notebookView{
		Title:      nb.title(),
		Experiment: nb.Experiment,
		Scale:      scaleText(nb.Scale),
		Latency:    latencyLine(nb.Results),
	}
	for i, c := range nb.Cells {
		class, _ := statusClass(c.Status) // validated
		cv := cellView{
			Index: i, Stage: c.Stage, Kind: c.Kind, Status: c.Status, Class: class,
			Key: c.Key, ShortKey: shortID(c.Key), Duration: humanDuration(c.Duration),
			Params: c.Params, Log: logTail(c.LogTail), Ran: c.Duration > 0,
		}
		for _, o := range c.Outputs {
			cv.Outputs = append(cv.Outputs, outputView{
				Name: o.Name, Size: humanize.Bytes(o.Size), Bytes: o.Size, Digest: o.Digest, Short: shortID(o.Digest),
			})
		}
		v.Cells = append(v.Cells, cv)
	}
	if sum := summarize(nb.Results); sum != nil {
		v.Summary = newSummaryView(nb, sum)
		v.Results = newResultsView(sum.Rest)
	}
	return execute("notebook", v)
}

// RenderResults renders the results alone, as the analysis stage writes
// them next to its figures/ folder: Markdown that links figures/NAME.svg
// and a self-contained HTML page.
func RenderResults(r *Results) (md, html []byte, err error) {
	if err := r.validate(); err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Results\n\n")
	mdResults(&b, r, "figures", "##")
	md = append(bytes.TrimRight(b.Bytes(), "\n"), '\n')
	html, err = execute("resultsPage", newResultsView(r))
	if err != nil {
		return nil, nil, err
	}
	return md, html, nil
}

func execute(name string, data any) ([]byte, error) {
	t, err := page()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("reports: render HTML: %w", err)
	}
	return b.Bytes(), nil
}

type notebookView struct {
	Title, Experiment, Scale, Latency string
	Cells                             []cellView
	Summary                           *summaryView
	Results                           *resultsView
}

type cellView struct {
	Index                                               int
	Stage, Kind, Status, Class, Key, ShortKey, Duration string
	Ran                                                 bool // the duration is known (non-zero)
	Params                                              []KV
	Outputs                                             []outputView
	Log                                                 string
}

type outputView struct {
	Name, Size, Digest, Short string
	Bytes                     int64
}

type resultsView struct {
	Scale, Latency string
	Sections       []sectionView
}

type sectionView struct {
	Title      string
	Paragraphs []string
	Tables     []tableView
	Figures    []figureView
}

type tableView struct {
	Check   string // data-check name, for the browser check
	Caption string
	Header  []cellText
	Rows    [][]cellText
	Notes   []string
}

type cellText struct {
	Text string
	Num  bool
}

type figureView struct {
	Name, Caption string
	Src           template.HTMLAttr
}

func newResultsView(r *Results) *resultsView {
	v := &resultsView{Scale: scaleText(r.Scale), Latency: latencyLine(r)}
	for _, s := range r.Sections {
		sv := sectionView{Title: s.Title, Paragraphs: paragraphs(s.Text)}
		for _, t := range s.Tables {
			sv.Tables = append(sv.Tables, newTableView(t, ""))
		}
		for _, f := range s.Figures {
			sv.Figures = append(sv.Figures, newFigureView(f))
		}
		v.Sections = append(v.Sections, sv)
	}
	return v
}

// newTableView prepares a table for the template; check, when not empty,
// marks it for the browser check (data-check).
func newTableView(t Table, check string) tableView {
	num := numericColumns(t)
	tv := tableView{Caption: t.Caption, Notes: t.Notes, Check: check}
	for j, h := range t.Header {
		tv.Header = append(tv.Header, cellText{h, num[j]})
	}
	for _, row := range t.Rows {
		rv := make([]cellText, len(row))
		for j, c := range row {
			rv[j] = cellText{c, num[j]}
		}
		tv.Rows = append(tv.Rows, rv)
	}
	return tv
}

func newFigureView(f FigureRef) figureView {
	return figureView{Name: f.Name, Caption: f.Caption, Src: srcAttr(f)}
}

// summaryView is the summary that opens a notebook with results.
type summaryView struct {
	Provenance string
	Tables     []tableView
	Figures    []figureView
}

func newSummaryView(nb *Notebook, s *summary) *summaryView {
	v := &summaryView{Provenance: provenance(nb)}
	if s.Main != nil {
		v.Tables = append(v.Tables, newTableView(*s.Main, "main-table"))
	}
	if s.Paper != nil {
		v.Tables = append(v.Tables, newTableView(*s.Paper, "paper-table"))
	}
	for _, f := range s.Figures {
		v.Figures = append(v.Figures, newFigureView(f))
	}
	return v
}

// srcAttr is the src attribute that embeds a figure: its SVG when it has
// one, else its PNG, as a data: URI. The attribute is made here from base64
// (an alphabet with no quote, '<' or '&'), so it is safe to insert as is
// (html/template would write each '+' as "&#43;"); an SVG shown through
// <img> runs no script and loads nothing.
func srcAttr(f FigureRef) template.HTMLAttr {
	mime, data := "image/svg+xml", f.SVG
	if len(data) == 0 {
		mime, data = "image/png", f.PNG
	}
	return template.HTMLAttr(`src="data:` + mime + ";base64," + base64.StdEncoding.EncodeToString(data) + `"`)
}
