package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"dragonx/internal/progress"
)

// Executor runs the shards of a job. Run returns once every shard has
// finished with exit code 0 (each retried up to a limit), or fails naming
// the first shard that did not and the tail of its log. Cancelling ctx
// stops every task it started (nothing is left queued) and returns ctx's
// error; the finished shards stay in the work directory for the next Run.
type Executor interface {
	// Name is "local" or "slurm".
	Name() string
	// Dir is the job's work directory.
	Dir() string
	Run(ctx context.Context, job *Job) (*Outcome, error)
}

// DefaultMaxAttempts is how many times a shard runs before the job fails:
// a first attempt and two retries.
const DefaultMaxAttempts = 3

// backend is what differs between executors: how tasks start, which are
// still queued or running, and how to stop them.
type backend interface {
	// submit starts (or queues) one task per shard listed.
	submit(ctx context.Context, shards []int) error
	// live returns the submitted shards still queued and running.
	live(ctx context.Context) (pending, running map[int]bool, err error)
	// lostReason says what the executor knows of shard i's last task, for
	// a task that ended without a marker or was killed by a signal ("" if
	// nothing).
	lostReason(i int) string
	// stop cancels every task submitted and waits until none is left.
	stop() error
}

// driver is the loop both executors share: markers first, then the
// backend's view, retries of failed shards only, progress.
type driver struct {
	dir         string
	b           backend
	maxAttempts int
	poll        time.Duration
	// lostGrace is how long a shard may be neither live nor marked before
	// it counts as lost (a marker written on another node may take a moment
	// to appear on a network file system).
	lostGrace time.Duration
	// liveErrorBudget is how long live() may fail without a success in
	// between before the job fails (a busy slurmctld may not answer for a
	// while); 0 fails at the first error.
	liveErrorBudget time.Duration
}

type shardFailure struct {
	shard    int
	attempts int
	why      string
	log      string // path of the log to show
}

func (d *driver) run(ctx context.Context, job *Job) (*Outcome, error) {
	if err := job.Spec.validate(); err != nil {
		return nil, err
	}
	logw := job.Log
	if logw == nil {
		logw = io.Discard
	}
	rep := job.Progress
	if rep == nil {
		rep = progress.Nop{}
	}
	if err := prepare(d.dir, job); err != nil {
		return nil, err
	}
	n := job.Spec.Shards
	out := &Outcome{Dir: d.dir}
	for i := range n {
		out.WorkDirs = append(out.WorkDirs, WorkDir(d.dir, i))
	}
	done := make([]bool, n)
	attempts := make([]int, n)
	var todo []int
	for i := range n {
		if m, err := ReadMarker(d.dir, i); err == nil && m.ExitCode == 0 && isDir(WorkDir(d.dir, i)) {
			done[i] = true
			out.Reused++
			continue
		}
		todo = append(todo, i)
	}
	ndone := out.Reused
	if out.Reused > 0 {
		fmt.Fprintf(logw, "shards: %d of %d finished by an earlier run, reused\n", out.Reused, n)
	}
	if len(todo) == 0 {
		rep.Report(progress.Event{Done: int64(n), Total: int64(n), Unit: "shards"})
		return out, nil
	}

	inflight := map[int]bool{}
	launch := func(shards []int) error {
		for _, i := range shards {
			attempts[i]++
			out.Attempts++
			if err := os.Remove(MarkerPath(d.dir, i)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("cluster: %w", err)
			}
			if err := setAttempt(d.dir, i, attempts[i]); err != nil {
				return err
			}
		}
		if err := d.b.submit(ctx, shards); err != nil {
			return err
		}
		for _, i := range shards {
			inflight[i] = true
		}
		return nil
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		return d.b.stop()
	}
	defer stop()

	if err := launch(todo); err != nil {
		return nil, err
	}
	var failures []shardFailure
	unseen := map[int]time.Time{} // when a shard was first seen neither live nor marked
	var liveErrorsSince time.Time // first failure of live() since its last success
	report := func(pending, running int) {
		note := fmt.Sprintf("running %d, pending %d", running, pending)
		if r := out.Attempts - len(todo); r > 0 {
			note += fmt.Sprintf(", retried %d", r)
		}
		if out.Reused > 0 {
			note += fmt.Sprintf(", %d reused", out.Reused)
		}
		rep.Report(progress.Event{Done: int64(ndone), Total: int64(n), Unit: "shards", Note: note})
	}
	report(len(todo), 0)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for len(inflight) > 0 {
		timer.Reset(d.poll)
		select {
		case <-ctx.Done():
			// Shards that finished before the cancel are kept for the next
			// run, even if this loop had not looked yet.
			for i := range inflight {
				if m, err := ReadMarker(d.dir, i); err == nil && m.ExitCode == 0 {
					delete(inflight, i)
				}
			}
			if err := stop(); err != nil {
				fmt.Fprintf(logw, "shards: stopping the tasks: %v\n", err)
			}
			// A task signalled by a cancel may still end with exit code 0
			// (Slurm signals a task's processes one by one: a shell whose
			// child died first carries on). A shard in flight at the
			// cancel is never reused: its marker goes.
			for i := range inflight {
				_ = os.Remove(MarkerPath(d.dir, i))
			}
			return nil, fmt.Errorf("cluster: %d shard(s) stopped: %w", len(inflight), ctx.Err())
		case <-timer.C:
		}
		var retry []int
		settle := func(i int, m *Marker) {
			delete(inflight, i)
			delete(unseen, i)
			if m != nil && m.ExitCode == 0 {
				done[i] = true
				ndone++
				return
			}
			f := shardFailure{shard: i, attempts: attempts[i], log: LogPath(d.dir, i, attempts[i])}
			if m != nil {
				f.why = fmt.Sprintf("exit status %d (attempt %d on %s)", m.ExitCode, m.Attempt, m.Host)
				if sig := m.ExitCode - 128; sig > 0 && sig < 65 {
					// Killed by a signal: ask the executor why (a time
					// limit, a cancel, memory).
					f.why += fmt.Sprintf(", killed by signal %d (%v)", sig, syscall.Signal(sig))
					if r := d.b.lostReason(i); r != "" {
						f.why += "; " + r
					}
				}
			} else {
				f.why = fmt.Sprintf("the task ended without a completion marker (attempt %d: cancelled, killed, out of time or memory, or a node failure)", attempts[i])
				if r := d.b.lostReason(i); r != "" {
					f.why += "; " + r
				}
			}
			if attempts[i] < d.maxAttempts && len(failures) == 0 {
				fmt.Fprintf(logw, "shards: shard %d failed: %s; retrying\n", i, f.why)
				retry = append(retry, i)
				return
			}
			failures = append(failures, f)
		}
		checkMarker := func(i int) bool {
			m, err := ReadMarker(d.dir, i)
			if err != nil {
				return false
			}
			settle(i, m)
			return true
		}
		for _, i := range sortedKeys(inflight) {
			checkMarker(i)
		}
		npending, nrunning := 0, 0
		if len(inflight) > 0 {
			pending, running, err := d.b.live(ctx)
			if err != nil {
				if ctx.Err() != nil {
					continue
				}
				fmt.Fprintf(logw, "shards: reading the task states: %v\n", err)
				if liveErrorsSince.IsZero() {
					liveErrorsSince = time.Now()
				}
				if time.Since(liveErrorsSince) >= d.liveErrorBudget {
					return nil, fmt.Errorf("cluster: cannot read the task states (for %v): %w", time.Since(liveErrorsSince).Round(time.Second), err)
				}
				continue
			}
			liveErrorsSince = time.Time{}
			now := time.Now()
			for _, i := range sortedKeys(inflight) {
				switch {
				case pending[i]:
					npending++
					delete(unseen, i)
				case running[i]:
					nrunning++
					delete(unseen, i)
				case checkMarker(i):
					// It finished between the two looks.
				default:
					first, seen := unseen[i]
					if !seen {
						unseen[i] = now
					} else if now.Sub(first) >= d.lostGrace {
						settle(i, nil)
					}
				}
			}
		}
		if len(failures) > 0 {
			// No retry starts once a shard has failed for good; the job
			// waits for the tasks in flight and fails.
			for _, i := range retry {
				failures = append(failures, shardFailure{shard: i, attempts: attempts[i], why: "not retried: another shard failed for good", log: LogPath(d.dir, i, attempts[i])})
			}
			retry = nil
		}
		if len(retry) > 0 {
			sort.Ints(retry)
			if err := launch(retry); err != nil {
				return nil, err
			}
			npending += len(retry)
		}
		report(npending, nrunning)
	}
	if len(failures) > 0 {
		return nil, failureError(failures, n)
	}
	return out, nil
}

// failureError names the first failed shard, why, and the tail of its log.
func failureError(fs []shardFailure, n int) error {
	sort.Slice(fs, func(a, b int) bool { return fs[a].shard < fs[b].shard })
	f := fs[0]
	var b strings.Builder
	fmt.Fprintf(&b, "shard %d of %d failed after %d attempt(s): %s", f.shard, n, f.attempts, f.why)
	if len(fs) > 1 {
		var others []string
		for _, g := range fs[1:] {
			others = append(others, fmt.Sprint(g.shard))
		}
		fmt.Fprintf(&b, "; shard(s) %s failed too", strings.Join(others, ", "))
	}
	if t := tail(f.log, 20); t != "" {
		fmt.Fprintf(&b, "\nlast lines of %s:\n%s", f.log, indent(t))
	} else {
		fmt.Fprintf(&b, "\n(its log %s is empty or missing)", f.log)
	}
	return errors.New(b.String())
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func sortedKeys(m map[int]bool) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}
