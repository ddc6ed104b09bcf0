// Package progress reports the progress of long work (a training run, a search,
// a large transfer) to a person: a bar with an ETA on a terminal, plain lines
// otherwise.
//
// Work that takes long accepts a Reporter and calls Report as it goes; it never
// formats progress itself. The engine (stages) gives each stage a Reporter that
// renders for the user's terminal and also records the lines in the stage log.
// Packages that do long work (kernels, dragon, cache) depend only on the
// Reporter interface and the Event type.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Event is one progress update. Done counts finished units out of Total
// (Total 0 means unknown). Unit names the units ("steps", "tokens", "B");
// Note is a short free-form status such as "loss 1.234".
type Event struct {
	Done  int64
	Total int64
	Unit  string
	Note  string
}

// Reporter receives progress events. Implementations are safe for concurrent
// use and cheap enough to call on every step: they rate-limit their output.
type Reporter interface {
	Report(Event)
}

// Nop is a Reporter that discards every event.
type Nop struct{}

// Report discards e.
func (Nop) Report(Event) {}

// Func adapts a function to the Reporter interface.
type Func func(Event)

// Report calls f(e).
func (f Func) Report(e Event) { f(e) }

// Writer renders events for a person: on a terminal (Bar true) it redraws a
// single line with a bar, rate and ETA; otherwise it prints one plain line at
// most every Every, plus the final one. Name prefixes every line.
type Writer struct {
	W     io.Writer
	Name  string
	Bar   bool
	Every time.Duration
	// Now is the clock; nil means time.Now. Tests inject a fake one.
	Now func() time.Time

	mu      sync.Mutex
	start   time.Time
	last    time.Time
	printed bool
}

func (w *Writer) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// Report renders e, rate-limited.
func (w *Writer) Report(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if w.start.IsZero() {
		w.start = now
	}
	final := e.Total > 0 && e.Done >= e.Total
	every := w.Every
	if every == 0 {
		if w.Bar {
			every = 100 * time.Millisecond
		} else {
			every = 5 * time.Second
		}
	}
	if w.printed && !final && now.Sub(w.last) < every {
		return
	}
	w.last = now
	w.printed = true
	line := Format(w.Name, e, now.Sub(w.start))
	if w.Bar {
		fmt.Fprintf(w.W, "\r\x1b[K%s", line)
		if final {
			fmt.Fprintln(w.W)
		}
		return
	}
	fmt.Fprintln(w.W, line)
}

// Format renders one progress line: name, a bar (when Total is known), the
// counts, the rate, the ETA and the note. elapsed is the time since the work
// began.
func Format(name string, e Event, elapsed time.Duration) string {
	var b strings.Builder
	if name != "" {
		b.WriteString(name)
		b.WriteString(" ")
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(e.Done) / s
	}
	if e.Total > 0 {
		frac := float64(e.Done) / float64(e.Total)
		frac = min(max(frac, 0), 1)
		const width = 20
		full := int(frac * width)
		b.WriteString("[")
		b.WriteString(strings.Repeat("#", full))
		b.WriteString(strings.Repeat(".", width-full))
		fmt.Fprintf(&b, "] %3.0f%% %d/%d %s", frac*100, e.Done, e.Total, e.Unit)
	} else {
		fmt.Fprintf(&b, "%d %s", e.Done, e.Unit)
	}
	if rate > 0 {
		fmt.Fprintf(&b, " %s/s", humanRate(rate))
		if e.Total > e.Done {
			eta := time.Duration(float64(e.Total-e.Done) / rate * float64(time.Second))
			fmt.Fprintf(&b, " ETA %s", eta.Round(time.Second))
		}
	}
	if e.Note != "" {
		b.WriteString(" ")
		b.WriteString(e.Note)
	}
	return b.String()
}

func humanRate(r float64) string {
	switch {
	case r >= 1e9:
		return fmt.Sprintf("%.2fG", r/1e9)
	case r >= 1e6:
		return fmt.Sprintf("%.2fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.1fk", r/1e3)
	case r >= 10:
		return fmt.Sprintf("%.0f", r)
	default:
		return fmt.Sprintf("%.2f", r)
	}
}
