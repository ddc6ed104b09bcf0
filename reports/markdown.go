package reports

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"

	"dragonx/internal/humanize"
)

// Markdown renders the notebook as GitHub-flavoured Markdown. Figures are
// linked, not embedded: ![caption](figDir/name.svg) (name.png for a figure
// without SVG), so figDir is the figures' folder relative to where the
// Markdown file will be written; the caller writes the figure files there.
func Markdown(nb *Notebook, figDir string) ([]byte, error) {
	if err := nb.validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", mdText(nb.title()))
	fmt.Fprintf(&b, "Experiment %s at scale %s.\n\n", mdCode(nb.Experiment, false), mdCode(scaleText(nb.Scale), false))
	fmt.Fprintf(&b, "%s\n\n", mdText(latencyLine(nb.Results)))
	sum := summarize(nb.Results)
	if sum != nil {
		mdSummary(&b, nb, sum, figDir)
	}

	b.WriteString("## Stages\n\n")
	if len(nb.Cells) == 0 {
		b.WriteString("No stages.\n\n")
	} else {
		rows := make([][]string, len(nb.Cells))
		for i, c := range nb.Cells {
			key := "-"
			if c.Key != "" {
				key = mdCode(shortID(c.Key), true)
			}
			rows[i] = []string{mdCode(c.Stage, true), mdText(c.Kind), mdText(c.Status), key, humanDuration(c.Duration)}
		}
		mdTable(&b, []string{"stage", "kind", "status", "key", "duration"}, rows, []bool{false, false, false, false, true})
		b.WriteString("\n")
	}
	for _, c := range nb.Cells {
		mdCell(&b, c)
	}
	if sum != nil {
		b.WriteString("## Results\n\n")
		b.WriteString("The rest of the results (the summary above has the main table, the paper's numbers beside ours and the headline figures).\n\n")
		mdResults(&b, sum.Rest, figDir, "###")
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n'), nil
}

// mdCell writes one stage's cell.
func mdCell(b *bytes.Buffer, c Cell) {
	fmt.Fprintf(b, "### %s", mdCode(c.Stage, false))
	if c.Kind != "" {
		fmt.Fprintf(b, " (%s)", mdText(c.Kind))
	}
	fmt.Fprintf(b, ": %s\n\n", mdText(c.Status))
	if line := cellMeta(c.Key != "", mdCode(c.Key, false), c.Duration); line != "" {
		fmt.Fprintf(b, "%s\n\n", line)
	}
	if len(c.Params) > 0 {
		b.WriteString("Parameters:\n\n")
		rows := make([][]string, len(c.Params))
		for i, p := range c.Params {
			rows[i] = []string{mdCode(p.Key, true), mdCode(p.Value, true)}
		}
		mdTable(b, []string{"parameter", "value"}, rows, nil)
		b.WriteString("\n")
	}
	if len(c.Outputs) > 0 {
		b.WriteString("Outputs:\n\n")
		rows := make([][]string, len(c.Outputs))
		for i, o := range c.Outputs {
			rows[i] = []string{mdCode(o.Name, true), humanize.Bytes(o.Size), mdCode(shortID(o.Digest), true)}
		}
		mdTable(b, []string{"output", "size", "digest"}, rows, []bool{false, true, false})
		b.WriteString("\n")
	}
	if tail := logTail(c.LogTail); tail != "" {
		b.WriteString("Log (tail):\n\n")
		fence := strings.Repeat("`", max(3, longestRun(tail, '`')+1))
		fmt.Fprintf(b, "%stext\n%s\n%s\n\n", fence, tail, fence)
	} else {
		b.WriteString("No log.\n\n")
	}
}

// mdResults writes the results' sections under headings of level h.
func mdResults(b *bytes.Buffer, r *Results, figDir, h string) {
	fmt.Fprintf(b, "Scale %s. %s\n\n", mdCode(scaleText(r.Scale), false), mdText(latencyLine(r)))
	for _, s := range r.Sections {
		fmt.Fprintf(b, "%s %s\n\n", h, mdText(s.Title))
		for _, p := range paragraphs(s.Text) {
			fmt.Fprintf(b, "%s\n\n", mdParagraph(p))
		}
		for _, t := range s.Tables {
			mdResultTable(b, t)
		}
		for _, f := range s.Figures {
			mdFigure(b, f, figDir)
		}
	}
}

// mdResultTable writes one table of the results with its caption and notes.
func mdResultTable(b *bytes.Buffer, t Table) {
	if t.Caption != "" {
		fmt.Fprintf(b, "**%s**\n\n", mdText(t.Caption))
	}
	header := make([]string, len(t.Header))
	for i, h := range t.Header {
		header[i] = mdText(h)
	}
	rows := make([][]string, len(t.Rows))
	for i, row := range t.Rows {
		rows[i] = make([]string, len(row))
		for j, cell := range row {
			rows[i][j] = mdText(cell)
		}
	}
	mdTable(b, header, rows, numericColumns(t))
	b.WriteString("\n")
	for _, n := range t.Notes {
		fmt.Fprintf(b, "- %s\n", mdText(n))
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
	}
}

// mdFigure links one figure of the results.
func mdFigure(b *bytes.Buffer, f FigureRef, figDir string) {
	file := f.Name + ".svg"
	if len(f.SVG) == 0 {
		file = f.Name + ".png"
	}
	fmt.Fprintf(b, "![%s](%s)\n\n", mdText(f.Caption), mdLink(path.Join(figDir, file)))
}

// mdSummary writes the summary that opens a notebook with results.
func mdSummary(b *bytes.Buffer, nb *Notebook, s *summary, figDir string) {
	b.WriteString("## Summary\n\n")
	fmt.Fprintf(b, "%s\n\n", mdText(provenance(nb)))
	for _, t := range []*Table{s.Main, s.Paper} {
		if t != nil {
			mdResultTable(b, *t)
		}
	}
	for _, f := range s.Figures {
		mdFigure(b, f, figDir)
	}
}

// mdTable writes a GitHub-flavoured table; cells are already escaped.
// right[j] aligns column j to the right.
func mdTable(b *bytes.Buffer, header []string, rows [][]string, right []bool) {
	b.WriteString("|")
	for _, h := range header {
		fmt.Fprintf(b, " %s |", h)
	}
	b.WriteString("\n|")
	for j := range header {
		if j < len(right) && right[j] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("|")
		for _, c := range row {
			fmt.Fprintf(b, " %s |", c)
		}
		b.WriteString("\n")
	}
}

// mdSpecial are the characters that mdText escapes with a backslash: each
// can start emphasis, a link, inline HTML, an entity, a code span or a
// table cell.
const mdSpecial = "\\`*_[]<>|#~&"

// mdText escapes plain text for Markdown: special characters get a
// backslash and line breaks become spaces, so nothing in it can become
// HTML, a link or a table column.
func mdText(s string) string {
	var b strings.Builder
	for _, r := range strings.Join(strings.Fields(s), " ") {
		if strings.ContainsRune(mdSpecial, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdParagraph escapes a paragraph of plain text, also a start that would
// make it a list, a quote or a heading.
func mdParagraph(p string) string {
	s := mdText(p)
	if s != "" && strings.ContainsRune("-+=", rune(s[0])) {
		return "\\" + s
	}
	// "1. " or "1) " would start an ordered list.
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')') {
		return s[:i] + "\\" + s[i:]
	}
	return s
}

// mdCode puts s in a code span long enough for the backticks it holds.
// inTable escapes '|', which GitHub splits table cells at even inside code.
func mdCode(s string, inTable bool) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return ""
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	pad := ""
	if s[0] == '`' || s[len(s)-1] == '`' {
		pad = " "
	}
	out := fence + pad + s + pad + fence
	if inTable {
		out = strings.ReplaceAll(out, "|", `\|`)
	}
	return out
}

// mdLink escapes a relative link's destination: it is put in angle
// brackets when it has spaces or parentheses.
func mdLink(p string) string {
	if strings.ContainsAny(p, " ()<>") {
		return "<" + strings.NewReplacer("<", "%3C", ">", "%3E").Replace(p) + ">"
	}
	return p
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// numericColumns marks the columns of t whose non-empty cells all read as
// numbers (digits with separators, a sign, %, x, a fraction "a/b"), to be
// aligned right.
func numericColumns(t Table) []bool {
	right := make([]bool, len(t.Header))
	for j := range t.Header {
		seen := false
		right[j] = true
		for _, row := range t.Rows {
			c := strings.TrimSpace(row[j])
			if c == "" || c == "-" {
				continue
			}
			seen = true
			if !isNumber(c) {
				right[j] = false
				break
			}
		}
		right[j] = right[j] && seen
	}
	return right
}

// isNumber reports whether a table cell reads as a number.
func isNumber(c string) bool {
	c = strings.TrimSuffix(strings.TrimSuffix(c, "%"), "x")
	c = strings.ReplaceAll(c, ",", "")
	for _, part := range strings.SplitN(c, "/", 2) {
		if _, err := strconv.ParseFloat(strings.TrimSpace(part), 64); err != nil {
			return false
		}
	}
	return true
}
