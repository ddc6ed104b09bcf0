package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dragonx/stages/cluster"
	"dragonx/stages/cluster/slurmtest"
)

// The test binary is the task wrapper on the Slurm nodes: with this
// variable set it runs cluster.TaskMain, as `dragonx shard-task` does.
const taskEnv = "DRAGONX_CLUSTER_TEST_TASK"

func TestMain(m *testing.M) {
	if os.Getenv(taskEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		code := cluster.TaskMain(ctx, os.Args[1:], os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// testEnv makes executors of one kind.
type testEnv struct {
	mk    func(dir string) cluster.Executor
	slurm *slurmtest.Cluster // nil for local
}

// newExec returns a function making an executor of the given name for a
// work directory; for "slurm" it starts a cluster (or skips).
func newExec(t *testing.T, name string) testEnv {
	t.Helper()
	switch name {
	case "local":
		return testEnv{mk: func(dir string) cluster.Executor {
			return cluster.NewLocal(cluster.LocalConfig{Dir: dir, Parallelism: 4})
		}}
	case "slurm":
		c := slurmtest.StartT(t, slurmtest.Options{OverSubscribe: 4})
		return testEnv{slurm: c, mk: slurmExecutor(t, c)}
	}
	t.Fatalf("no executor %q", name)
	return testEnv{}
}

// slurmExecutor makes Slurm executors on c whose tasks run this test
// binary as the wrapper.
func slurmExecutor(t testing.TB, c *slurmtest.Cluster) func(dir string) cluster.Executor {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return func(dir string) cluster.Executor {
		s, err := cluster.NewSlurm(cluster.SlurmConfig{
			Dir:  dir,
			Task: []string{"/usr/bin/env", taskEnv + "=1", self},
			Env:  c.Env,
			Poll: 100 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func spec(n int, script string) cluster.Spec {
	return cluster.Spec{
		Argv:   []string{"sh", "-c", script},
		Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Shards: n,
		Name:   "test",
	}
}

func forEach(t *testing.T, f func(t *testing.T, env testEnv)) {
	for _, name := range []string{"local", "slurm"} {
		t.Run(name, func(t *testing.T) { f(t, newExec(t, name)) })
	}
}

func TestShardsRunInTheirDirectories(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, env testEnv) {
		mk := env.mk
		seed := t.TempDir()
		if err := os.WriteFile(filepath.Join(seed, "in.txt"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "job")
		ex := mk(dir)
		start := time.Now()
		out, err := ex.Run(context.Background(), &cluster.Job{
			Spec: spec(8, `echo "$DRAGONX_SHARD/$DRAGONX_SHARDS $(cat in.txt) $(basename $TMPDIR)" > out.txt`),
			Seed: seed,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: 8 trivial shards in %v", ex.Name(), time.Since(start).Round(time.Millisecond))
		if len(out.WorkDirs) != 8 || out.Attempts != 8 || out.Reused != 0 {
			t.Fatalf("outcome %+v", out)
		}
		for i, wd := range out.WorkDirs {
			b, err := os.ReadFile(filepath.Join(wd, "out.txt"))
			if want := fmt.Sprintf("%d/8 x tmp\n", i); err != nil || string(b) != want {
				t.Errorf("shard %d wrote %q (%v), want %q", i, b, err, want)
			}
			m, err := cluster.ReadMarker(dir, i)
			if err != nil || m.ExitCode != 0 || m.Attempt != 1 || m.End.Before(m.Start) {
				t.Errorf("marker of shard %d: %+v, %v", i, m, err)
			}
		}
	})
}

func TestFailedShardIsRetried(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, env testEnv) {
		mk := env.mk
		flags := t.TempDir()
		dir := filepath.Join(t.TempDir(), "job")
		// Shard 1 fails on its first attempt only.
		script := fmt.Sprintf(`if [ "$DRAGONX_SHARD" = 1 ] && [ ! -e %[1]s/failed ]; then touch %[1]s/failed; echo first try fails; exit 3; fi; echo $DRAGONX_SHARD > out.txt`, flags)
		out, err := mk(dir).Run(context.Background(), &cluster.Job{Spec: spec(3, script)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Attempts != 4 {
			t.Errorf("%d tasks started, want 4 (3 shards and one retry)", out.Attempts)
		}
		m, err := cluster.ReadMarker(dir, 1)
		if err != nil || m.Attempt != 2 || m.ExitCode != 0 {
			t.Errorf("marker of shard 1: %+v, %v; want attempt 2, exit 0", m, err)
		}
		if b, err := os.ReadFile(cluster.LogPath(dir, 1, 1)); err != nil || !strings.Contains(string(b), "first try fails") {
			t.Errorf("log of attempt 1: %q, %v", b, err)
		}
	})
}

func TestShardThatAlwaysFails(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, env testEnv) {
		mk := env.mk
		dir := filepath.Join(t.TempDir(), "job")
		script := `if [ "$DRAGONX_SHARD" = 2 ]; then echo "boom on shard 2, try $(ls .. | grep -c '^attempt-')"; exit 7; fi; echo ok > out.txt`
		_, err := mk(dir).Run(context.Background(), &cluster.Job{Spec: spec(4, script)})
		if err == nil {
			t.Fatal("the job succeeded")
		}
		msg := err.Error()
		for _, want := range []string{"shard 2 of 4 failed after 3 attempt(s)", "exit status 7", "boom on shard 2", "attempt-3.log"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the error lacks %q:\n%s", want, msg)
			}
		}
		t.Logf("error:\n%s", msg)
	})
}

// TestCancelThenResume cancels a job whose shards 0 and 1 have finished and
// 2 and 3 are running; nothing may be left running or queued. The next run
// reuses shards 0 and 1.
func TestCancelThenResume(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, env testEnv) {
		mk := env.mk
		flags := t.TempDir()
		dir := filepath.Join(t.TempDir(), "job")
		script := fmt.Sprintf(`echo run >> %[1]s/runs-$DRAGONX_SHARD
if [ "$DRAGONX_SHARD" -ge 2 ] && [ ! -e %[1]s/go ]; then echo started > %[1]s/started-$DRAGONX_SHARD; sleep 59.25; fi
echo $DRAGONX_SHARD > out.txt`, flags)
		ex := mk(dir)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := ex.Run(ctx, &cluster.Job{Spec: spec(4, script)})
			errc <- err
		}()
		deadline := time.Now().Add(60 * time.Second)
		for {
			_, e0 := cluster.ReadMarker(dir, 0)
			_, e1 := cluster.ReadMarker(dir, 1)
			_, s2 := os.Stat(filepath.Join(flags, "started-2"))
			_, s3 := os.Stat(filepath.Join(flags, "started-3"))
			if e0 == nil && e1 == nil && s2 == nil && s3 == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("shards 0 and 1 did not finish, or 2 and 3 did not start")
			}
			time.Sleep(20 * time.Millisecond)
		}
		t0 := time.Now()
		cancel()
		err := <-errc
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after cancel: %v", err)
		}
		t.Logf("%s: cancel returned after %v", ex.Name(), time.Since(t0).Round(time.Millisecond))
		if left := sleepers(); len(left) > 0 {
			t.Errorf("still running after cancel: %v", left)
		}
		if env.slurm != nil {
			rows, err := env.slurm.Jobs(context.Background())
			if err != nil || len(rows) > 0 {
				t.Errorf("squeue after cancel: %v, %v; want nothing", rows, err)
			}
		}
		for _, i := range []int{2, 3} {
			if m, err := cluster.ReadMarker(dir, i); err == nil {
				t.Errorf("shard %d has a marker though it was cancelled: %+v", i, m)
			}
		}

		if err := os.WriteFile(filepath.Join(flags, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := mk(dir).Run(context.Background(), &cluster.Job{Spec: spec(4, script)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Reused != 2 || out.Attempts != 2 {
			t.Errorf("second run: reused %d, started %d; want 2 and 2", out.Reused, out.Attempts)
		}
		for i := range 4 {
			b, _ := os.ReadFile(filepath.Join(flags, fmt.Sprintf("runs-%d", i)))
			want := 1
			if i >= 2 {
				want = 2
			}
			if got := strings.Count(string(b), "run"); got != want {
				t.Errorf("shard %d ran %d times, want %d", i, got, want)
			}
			if b, err := os.ReadFile(filepath.Join(out.WorkDirs[i], "out.txt")); err != nil || string(b) != fmt.Sprintf("%d\n", i) {
				t.Errorf("shard %d: %q, %v", i, b, err)
			}
		}
	})
}

// sleepers lists processes running `sleep 59.25` (the test's own tasks; the
// command line is unique to this test).
func sleepers() []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || string(b) != "sleep\x0059.25\x00" {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil {
			if f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		out = append(out, e.Name())
	}
	return out
}

// TestSlurmSubmitError: sbatch's refusal fails the job with sbatch's words.
func TestSlurmSubmitError(t *testing.T) {
	t.Parallel()
	c := slurmtest.StartT(t, slurmtest.Options{})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ex, err := cluster.NewSlurm(cluster.SlurmConfig{
		Dir:       filepath.Join(t.TempDir(), "job"),
		Partition: "nope",
		Task:      []string{"/usr/bin/env", taskEnv + "=1", self},
		Env:       c.Env,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ex.Run(context.Background(), &cluster.Job{Spec: spec(2, "true")})
	if err == nil || !strings.Contains(err.Error(), "submitting the job array") || !strings.Contains(err.Error(), "invalid partition") {
		t.Fatalf("error %v; want sbatch's refusal of the partition", err)
	}
	if rows, err := c.Jobs(context.Background()); err != nil || len(rows) > 0 {
		t.Errorf("squeue: %v, %v", rows, err)
	}
}

// TestSlurmTaskCancelledOutside: a task scancelled by someone else fails
// its shard (killed, or lost without a marker); with no retry left the job
// fails saying what Slurm knows of it.
func TestSlurmTaskCancelledOutside(t *testing.T) {
	t.Parallel()
	c := slurmtest.StartT(t, slurmtest.Options{OverSubscribe: 4})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ex, err := cluster.NewSlurm(cluster.SlurmConfig{
		Dir:         filepath.Join(t.TempDir(), "job"),
		Task:        []string{"/usr/bin/env", taskEnv + "=1", self},
		Env:         c.Env,
		MaxAttempts: 1,
		Poll:        100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := ex.Run(context.Background(), &cluster.Job{Spec: spec(2, `if [ "$DRAGONX_SHARD" = 1 ]; then exec sleep 58.75; fi`)})
		errc <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		rows, err := c.Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 && strings.HasSuffix(rows[0], "_1 RUNNING") {
			id, _, _ := strings.Cut(rows[0], " ")
			if _, err := c.Command(ctx, "scancel", id); err != nil {
				t.Fatal(err)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("shard 1 does not run: %v", rows)
		}
		time.Sleep(20 * time.Millisecond)
	}
	err = <-errc
	if err == nil {
		t.Fatal("the job succeeded")
	}
	// The task's shell may die of scancel's SIGTERM before the wrapper
	// does (then its marker says so) or after (then there is none).
	for _, want := range []string{"shard 1 of 2 failed after 1 attempt(s)", "Slurm says CANCELLED"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	t.Logf("error: %v", err)
}

// TestSharedFilesAreReadInPlace: a job's Shared directory is copied once
// into the work directory, where every task reads it by path; it is not
// copied into the working directories, and a second run replaces it.
func TestSharedFilesAreReadInPlace(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "job")
	for _, word := range []string{"first", "second"} {
		shared := t.TempDir()
		for i := range 3 {
			if err := os.WriteFile(filepath.Join(shared, fmt.Sprintf("in-%d.txt", i)), []byte(fmt.Sprintf("%s %d\n", word, i)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		script := fmt.Sprintf(`cat %s/in-$DRAGONX_SHARD.txt > out.txt; ls > ls.txt`, cluster.SharedDir(dir))
		ex := cluster.NewLocal(cluster.LocalConfig{Dir: dir, Parallelism: 3})
		// A new command each time, so that no shard is reused.
		out, err := ex.Run(context.Background(), &cluster.Job{Spec: spec(3, script+"; : "+word), Shared: shared})
		if err != nil {
			t.Fatal(err)
		}
		for i, wd := range out.WorkDirs {
			b, err := os.ReadFile(filepath.Join(wd, "out.txt"))
			if want := fmt.Sprintf("%s %d\n", word, i); err != nil || string(b) != want {
				t.Errorf("%s run: shard %d read %q (%v), want %q", word, i, b, err, want)
			}
			if b, _ := os.ReadFile(filepath.Join(wd, "ls.txt")); string(b) != "out.txt\n" && string(b) != "ls.txt\nout.txt\n" {
				t.Errorf("%s run: shard %d's working directory holds %q", word, i, b)
			}
		}
	}
}

// TestPassEnv: a variable named in PassEnv comes from the wrapper's own
// environment (on a node: what Slurm set), others do not.
func TestPassEnv(t *testing.T) {
	t.Setenv("DRAGONX_TEST_PASSED", "from the node")
	t.Setenv("DRAGONX_TEST_NOT_PASSED", "leak")
	dir := filepath.Join(t.TempDir(), "job")
	s := spec(1, `echo "$DRAGONX_TEST_PASSED|$DRAGONX_TEST_NOT_PASSED|${DRAGONX_TEST_UNSET-unset}" > out.txt`)
	s.PassEnv = []string{"DRAGONX_TEST_PASSED", "DRAGONX_TEST_UNSET"}
	out, err := cluster.NewLocal(cluster.LocalConfig{Dir: dir}).Run(context.Background(), &cluster.Job{Spec: s})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out.WorkDirs[0], "out.txt")); err != nil || string(b) != "from the node||unset\n" {
		t.Errorf("the task saw %q (%v)", b, err)
	}
}
