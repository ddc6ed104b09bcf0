package job_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dragonx/internal/progress"
	"dragonx/stages/job"
)

// childEnv makes the test binary act as the child: TestMain serves the job
// file named by its last argument with the test runners below.
const childEnv = "DRAGONX_JOBTEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// child is what `dragonx stage-job FILE` does, with test runners.
func child() int {
	registerTestRunners()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := job.Serve(ctx, os.Args[len(os.Args)-1], os.Stdout, os.Stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "interrupted:", err)
		return 130
	default:
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
}

func registerTestRunners() {
	// count: reports 3 steps, logs, writes out.txt from the spec.
	job.Register("count", job.Runner{Version: "1", Run: func(ctx context.Context, j *job.Job, env *job.Env) error {
		for i := 1; i <= 3; i++ {
			env.Progress.Report(progress.Event{Done: int64(i), Total: 3, Unit: "steps", Note: fmt.Sprintf("step %d", i)})
			time.Sleep(60 * time.Millisecond) // past the child's rate limit
			fmt.Fprintf(env.Log, "did step %d\n", i)
		}
		fmt.Println("a stray stdout line")
		return os.WriteFile(filepath.Join(j.Dir, "out.txt"), []byte(fmt.Sprintf("%s shard %d/%d", j.Spec, j.Shard, j.Shards)), 0o644)
	}})
	// fail: logs 30 lines, then fails.
	job.Register("fail", job.Runner{Version: "1", Run: func(ctx context.Context, j *job.Job, env *job.Env) error {
		for i := 1; i <= 30; i++ {
			fmt.Fprintf(env.Log, "log line %d\n", i)
		}
		return errors.New("the data is bad")
	}})
	// train: steps until interrupted, then saves its step in the state
	// directory and returns.
	job.Register("train", job.Runner{Version: "1", Run: func(ctx context.Context, j *job.Job, env *job.Env) error {
		for step := 1; ; step++ {
			select {
			case <-ctx.Done():
				if err := os.WriteFile(filepath.Join(j.StateDir, "state"), []byte(fmt.Sprintf("saved after step %d", step-1)), 0o644); err != nil {
					return err
				}
				fmt.Fprintln(env.Log, "saved the state")
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			env.Progress.Report(progress.Event{Done: int64(step), Total: 1000, Unit: "steps"})
		}
	}})
	// where: writes the job file's path and its TMPDIR to where.txt.
	job.Register("where", job.Runner{Version: "1", Run: func(ctx context.Context, j *job.Job, env *job.Env) error {
		return os.WriteFile(filepath.Join(j.Dir, "where.txt"), []byte(os.Args[len(os.Args)-1]+"\n"+os.Getenv("TMPDIR")), 0o644)
	}})
	// stubborn: ignores SIGINT.
	job.Register("stubborn", job.Runner{Version: "1", Run: func(ctx context.Context, j *job.Job, env *job.Env) error {
		signal.Ignore(os.Interrupt)
		env.Progress.Report(progress.Event{Done: 0, Total: 1, Unit: "steps"})
		time.Sleep(time.Minute)
		return nil
	}})
}

type events struct {
	mu sync.Mutex
	ev []progress.Event
	on func(progress.Event)
}

func (e *events) Report(ev progress.Event) {
	e.mu.Lock()
	e.ev = append(e.ev, ev)
	on := e.on
	e.mu.Unlock()
	if on != nil {
		on(ev)
	}
}

func opts(t *testing.T, rep progress.Reporter, log *strings.Builder) job.Options {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return job.Options{Binary: self, Env: []string{childEnv + "=1"}, Progress: rep, Log: &syncWriter{b: log}, Grace: 5 * time.Second}
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func newJob(t *testing.T, kind, version string) *job.Job {
	return &job.Job{Kind: kind, Version: version, Spec: []byte(`{"n":3}`), Dir: t.TempDir(), StateDir: t.TempDir(), Shard: 1, Shards: 2}
}

func TestRoundTrip(t *testing.T) {
	var ev events
	var log strings.Builder
	j := newJob(t, "count", "1")
	if err := job.Run(context.Background(), j, opts(t, &ev, &log)); err != nil {
		t.Fatalf("Run: %v\nlog:\n%s", err, log.String())
	}
	b, err := os.ReadFile(filepath.Join(j.Dir, "out.txt"))
	if err != nil || string(b) != `{"n":3} shard 1/2` {
		t.Errorf("out.txt = %q, %v; want the spec and shard the child read", b, err)
	}
	if len(ev.ev) != 3 {
		t.Fatalf("forwarded %d progress events, want 3: %+v", len(ev.ev), ev.ev)
	}
	for i, e := range ev.ev {
		want := progress.Event{Done: int64(i + 1), Total: 3, Unit: "steps", Note: fmt.Sprintf("step %d", i+1)}
		if e != want {
			t.Errorf("event %d = %+v, want %+v", i, e, want)
		}
	}
	for _, want := range []string{"did step 1\n", "did step 3\n", "a stray stdout line\n"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log %q lacks %q", log.String(), want)
		}
	}
}

// TestJobFilesStayInTmpDir: the job file and the child's temporary files are
// under Options.TmpDir (else the job's Dir), never in the system's
// temporary directory, and gone when Run returns.
func TestJobFilesStayInTmpDir(t *testing.T) {
	for _, withTmp := range []bool{true, false} {
		t.Run(fmt.Sprintf("TmpDir=%v", withTmp), func(t *testing.T) {
			var log strings.Builder
			j := newJob(t, "where", "1")
			o := opts(t, nil, &log)
			root := j.Dir
			if withTmp {
				o.TmpDir = t.TempDir()
				root = o.TmpDir
			}
			if err := job.Run(context.Background(), j, o); err != nil {
				t.Fatalf("Run: %v\nlog:\n%s", err, log.String())
			}
			b, err := os.ReadFile(filepath.Join(j.Dir, "where.txt"))
			if err != nil {
				t.Fatal(err)
			}
			file, tmp, _ := strings.Cut(string(b), "\n")
			if filepath.Dir(file) != tmp || filepath.Dir(tmp) != root {
				t.Errorf("job file %s, TMPDIR %s: want ROOT/job-*/job.json and ROOT/job-* with ROOT %s", file, tmp, root)
			}
			left, _ := filepath.Glob(filepath.Join(root, "job-*"))
			if len(left) > 0 {
				t.Errorf("left after Run: %v", left)
			}
		})
	}
}

func TestFailureQuotesTheLogTail(t *testing.T) {
	var log strings.Builder
	err := job.Run(context.Background(), newJob(t, "fail", "1"), opts(t, nil, &log))
	if err == nil {
		t.Fatal("Run of a failing job returned nil")
	}
	msg := err.Error()
	for _, want := range []string{"exited with status 1", "log line 30", "fail job: the data is bad"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "log line 5\n") {
		t.Errorf("error quotes the whole log, not its tail: %q", msg)
	}
	if !strings.Contains(log.String(), "log line 1\n") {
		t.Errorf("the whole log was not forwarded: %q", log.String())
	}
}

func TestChildRefusals(t *testing.T) {
	for _, c := range []struct{ kind, version, want string }{
		{"count", "2", `the count runner of this binary is version "1", the job wants version "2"`},
		{"sft-nope", "1", `this binary has no runner for kind "sft-nope"`},
	} {
		var log strings.Builder
		err := job.Run(context.Background(), newJob(t, c.kind, c.version), opts(t, nil, &log))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run(%s v%s) = %v; want an error containing %q", c.kind, c.version, err, c.want)
		}
	}
}

func TestCancelInterruptsAndTheRunnerSaves(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := &events{}
	ev.on = func(e progress.Event) {
		if e.Done >= 3 {
			cancel()
		}
	}
	var log strings.Builder
	j := newJob(t, "train", "1")
	start := time.Now()
	err := job.Run(ctx, j, opts(t, ev, &log))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v; want an error wrapping context.Canceled", err)
	}
	if el := time.Since(start); el > 4*time.Second {
		t.Errorf("the interrupted job took %v: SIGINT did not stop it (the grace is 5 s)", el)
	}
	b, err := os.ReadFile(filepath.Join(j.StateDir, "state"))
	if err != nil || !strings.HasPrefix(string(b), "saved after step ") {
		t.Errorf("state file = %q, %v; want the runner's saved state", b, err)
	}
	if !strings.Contains(log.String(), "saved the state") {
		t.Errorf("log %q lacks the runner's last line", log.String())
	}
}

func TestCancelKillsAfterGrace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := &events{on: func(progress.Event) { cancel() }}
	var log strings.Builder
	o := opts(t, ev, &log)
	o.Grace = 300 * time.Millisecond
	start := time.Now()
	err := job.Run(ctx, newJob(t, "stubborn", "1"), o)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Run = %v; want an interruption by SIGKILL", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v; the child ignoring SIGINT was not killed after the grace", el)
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"kind":"sft","version":"1","spec":{},"dir":"/d","state_dir":"","shard":0,"shards":1}`, ""},
		{`{"kind":"","version":"1","dir":"/d","shards":1}`, "kind is empty"},
		{`{"kind":"sft","dir":"","shards":1}`, "dir is empty"},
		{`{"kind":"sft","dir":"/d","shard":2,"shards":2}`, "shard 2 of 2"},
		{`{"kind":"sft","dir":"/d","shards":1,"extra":1}`, `unknown field "extra"`},
		{`{"kind":"sft","dir":"/d","shards":1} {}`, "data after the job object"},
		{`[1]`, "decoding the job file"},
	} {
		_, err := job.Parse([]byte(c.in))
		if c.want == "" {
			if err != nil {
				t.Errorf("Parse(%s) = %v; want nil", c.in, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v; want an error containing %q", c.in, err, c.want)
		}
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	j := &job.Job{Kind: "sft", Version: "3", Spec: []byte(`{"a":[1,2]}`), Dir: "/w", StateDir: "/s", Shard: 0, Shards: 1}
	p := filepath.Join(t.TempDir(), "job.json")
	if err := job.WriteFile(p, j); err != nil {
		t.Fatal(err)
	}
	got, err := job.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != j.Kind || got.Version != j.Version || string(got.Spec) != string(j.Spec) || got.Dir != j.Dir || got.StateDir != j.StateDir || got.Shards != 1 {
		t.Errorf("ReadFile(WriteFile(%+v)) = %+v", j, got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"kind":"sft","version":"1","spec":{},"dir":"/d","state_dir":"","shard":0,"shards":1}`))
	f.Add([]byte(`{"kind":"x","dir":"/d","shard":-1,"shards":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := job.Parse(b)
		if err != nil {
			return
		}
		if err := j.Validate(); err != nil {
			t.Fatalf("Parse accepted an invalid job: %v", err)
		}
	})
}

// TestShardFromEnv: a job file with shard_from_env serves every task of a
// cluster job, each taking its shard from $DRAGONX_SHARD; a mismatch with
// $DRAGONX_SHARDS, a missing variable or a shard in the file is refused.
func TestShardFromEnv(t *testing.T) {
	var got []int
	var mu sync.Mutex
	job.Register("shardenv-test", job.Runner{Version: "1", Run: func(_ context.Context, j *job.Job, env *job.Env) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, j.Shard)
		env.Progress.Report(progress.Event{Done: 1, Total: 1, Unit: "steps"})
		return nil
	}})
	path := filepath.Join(t.TempDir(), "job.json")
	if err := job.WriteFile(path, &job.Job{Kind: "shardenv-test", Version: "1", Dir: t.TempDir(), Shards: 3, ShardFromEnv: true}); err != nil {
		t.Fatal(err)
	}
	serve := func(shard, shards string) error {
		t.Setenv(job.EnvShard, shard)
		t.Setenv(job.EnvShards, shards)
		var stdout strings.Builder
		err := job.Serve(context.Background(), path, &stdout, io.Discard)
		if stdout.Len() > 0 {
			t.Errorf("a shard_from_env child wrote %q to stdout; want no progress lines", stdout.String())
		}
		return err
	}
	for _, s := range []string{"2", "0"} {
		if err := serve(s, "3"); err != nil {
			t.Fatalf("shard %s: %v", s, err)
		}
	}
	if fmt.Sprint(got) != "[2 0]" {
		t.Errorf("the runner saw shards %v, want [2 0]", got)
	}
	for _, c := range []struct{ shard, shards, want string }{
		{"1", "4", "the shardenv-test job has 3 shards"},
		{"3", "3", "is not a shard of 3"},
		{"", "", "which are not set"},
		{"x", "3", "are not whole numbers"},
	} {
		if err := serve(c.shard, c.shards); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DRAGONX_SHARD=%q DRAGONX_SHARDS=%q: error %v, want %q", c.shard, c.shards, err, c.want)
		}
	}
	if _, err := job.Parse([]byte(`{"kind":"k","version":"1","dir":"/d","shard":1,"shards":3,"shard_from_env":true}`)); err == nil || !strings.Contains(err.Error(), "comes from $DRAGONX_SHARD") {
		t.Errorf("a shard in a shard_from_env file: %v", err)
	}
}
