package job

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"dragonx/internal/procgroup"
	"dragonx/internal/progress"
)

// DefaultGrace is how long an interrupted child gets to save its state
// between SIGINT and SIGKILL. Saving the checkpoint of a few-million
// parameter model takes well under a second; the margin is for large
// models and slow disks.
const DefaultGrace = 30 * time.Second

// Options say how Run starts the child and where its output goes.
type Options struct {
	// Binary is the program to start (e.g. torchbin.Find's).
	Binary string
	// Args come before the job file; nil means {"stage-job"}.
	Args []string
	// Env is added to this process's environment.
	Env []string
	// JobFile is where the job is written; "" means a file in a fresh
	// directory under TmpDir, removed afterwards.
	JobFile string
	// TmpDir holds that directory, which is also the child's TMPDIR; ""
	// means the job's Dir. Stages pass RunContext.Tmp: under the engine's
	// work root, so that what a killed run leaves is removed by the next
	// one, never left in the system's temporary directory.
	TmpDir string
	// Progress receives the child's progress; nil discards it.
	Progress progress.Reporter
	// Log receives the child's stderr (and any stdout line that is not
	// progress); nil discards it.
	Log io.Writer
	// Grace is the time between SIGINT and SIGKILL after ctx is
	// cancelled; 0 means DefaultGrace.
	Grace time.Duration
}

// tailLines is how many lines of the child's log an error quotes.
const tailLines = 20

// Run writes j, runs the child on it and waits. It forwards the child's
// progress and log; on ctx cancellation it sends SIGINT, waits up to
// o.Grace, then SIGKILL, and returns an error wrapping ctx.Err(). A
// non-zero exit is an error quoting the last lines of the child's log.
func Run(ctx context.Context, j *Job, o Options) error {
	if err := j.Validate(); err != nil {
		return fmt.Errorf("job: invalid %s job: %w", j.Kind, err)
	}
	if o.Binary == "" {
		return fmt.Errorf("job: no binary to run the %s job", j.Kind)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("job: %s not started: %w", j.Kind, err)
	}
	rep := o.Progress
	if rep == nil {
		rep = progress.Nop{}
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	grace := o.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	tmpRoot := o.TmpDir
	if tmpRoot == "" {
		tmpRoot = j.Dir
	}
	tmp, err := os.MkdirTemp(tmpRoot, "job-")
	if err != nil {
		return fmt.Errorf("job: %w", err)
	}
	defer os.RemoveAll(tmp)
	file := o.JobFile
	if file == "" {
		file = filepath.Join(tmp, "job.json")
	}
	if err := WriteFile(file, j); err != nil {
		return err
	}
	args := o.Args
	if args == nil {
		args = []string{"stage-job"}
	}
	// The child runs in a process group of its own (a Ctrl-C on the
	// terminal reaches it once, through us), owned by a supervisor that
	// kills the group when we exit in any way, kill -9 included.
	cmd := procgroup.Command(append(append([]string{o.Binary}, args...), file)...)
	cmd.Dir = j.Dir
	cmd.Env = append(append(os.Environ(), o.Env...), "TMPDIR="+tmp)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("job: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("job: %w", err)
	}
	var mu sync.Mutex // serialises writes to logw
	tail := &tailBuffer{max: tailLines}
	logLine := func(line []byte) {
		mu.Lock()
		defer mu.Unlock()
		logw.Write(line)
		logw.Write([]byte{'\n'})
		tail.add(string(line))
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("job: starting %s for the %s job: %w", o.Binary, j.Kind, err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		scanLines(stdout, func(line []byte) {
			if p, ok := parseProgress(line); ok {
				rep.Report(progress.Event{Done: p.Done, Total: p.Total, Unit: p.Unit, Note: p.Note})
				return
			}
			logLine(line)
		})
	}()
	go func() {
		defer wg.Done()
		scanLines(stderr, logLine)
	}()
	readersDone := make(chan struct{})
	go func() { wg.Wait(); close(readersDone) }()

	interrupted := false
	select {
	case <-readersDone:
	case <-ctx.Done():
		interrupted = true
		_ = cmd.SignalCommand(syscall.SIGINT)
		select {
		case <-readersDone:
		case <-time.After(grace):
			_ = cmd.Kill()
			<-readersDone
		}
	}
	werr := cmd.Wait()
	if werr == nil {
		return nil
	}
	if interrupted {
		return fmt.Errorf("job: %s interrupted (%v): %w", j.Kind, werr, ctx.Err())
	}
	var ee *procgroup.ExitError
	if errors.As(werr, &ee) {
		what := fmt.Sprintf("exited with status %d", ee.Code)
		if ee.Signaled() {
			what = fmt.Sprintf("was killed by signal %v", ee.Signal)
		}
		return fmt.Errorf("job: the %s job (%s) %s; the end of its log:\n%s", j.Kind, filepath.Base(o.Binary), what, tail.String())
	}
	return fmt.Errorf("job: the %s job: %w", j.Kind, werr)
}

// maxLine bounds one line of the child's output; longer lines are cut into
// pieces of this size.
const maxLine = 1 << 20

func scanLines(r io.Reader, f func([]byte)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err != nil {
			if len(buf) > 0 {
				f(buf)
			}
			// Drain what is left so that the child never blocks on a
			// full pipe.
			io.Copy(io.Discard, br)
			return
		}
		buf = append(buf, chunk...)
		if isPrefix && len(buf) < maxLine {
			continue
		}
		f(buf)
		buf = buf[:0]
	}
}

// parseProgress decodes a progress line: a JSON object with at least done.
func parseProgress(line []byte) (Progress, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Progress{}, false
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(line, &raw) != nil {
		return Progress{}, false
	}
	if _, ok := raw["done"]; !ok {
		return Progress{}, false
	}
	var p Progress
	if json.Unmarshal(line, &p) != nil {
		return Progress{}, false
	}
	return p, true
}

// tailBuffer keeps the last max lines.
type tailBuffer struct {
	max   int
	lines []string
}

func (t *tailBuffer) add(s string) {
	t.lines = append(t.lines, s)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

func (t *tailBuffer) String() string {
	if len(t.lines) == 0 {
		return "  (the log is empty)"
	}
	return "  " + strings.Join(t.lines, "\n  ")
}
