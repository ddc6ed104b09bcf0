package job

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"dragonx/internal/progress"
)

// Env is what a runner reports to.
type Env struct {
	// Progress goes to the parent's progress reporter.
	Progress progress.Reporter
	// Log goes to the stage log.
	Log io.Writer
}

// Serve is the child side: it reads the job file at path (a job with
// ShardFromEnv takes its shard from the environment), runs the runner
// registered for its kind, writes progress to stdout (JSON lines) and the
// log to stderr. It returns the runner's error; a cancelled ctx (SIGINT from
// the parent) makes it return an error wrapping context.Canceled.
func Serve(ctx context.Context, path string, stdout, stderr io.Writer) error {
	j, err := ReadFile(path)
	if err != nil {
		return err
	}
	if err := j.resolveShard(os.Getenv); err != nil {
		return err
	}
	r, ok := Lookup(j.Kind)
	if !ok {
		kinds := Kinds()
		if len(kinds) == 0 {
			kinds = []string{"none"}
		}
		return fmt.Errorf("job: this binary has no runner for kind %q (it has: %s)", j.Kind, strings.Join(kinds, ", "))
	}
	if r.Version != j.Version {
		return fmt.Errorf("job: the %s runner of this binary is version %q, the job wants version %q: the parent and this binary come from different builds (make build)", j.Kind, r.Version, j.Version)
	}
	rep := &lineReporter{w: stdout, every: 50 * time.Millisecond, now: time.Now}
	env := &Env{Progress: rep, Log: stderr}
	if j.ShardFromEnv {
		// A cluster task: its stdout is only its log file, and the
		// executor reports shards done; progress lines would be noise.
		env.Progress = progress.Nop{}
	}
	err = r.Run(ctx, j, env)
	rep.flush()
	if err != nil {
		return fmt.Errorf("%s job: %w", j.Kind, err)
	}
	return nil
}

// Progress is one progress line on the child's stdout.
type Progress struct {
	Done  int64  `json:"done"`
	Total int64  `json:"total"`
	Unit  string `json:"unit,omitempty"`
	Note  string `json:"note,omitempty"`
}

// lineReporter writes events as JSON lines, at most one per every (the
// parent rate-limits what it shows; this only keeps the pipe quiet), always
// the first and the final one (Done >= Total > 0); flush writes a held event.
type lineReporter struct {
	w     io.Writer
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	last    time.Time
	pending *progress.Event
}

func (r *lineReporter) Report(e progress.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if !r.last.IsZero() && now.Sub(r.last) < r.every && !(e.Total > 0 && e.Done >= e.Total) {
		r.pending = &e
		return
	}
	r.last = now
	r.pending = nil
	r.write(e)
}

func (r *lineReporter) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending != nil {
		r.write(*r.pending)
		r.pending = nil
	}
}

func (r *lineReporter) write(e progress.Event) {
	b, err := json.Marshal(Progress{Done: e.Done, Total: e.Total, Unit: e.Unit, Note: e.Note})
	if err != nil {
		return
	}
	r.w.Write(append(b, '\n'))
}
