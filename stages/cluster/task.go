package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"dragonx/internal/fscopy"
	"dragonx/internal/procgroup"
)

// Marker is a shard task's completion record, DIR/shard-NNNN/done.json. The
// wrapper writes it when the command has ended (whatever its exit code) and
// renames it into place, so a marker that can be read is complete. A task
// that was killed before its command ended leaves none.
type Marker struct {
	Shard    int       `json:"shard"`
	Attempt  int       `json:"attempt"`
	ExitCode int       `json:"exit_code"` // 128+N for a command killed by signal N
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Host     string    `json:"host"`
}

// ReadMarker reads shard i's marker; os.ErrNotExist when there is none.
func ReadMarker(dir string, i int) (*Marker, error) {
	b, err := os.ReadFile(MarkerPath(dir, i))
	if err != nil {
		return nil, err
	}
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("cluster: marker of shard %d: %w", i, err)
	}
	if m.Shard != i {
		return nil, fmt.Errorf("cluster: marker of shard %d names shard %d", i, m.Shard)
	}
	return &m, nil
}

// killGrace is how long a cancelled command gets between SIGTERM and
// SIGKILL.
const killGrace = 5 * time.Second

// RunTask runs shard i of the job in the work directory dir: a fresh working
// directory holding a copy of the seed, a fresh TMPDIR, the command with the
// Spec's environment (TMPDIR added unless it has one) plus DRAGONX_SHARD=i and DRAGONX_SHARDS=N, its output in
// the attempt's log, and then the marker. It returns the marker, or an error
// when the task could not run at all or ctx was cancelled (then no marker is
// written: the task did not finish).
func RunTask(ctx context.Context, dir string, i int) (*Marker, error) {
	spec, err := readSpec(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: shard %d: %w", i, err)
	}
	if i < 0 || i >= spec.Shards {
		return nil, fmt.Errorf("cluster: shard %d does not exist (the job has %d shards)", i, spec.Shards)
	}
	attempt := readAttempt(dir, i)
	if err := os.Remove(MarkerPath(dir, i)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cluster: shard %d: %w", i, err)
	}
	work := WorkDir(dir, i)
	tmp := ShardDir(dir, i) + "/tmp"
	for _, d := range []string{work, tmp} {
		if err := os.RemoveAll(d); err != nil {
			return nil, fmt.Errorf("cluster: shard %d: clearing %s: %w", i, d, err)
		}
	}
	if _, err := os.Stat(seedDir(dir)); err == nil {
		if err := fscopy.Copy(seedDir(dir), work); err != nil {
			return nil, fmt.Errorf("cluster: shard %d: copying the inputs: %w", i, err)
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: shard %d: %w", i, err)
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: shard %d: %w", i, err)
	}
	log, err := os.Create(LogPath(dir, i, attempt))
	if err != nil {
		return nil, fmt.Errorf("cluster: shard %d: %w", i, err)
	}
	defer log.Close()

	host, _ := os.Hostname()
	m := &Marker{Shard: i, Attempt: attempt, Host: host, Start: time.Now().UTC()}
	cmd := procgroup.Command(spec.Argv...)
	cmd.Dir = work
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.Env = append([]string(nil), spec.Env...)
	for _, k := range spec.PassEnv {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	if !hasVar(spec.Env, "TMPDIR") {
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	}
	cmd.Env = append(cmd.Env,
		"DRAGONX_SHARD="+strconv.Itoa(i),
		"DRAGONX_SHARDS="+strconv.Itoa(spec.Shards))
	// Its own process group, so that a cancel reaches the whole pipeline,
	// owned by a supervisor that kills the group if the wrapper (or the
	// dragonx run that calls RunTask) dies, kill -9 included.
	if err := cmd.Start(); err != nil {
		// A command that cannot start is the task's failure, not the
		// wrapper's: it is recorded (127, as a shell says) and retried.
		fmt.Fprintf(log, "dragonx shard-task: cannot start %q: %v\n", spec.Argv[0], err)
		m.ExitCode = 127
		m.End = time.Now().UTC()
		return m, writeMarker(dir, m)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Stop(done, syscall.SIGTERM, true, killGrace)
		return nil, fmt.Errorf("cluster: shard %d interrupted: %w", i, ctx.Err())
	}
	if ctx.Err() != nil {
		// Cancelled while the command was ending (scancel signals every
		// process of the task at once): interrupted, not finished. The
		// supervisor killed what was left of the group.
		return nil, fmt.Errorf("cluster: shard %d interrupted: %w", i, ctx.Err())
	}
	m.End = time.Now().UTC()
	if err != nil {
		var ee *procgroup.ExitError
		if !errors.As(err, &ee) {
			return nil, fmt.Errorf("cluster: shard %d: %w", i, err)
		}
		m.ExitCode = ee.Status()
	}
	return m, writeMarker(dir, m)
}

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

func writeMarker(dir string, m *Marker) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return writeAtomic(MarkerPath(dir, m.Shard), append(b, '\n'))
}

// TaskMain is the body of `dragonx shard-task DIR SHARD`, the wrapper that a
// cluster node runs for one task. SHARD "-" means the task's index in the
// Slurm job array ($SLURM_ARRAY_TASK_ID). Cancelling ctx (the caller ties it
// to SIGTERM and SIGINT: scancel, a time limit) stops the command. It
// returns the process exit status: 0 when the marker was written (the
// command's own status is in it), 1 when the task could not run or was
// stopped, 2 for a bad command line.
func TaskMain(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: dragonx shard-task WORKDIR SHARD")
		return 2
	}
	dir, idx := args[0], args[1]
	if idx == "" || idx == "-" {
		idx = os.Getenv("SLURM_ARRAY_TASK_ID")
	}
	i, err := strconv.Atoi(idx)
	if err != nil {
		fmt.Fprintf(stderr, "dragonx shard-task: invalid shard %q (and no SLURM_ARRAY_TASK_ID)\n", idx)
		return 2
	}
	if _, err := RunTask(ctx, dir, i); err != nil {
		fmt.Fprintf(stderr, "dragonx shard-task: %v\n", err)
		return 1
	}
	return 0
}

// WriteShardLog copies the log of shard i's last attempt in the work
// directory dir to w, headed by its marker (attempt, host, duration), for
// a stage's log.
func WriteShardLog(w io.Writer, dir string, i int) {
	m, err := ReadMarker(dir, i)
	if err != nil {
		fmt.Fprintf(w, "--- shard %d: no marker (%v)\n", i, err)
		return
	}
	fmt.Fprintf(w, "--- shard %d (attempt %d on %s, %v)\n", i, m.Attempt, m.Host, m.End.Sub(m.Start).Round(time.Millisecond))
	f, err := os.Open(LogPath(dir, i, m.Attempt))
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.Copy(w, f)
}
