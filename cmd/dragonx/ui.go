package main

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"dragonx/internal/progress"
	"dragonx/internal/redact"
	"dragonx/internal/termtext"
	"dragonx/stages"
)

// textUI renders a run or plan for a person on w (stderr). On a terminal
// it keeps one status line at the bottom that shows the running stages and
// their progress; otherwise it prints plain lines, and a "still running" line
// for long stages at most every plainEvery.
type textUI struct {
	w        io.Writer
	terminal bool
	verbose  bool // stream stage logs as they are written
	now      func() time.Time

	mu       sync.Mutex
	op       string
	start    time.Time
	running  map[string]*runningStage
	lastDraw time.Time
	width    int
	counts   map[stages.Status]int
	// transfer is the last progress of a large remote transfer;
	// lastTransfer when a plain line last reported one.
	transfer     *progress.Event
	transferAt   map[string]time.Time
	lastTransfer time.Time
}

type runningStage struct {
	addr      stages.Addr
	start     time.Time
	ev        *stages.ProgressEvent
	lastPlain time.Time
}

const (
	plainEvery = 30 * time.Second
	drawEvery  = 200 * time.Millisecond
	logTail    = 20 // lines of a failed stage's log shown inline
)

func newTextUI(w io.Writer, terminal, verbose bool) *textUI {
	return &textUI{w: w, terminal: terminal, verbose: verbose, now: time.Now, running: map[string]*runningStage{}, counts: map[stages.Status]int{}, width: 10}
}

func (u *textUI) Begin(op string, n int, jobs int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.op, u.start = op, u.now()
	if op == "run" {
		fmt.Fprintf(u.w, "dragonx: %d stage%s, up to %d at a time\n", n, plural(n), jobs)
	}
}

func (u *textUI) Started(addr stages.Addr, kind string, reasons []string) io.Writer {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.running[addr.String()] = &runningStage{addr: addr, start: u.now()}
	u.clearStatus()
	why := ""
	if len(reasons) > 0 {
		why = ": " + reasons[0]
		if len(reasons) > 1 {
			why += fmt.Sprintf(" (+%d more)", len(reasons)-1)
		}
	}
	fmt.Fprintf(u.w, "  %-8s %s (%s)%s\n", "running", addr.Short(), kind, why)
	u.drawStatus(true)
	if u.verbose {
		return &prefixWriter{u: u, prefix: "    " + addr.Short() + " | "}
	}
	return nil
}

func (u *textUI) Progress(addr stages.Addr, ev stages.ProgressEvent) {
	u.mu.Lock()
	defer u.mu.Unlock()
	rs := u.running[addr.String()]
	if rs == nil {
		return
	}
	rs.ev = &ev
	if u.terminal {
		u.drawStatus(false)
		return
	}
	now := u.now()
	if rs.lastPlain.IsZero() || now.Sub(rs.lastPlain) >= plainEvery {
		rs.lastPlain = now
		fmt.Fprintf(u.w, "  %-8s %s\n", "progress", progress.Format(addr.Short(), progress.Event{Done: ev.Done, Total: ev.Total, Unit: ev.Unit, Note: ev.Note}, ev.Elapsed))
	}
}

func (u *textUI) Finished(res *stages.Result, log []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.running, res.Addr.String())
	u.counts[res.Status]++
	u.clearStatus()
	line := fmt.Sprintf("  %-8s %s", res.Status, res.Addr.Short())
	switch res.Status {
	case stages.StatusRan:
		line += fmt.Sprintf(" (%s)", res.Duration.Round(time.Millisecond))
	case stages.StatusCached:
		if res.Remote && u.op == "plan" {
			line += " (on the remote cache)"
		} else if res.Remote {
			line += " (pulled from the remote cache)"
		}
	case stages.StatusFailed:
		line += ": " + termtext.Clean(errText(res.Err))
	case stages.StatusSkipped:
		if len(res.Reasons) > 0 {
			line += ": " + res.Reasons[0]
		}
	case stages.StatusRun, stages.StatusMaybe:
		// plan: reasons follow, one per line
	}
	fmt.Fprintln(u.w, line)
	if u.op == "plan" {
		for _, r := range res.Reasons {
			fmt.Fprintf(u.w, "             %s\n", r)
		}
	}
	if res.Status == stages.StatusFailed && len(log) > 0 && !u.verbose {
		lines := strings.Split(strings.TrimRight(termtext.Clean(string(log)), "\n"), "\n")
		if len(lines) > logTail {
			fmt.Fprintf(u.w, "    ... (%d earlier lines; `dragonx show %s` prints the whole log)\n", len(lines)-logTail, res.Addr.Short())
			lines = lines[len(lines)-logTail:]
		}
		for _, l := range lines {
			fmt.Fprintf(u.w, "    | %s\n", l)
		}
	}
	u.drawStatus(true)
}

func (u *textUI) End(rep *stages.Report) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.clearStatus()
	var parts []string
	for _, s := range []stages.Status{stages.StatusRan, stages.StatusCached, stages.StatusRun, stages.StatusMaybe, stages.StatusFailed, stages.StatusSkipped} {
		if n := u.counts[s]; n > 0 {
			label := string(s)
			switch s {
			case stages.StatusRun:
				label = "to run"
			case stages.StatusMaybe:
				label = "may run"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, label))
		}
	}
	if len(parts) == 0 {
		parts = []string{"nothing to do"}
	}
	if u.op == "run" {
		fmt.Fprintf(u.w, "dragonx: %s in %s\n", strings.Join(parts, ", "), u.now().Sub(u.start).Round(time.Millisecond))
	} else {
		fmt.Fprintf(u.w, "dragonx: %s\n", strings.Join(parts, ", "))
	}
}

// Warn shows a warning (the engine's remote trouble).
func (u *textUI) Warn(msg string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.clearStatus()
	fmt.Fprintf(u.w, "dragonx: warning: %s\n", redact.Text(msg))
	u.drawStatus(true)
}

// transferEvery is how often a plain line reports a large transfer.
const transferEvery = 10 * time.Second

// Report shows the progress of a large remote transfer (progress.Reporter):
// in the status line on a terminal, otherwise a plain line at most every
// transferEvery, and one at the end of a transfer that was reported.
func (u *textUI) Report(ev progress.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.now()
	if u.transferAt == nil {
		u.transferAt = map[string]time.Time{}
	}
	start, ok := u.transferAt[ev.Note]
	if !ok {
		start = now
		u.transferAt[ev.Note] = now
	}
	final := ev.Total > 0 && ev.Done >= ev.Total
	line := progress.Format("", ev, now.Sub(start))
	if u.terminal {
		u.transfer = &ev
		if final {
			u.transfer = nil
		}
		u.drawStatus(false)
		return
	}
	if (final && !u.lastTransfer.IsZero()) || now.Sub(u.lastTransfer) >= transferEvery {
		u.lastTransfer = now
		fmt.Fprintf(u.w, "  %-8s %s\n", "remote", line)
	}
}

// clearStatus erases the terminal status line (mu held).
func (u *textUI) clearStatus() {
	if u.terminal {
		fmt.Fprint(u.w, "\r\x1b[K")
	}
}

// drawStatus redraws the terminal status line (mu held).
func (u *textUI) drawStatus(force bool) {
	if !u.terminal || (len(u.running) == 0 && u.transfer == nil) {
		return
	}
	now := u.now()
	if !force && now.Sub(u.lastDraw) < drawEvery {
		return
	}
	u.lastDraw = now
	keys := make([]string, 0, len(u.running))
	for k := range u.running {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		rs := u.running[k]
		if rs.ev != nil {
			parts = append(parts, progress.Format(rs.addr.Short(), progress.Event{Done: rs.ev.Done, Total: rs.ev.Total, Unit: rs.ev.Unit, Note: rs.ev.Note}, rs.ev.Elapsed))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s", rs.addr.Short(), now.Sub(rs.start).Round(time.Second)))
		}
	}
	if u.transfer != nil {
		parts = append(parts, progress.Format("remote", *u.transfer, now.Sub(u.transferAt[u.transfer.Note])))
	}
	fmt.Fprintf(u.w, "\r\x1b[K  running: %s", strings.Join(parts, " | "))
}

// prefixWriter streams a stage's log lines with a prefix (verbose mode).
type prefixWriter struct {
	u      *textUI
	prefix string
	buf    bytes.Buffer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.u.mu.Lock()
	defer p.u.mu.Unlock()
	p.buf.Write(b)
	for {
		i := bytes.IndexByte(p.buf.Bytes(), '\n')
		if i < 0 {
			break
		}
		p.u.clearStatus()
		fmt.Fprintf(p.u.w, "%s%s\n", p.prefix, termtext.Clean(string(p.buf.Next(i + 1)[:i])))
		p.u.drawStatus(true)
	}
	return len(b), nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// reportJSON is the --json document of run and plan.
type reportJSON struct {
	OK     bool              `json:"ok"`
	Stages []stageResultJSON `json:"stages"`
}

type stageResultJSON struct {
	Name       string            `json:"name"`
	Kind       string            `json:"kind"`
	Key        string            `json:"key"`
	Status     string            `json:"status"`
	Reasons    []string          `json:"reasons"`
	Outputs    map[string]string `json:"outputs"`
	DurationMS int64             `json:"duration_ms"`
	Error      string            `json:"error,omitempty"`
	Cause      string            `json:"cause,omitempty"`
	// Remote marks a cached stage pulled from (run) or found on (plan)
	// the remote cache.
	Remote bool `json:"remote,omitempty"`
}

func toReportJSON(rep *stages.Report) reportJSON {
	out := reportJSON{OK: rep.OK(), Stages: []stageResultJSON{}}
	for _, r := range rep.Results {
		s := stageResultJSON{
			Name:       r.Addr.Short(),
			Kind:       r.Kind,
			Status:     string(r.Status),
			Reasons:    append([]string{}, r.Reasons...),
			Outputs:    map[string]string{},
			DurationMS: r.Duration.Milliseconds(),
			Error:      errText(r.Err),
			Remote:     r.Remote,
		}
		if r.Key != ([32]byte{}) {
			s.Key = r.Key.String()
		}
		for n, o := range r.Outputs {
			s.Outputs[n] = o.Digest.String()
		}
		if r.Cause != nil {
			s.Cause = r.Cause.String()
		}
		out.Stages = append(out.Stages, s)
	}
	return out
}
