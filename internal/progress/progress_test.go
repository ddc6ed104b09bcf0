package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name    string
		e       Event
		elapsed time.Duration
		want    string
	}{
		{"half", Event{Done: 50, Total: 100, Unit: "steps"}, 10 * time.Second,
			"sft [##########..........]  50% 50/100 steps 5.00/s ETA 10s"},
		{"unknown total", Event{Done: 7, Unit: "records", Note: "best 1.2us"}, 0,
			"sft 7 records best 1.2us"},
		{"done", Event{Done: 4, Total: 4, Unit: "files"}, 2 * time.Second,
			"sft [####################] 100% 4/4 files 2.00/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Format("sft", tt.e, tt.elapsed); got != tt.want {
				t.Errorf("Format(%+v, %v) = %q; want %q", tt.e, tt.elapsed, got, tt.want)
			}
		})
	}
}

func TestWriterRateLimitsPlainLines(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	w := &Writer{W: &buf, Name: "x", Every: time.Second, Now: func() time.Time { return now }}
	for i := int64(1); i <= 10; i++ {
		w.Report(Event{Done: i, Total: 10, Unit: "steps"})
		now = now.Add(300 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// Printed at t=0, 1.2s, 2.4s and the final event at 2.7s.
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want 4:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[3], "10/10") {
		t.Errorf("last line %q does not show the final event", lines[3])
	}
}
