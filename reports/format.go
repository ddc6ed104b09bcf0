package reports

import (
	"strings"
	"time"

	"dragonx/internal/termtext"
)

// shortID returns the first 12 hex digits of a key or digest, without a
// "name:" prefix such as "sha256:".
func shortID(s string) string {
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 12 {
		s = s[:12]
	}
	return s
}

// humanDuration formats a duration to a precision people read: "-" for
// zero (unknown), milliseconds under a minute, seconds above.
func humanDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return d.String()
	case d < time.Minute:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// title returns the notebook's title, or its default.
func (nb *Notebook) title() string {
	if nb.Title != "" {
		return nb.Title
	}
	return "dragonx report: " + nb.Experiment
}

// latencyLine says which latencies of the results are simulated and which
// measured, in one sentence (the notebook's header and the results part).
func latencyLine(r *Results) string {
	if r == nil {
		return "No results: no latencies are reported."
	}
	if len(r.Sources) == 0 {
		return "The results report no latencies."
	}
	var sim, meas []string
	for _, s := range r.Sources {
		if strings.HasPrefix(s, "measured:") {
			meas = append(meas, s)
		} else {
			sim = append(sim, s)
		}
	}
	var parts []string
	if len(sim) > 0 {
		parts = append(parts, "simulated by the GPU model, not measured: "+strings.Join(sim, ", "))
	}
	if len(meas) > 0 {
		parts = append(parts, "measured on a GPU: "+strings.Join(meas, ", "))
	}
	return "Latencies " + strings.Join(parts, "; ") + "."
}

// scaleText is a scale for display.
func scaleText(s string) string {
	if s == "" {
		return "(not given)"
	}
	return s
}

// paragraphs splits plain text into paragraphs at blank lines; the lines of
// a paragraph are joined with spaces.
func paragraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	for _, p := range strings.Split(text, "\n\n") {
		p = strings.Join(strings.Fields(p), " ")
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// logTail is a cell's log tail for display, without trailing blank lines
// and without control sequences (termtext: a log is a stage's output, and
// report.md is read on terminals too).
func logTail(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.TrimRight(termtext.Clean(s), "\n \t")
}

// cellMeta is the line under a cell's heading: its key (already formatted)
// and its duration, each left out when unknown; "" when both are.
func cellMeta(hasKey bool, key string, d time.Duration) string {
	switch {
	case hasKey && d > 0:
		return "Key " + key + ", duration " + humanDuration(d) + "."
	case hasKey:
		return "Key " + key + "."
	case d > 0:
		return "Duration " + humanDuration(d) + "."
	}
	return ""
}
