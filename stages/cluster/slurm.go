package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SlurmConfig configures the Slurm executor. The fields that map to sbatch
// options are passed as given; "" and 0 leave the site's defaults.
type SlurmConfig struct {
	// Dir is the job's work directory; it must be visible at the same path
	// on the submitting machine and on every node.
	Dir string
	// Partition, Time (sbatch --time), CPUsPerTask, GPUsPerTask.
	Partition   string
	Time        string
	CPUsPerTask int
	GPUsPerTask int
	// ArrayParallelism is K in --array=LIST%K: at most K tasks of one array
	// run at once (0: no limit).
	ArrayParallelism int
	// ExtraArgs are further sbatch options (["--account=abc"]).
	ExtraArgs []string
	// Task is the wrapper command that a node runs for one task; the
	// executor appends the work directory and the shard ("-": the array
	// index), e.g. ["/usr/local/bin/dragonx", "shard-task"].
	Task []string
	// Env is added to the environment of the Slurm commands (sbatch,
	// squeue, scancel), e.g. SLURM_CONF=... for a test cluster.
	Env []string
	// MaxAttempts is how many times a shard runs before the job fails; 0
	// means DefaultMaxAttempts.
	MaxAttempts int
	// Poll is the interval between status polls (0: 500 ms).
	Poll time.Duration
}

// Slurm submits a job's shards as one Slurm job array (and the shards to
// retry as one more array per round), reads their state from the markers
// first and batched squeue calls second, and scancels them on cancellation.
type Slurm struct{ cfg SlurmConfig }

// NewSlurm returns a Slurm executor.
func NewSlurm(cfg SlurmConfig) (*Slurm, error) {
	if len(cfg.Task) == 0 || cfg.Task[0] == "" {
		return nil, errors.New("cluster: the Slurm executor needs the wrapper command (dragonx shard-task)")
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	return &Slurm{cfg: cfg}, nil
}

// Name returns "slurm".
func (*Slurm) Name() string { return "slurm" }

// Dir returns the work directory.
func (s *Slurm) Dir() string { return s.cfg.Dir }

// Run submits the job's unfinished shards and waits for them.
func (s *Slurm) Run(ctx context.Context, job *Job) (*Outcome, error) {
	if err := job.Spec.validate(); err != nil {
		return nil, err
	}
	b := &slurmBackend{cfg: s.cfg, dir: s.cfg.Dir, name: jobName(job.Spec.Name), arrays: map[string][]int{}}
	if err := os.MkdirAll(b.slurmDir(), 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	// Tasks of an earlier run that was killed before it could scancel them
	// would race with this run's tasks on the same shard directories.
	b.cancelStale()
	d := &driver{dir: s.cfg.Dir, b: b, maxAttempts: s.cfg.MaxAttempts, poll: s.cfg.Poll, lostGrace: 3 * time.Second, liveErrorBudget: 2 * time.Minute}
	return d.run(ctx, job)
}

// jobName is the Slurm job name: "dragonx-" and the job's name, restricted
// to characters that need no quoting anywhere.
func jobName(name string) string {
	var b strings.Builder
	b.WriteString("dragonx")
	if name != "" {
		b.WriteByte('-')
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}

type slurmBackend struct {
	cfg  SlurmConfig
	dir  string
	name string

	mu     sync.Mutex
	arrays map[string][]int // array job id -> its shards
	order  []string
	rounds int
}

func (b *slurmBackend) slurmDir() string { return filepath.Join(b.dir, "slurm") }
func (b *slurmBackend) jobsFile() string { return filepath.Join(b.slurmDir(), "jobs") }

// command runs a Slurm client command and returns its stdout.
func (b *slurmBackend) command(ctx context.Context, name string, args ...string) (string, error) {
	cmd := osexec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), b.cfg.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		if errors.Is(err, osexec.ErrNotFound) {
			return "", fmt.Errorf("%s is not installed (the Slurm executor needs the Slurm client commands on the submitting machine): %w", name, err)
		}
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return stdout.String(), nil
}

func (b *slurmBackend) submit(ctx context.Context, shards []int) error {
	b.mu.Lock()
	b.rounds++
	round := b.rounds
	b.mu.Unlock()
	script := filepath.Join(b.slurmDir(), fmt.Sprintf("submit-%d.sh", round))
	var sh strings.Builder
	sh.WriteString("#!/bin/sh\n# written by dragonx: one task of a sharded stage (see docs/cluster.md)\nexec")
	for _, a := range append(append([]string(nil), b.cfg.Task...), b.dir, "-") {
		sh.WriteString(" " + shellQuote(a))
	}
	sh.WriteString("\n")
	if err := writeAtomic(script, []byte(sh.String())); err != nil {
		return err
	}
	if err := os.Chmod(script, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	array := formatArray(shards)
	if k := b.cfg.ArrayParallelism; k > 0 {
		array += "%" + strconv.Itoa(k)
	}
	args := []string{
		"--parsable",
		"--job-name=" + b.name,
		"--array=" + array,
		"--output=" + filepath.Join(b.slurmDir(), "%A_%a.out"),
		"--chdir=" + b.dir,
	}
	if b.cfg.Partition != "" {
		args = append(args, "--partition="+b.cfg.Partition)
	}
	if b.cfg.Time != "" {
		args = append(args, "--time="+b.cfg.Time)
	}
	if b.cfg.CPUsPerTask > 0 {
		args = append(args, "--cpus-per-task="+strconv.Itoa(b.cfg.CPUsPerTask))
	}
	if b.cfg.GPUsPerTask > 0 {
		args = append(args, "--gpus-per-task="+strconv.Itoa(b.cfg.GPUsPerTask))
	}
	args = append(args, b.cfg.ExtraArgs...)
	args = append(args, script)
	out, err := b.command(ctx, "sbatch", args...)
	if err != nil {
		return fmt.Errorf("cluster: submitting the job array: %w", err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return fmt.Errorf("cluster: sbatch printed %q, not a job id", strings.TrimSpace(out))
	}
	b.mu.Lock()
	b.arrays[id] = append([]int(nil), shards...)
	b.order = append(b.order, id)
	b.mu.Unlock()
	f, err := os.OpenFile(b.jobsFile(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = fmt.Fprintln(f, id)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("cluster: recording job %s: %w", id, err)
	}
	return nil
}

// live asks squeue, once, for every task of this job name and keeps those
// of the arrays this run submitted. squeue lists only jobs that are queued,
// running or ending; it fails for a job id it has forgotten, so the query
// is by name, never by id.
func (b *slurmBackend) live(ctx context.Context) (map[int]bool, map[int]bool, error) {
	out, err := b.command(ctx, "squeue", "-h", "-r", "--me", "--name="+b.name, "-o", "%i|%T")
	if err != nil {
		return nil, nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return parseSqueue(out, b.arrays)
}

// parseSqueue reads lines "ARRAYID_TASK|STATE" of squeue -r.
func parseSqueue(out string, arrays map[string][]int) (pending, running map[int]bool, err error) {
	pending, running = map[int]bool{}, map[int]bool{}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		id, state, ok := strings.Cut(line, "|")
		if !ok {
			return nil, nil, fmt.Errorf("cluster: unexpected squeue line %q", line)
		}
		arr, task, ok := strings.Cut(id, "_")
		if !ok {
			continue // not an array task
		}
		if _, ours := arrays[arr]; !ours {
			continue
		}
		i, err := strconv.Atoi(task)
		if err != nil {
			// A folded pending range "30_[1-5]" (squeue without -r).
			return nil, nil, fmt.Errorf("cluster: unexpected squeue task id %q", id)
		}
		switch state {
		case "PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED":
			pending[i] = true
		default: // RUNNING, COMPLETING, STAGE_OUT, SIGNALING, ...
			running[i] = true
		}
	}
	return pending, running, nil
}

// lostReason says what Slurm knows of shard i's last task: its state and
// exit code from sacct where accounting works, else from scontrol (which
// knows a job until MinJobAge after its end), and the tail of Slurm's own
// output of the task.
func (b *slurmBackend) lostReason(i int) string {
	b.mu.Lock()
	id := ""
	for k := len(b.order) - 1; k >= 0 && id == ""; k-- {
		for _, s := range b.arrays[b.order[k]] {
			if s == i {
				id = b.order[k]
				break
			}
		}
	}
	b.mu.Unlock()
	if id == "" {
		return ""
	}
	task := fmt.Sprintf("%s_%d", id, i)
	var parts []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if st := b.accountedState(ctx, task); st != "" {
		parts = append(parts, "Slurm says "+st)
	}
	p := filepath.Join(b.slurmDir(), task+".out")
	if t := tail(p, 5); t != "" {
		parts = append(parts, fmt.Sprintf("Slurm's output of task %s (%s) ends with: %s", task, p, strings.ReplaceAll(t, "\n", " | ")))
	}
	if len(parts) == 0 {
		return "Slurm task " + task
	}
	return strings.Join(parts, "; ")
}

// accountedState returns "STATE, exit code X:Y" of an array task, or "".
func (b *slurmBackend) accountedState(ctx context.Context, task string) string {
	// sacct needs slurmdbd; without it, it fails ("accounting storage is
	// disabled") and scontrol answers instead.
	if out, err := b.command(ctx, "sacct", "-n", "-P", "-X", "-j", task, "-o", "State,ExitCode"); err == nil {
		if line, _, _ := strings.Cut(strings.TrimSpace(out), "\n"); line != "" {
			if state, code, ok := strings.Cut(line, "|"); ok {
				return fmt.Sprintf("%s, exit code %s (sacct)", state, code)
			}
		}
	}
	// A task that has just ended may still be COMPLETING (its processes
	// being reaped) for a moment: wait a little for its final state.
	deadline := time.Now().Add(3 * time.Second)
	for {
		out, err := b.command(ctx, "scontrol", "show", "job", "-o", task)
		if err != nil {
			return ""
		}
		st := parseScontrol(out)
		if !strings.HasPrefix(st, "COMPLETING") || time.Now().After(deadline) {
			return st
		}
		select {
		case <-ctx.Done():
			return st
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// parseScontrol picks JobState, Reason and ExitCode out of one line of
// `scontrol show job -o`.
func parseScontrol(out string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	fields := map[string]string{}
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k] = v
		}
	}
	if fields["JobState"] == "" {
		return ""
	}
	s := fields["JobState"]
	if r := fields["Reason"]; r != "" && r != "None" {
		s += " (" + r + ")"
	}
	if c := fields["ExitCode"]; c != "" {
		s += ", exit code " + c
	}
	return s + " (scontrol)"
}

// stop scancels every array of this run and waits (at most 30 s) until
// squeue lists none of their tasks.
func (b *slurmBackend) stop() error {
	b.mu.Lock()
	ids := append([]string(nil), b.order...)
	b.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.command(ctx, "scancel", ids...); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	for {
		p, r, err := b.live(ctx)
		if err == nil && len(p)+len(r) == 0 {
			_ = os.Remove(b.jobsFile())
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: jobs %s still listed by squeue 30 s after scancel", strings.Join(ids, ","))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cancelStale scancels the arrays an earlier run recorded and did not
// cancel (it was killed). Errors are ignored: those jobs are usually long
// gone.
func (b *slurmBackend) cancelStale() {
	data, err := os.ReadFile(b.jobsFile())
	if err != nil {
		return
	}
	var ids []string
	for _, f := range strings.Fields(string(data)) {
		if _, err := strconv.ParseUint(f, 10, 64); err == nil {
			ids = append(ids, f)
		}
	}
	if len(ids) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = b.command(ctx, "scancel", ids...)
	}
	_ = os.Remove(b.jobsFile())
}

// formatArray writes shard indices as Slurm's --array list: sorted, with
// runs folded into ranges ("0-3,5,7-9").
func formatArray(shards []int) string {
	s := append([]int(nil), shards...)
	sort.Ints(s)
	var parts []string
	for k := 0; k < len(s); {
		j := k
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j > k {
			parts = append(parts, fmt.Sprintf("%d-%d", s[k], s[j]))
		} else {
			parts = append(parts, strconv.Itoa(s[k]))
		}
		k = j + 1
	}
	return strings.Join(parts, ",")
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
