package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"dragonx/internal/progress"
	"dragonx/stages"
)

func TestTextUITerminalStatusLine(t *testing.T) {
	var buf bytes.Buffer
	u := newTextUI(&buf, true, false)
	now := time.Unix(100, 0)
	u.now = func() time.Time { return now }
	a := stages.Addr{Name: "sft"}
	u.Begin("run", 2, 2)
	u.Started(a, "sft", []string{"no previous run"})
	now = now.Add(time.Second)
	u.Progress(a, stages.ProgressEvent{Done: 50, Total: 100, Unit: "steps", Elapsed: 10 * time.Second})
	out := buf.String()
	if !strings.Contains(out, "\r\x1b[K  running: sft [##########..........]  50% 50/100 steps 5.00/s ETA 10s") {
		t.Errorf("no progress bar in terminal output:\n%q", out)
	}
	u.Finished(&stages.Result{Addr: a, Kind: "sft", Status: stages.StatusFailed, Err: errors.New("boom")}, []byte("line 1\nline 2\n"))
	u.End(&stages.Report{})
	out = buf.String()
	for _, want := range []string{"failed   sft: boom", "    | line 2", "dragonx: 1 failed in 1s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestTextUIPlainProgressIsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	u := newTextUI(&buf, false, false)
	now := time.Unix(100, 0)
	u.now = func() time.Time { return now }
	a := stages.Addr{Name: "rl"}
	u.Begin("run", 1, 1)
	u.Started(a, "rl", nil)
	for i := 1; i <= 100; i++ {
		now = now.Add(time.Second)
		u.Progress(a, stages.ProgressEvent{Done: int64(i), Total: 100, Unit: "groups", Elapsed: time.Duration(i) * time.Second})
	}
	if n := strings.Count(buf.String(), "progress rl"); n != 4 { // at 1s, 31s, 61s, 91s
		t.Errorf("got %d progress lines over 100 s, want 4:\n%s", n, buf.String())
	}
	if strings.Contains(buf.String(), "\x1b[") {
		t.Errorf("plain output has terminal escapes:\n%q", buf.String())
	}
}

func TestTextUIRemoteTransfers(t *testing.T) {
	var buf bytes.Buffer
	u := newTextUI(&buf, false, false)
	now := time.Unix(100, 0)
	u.now = func() time.Time { return now }
	u.Begin("run", 1, 1)
	for i := int64(1); i <= 30; i++ {
		now = now.Add(time.Second)
		u.Report(progress.Event{Done: i << 20, Total: 30 << 20, Unit: "B", Note: "pull stage.big"})
	}
	out := buf.String()
	// At 1 s, 11 s, 21 s, and the end.
	if n := strings.Count(out, "  remote   ["); n != 4 {
		t.Errorf("got %d transfer lines over 30 s, want 4:\n%s", n, out)
	}
	if !strings.Contains(out, "100% 31457280/31457280 B") || !strings.Contains(out, "pull stage.big") {
		t.Errorf("no final transfer line naming the stage:\n%s", out)
	}
	u.Warn("remote x is unavailable")
	if !strings.Contains(buf.String(), "dragonx: warning: remote x is unavailable\n") {
		t.Errorf("no warning line:\n%s", buf.String())
	}
	u.Finished(&stages.Result{Addr: stages.Addr{Name: "big"}, Kind: "exec", Status: stages.StatusCached, Remote: true}, nil)
	if !strings.Contains(buf.String(), "cached   big (pulled from the remote cache)") {
		t.Errorf("a pulled stage is not marked:\n%s", buf.String())
	}

	buf.Reset()
	u = newTextUI(&buf, true, false)
	u.now = func() time.Time { return now }
	u.Begin("run", 1, 1)
	u.Report(progress.Event{Done: 10 << 20, Total: 30 << 20, Unit: "B", Note: "push stage.big"})
	if !strings.Contains(buf.String(), "\r\x1b[K  running: remote [######..............]  33%") {
		t.Errorf("no transfer in the terminal status line:\n%q", buf.String())
	}
}
