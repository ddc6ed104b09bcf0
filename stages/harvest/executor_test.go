package harvest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dragonx/stages"
	"dragonx/stages/cluster"
	"dragonx/stages/cluster/slurmtest"
	"dragonx/stages/job"
)

// The test binary plays dragonx for the shard tasks: `BINARY stage-job
// FILE` serves a harvest job (the runner registered by package harvest),
// and with taskEnv set it is the Slurm tasks' wrapper (`dragonx
// shard-task`).
const taskEnv = "DRAGONX_HARVEST_TEST_TASK"

func TestMain(m *testing.M) {
	if os.Getenv(taskEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		code := cluster.TaskMain(ctx, os.Args[1:], os.Stderr)
		stop()
		os.Exit(code)
	}
	if len(os.Args) == 3 && os.Args[1] == "stage-job" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		err := job.Serve(ctx, os.Args[2], os.Stdout, os.Stderr)
		stop()
		switch {
		case err == nil:
			os.Exit(0)
		case errors.Is(err, context.Canceled):
			fmt.Fprintln(os.Stderr, "interrupted:", err)
			os.Exit(130)
		default:
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// executorEngine is newEngine whose sharded stages run this test binary as
// dragonx, on c when not nil.
func executorEngine(t testing.TB, c *slurmtest.Cluster) *stages.Engine {
	t.Helper()
	e := newEngine(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e.Cluster = stages.ClusterOptions{
		WorkRoot: filepath.Join(filepath.Dir(e.WorkRoot), "shards"),
		Binary:   self,
		Task:     []string{"/usr/bin/env", taskEnv + "=1", self},
		Poll:     100 * time.Millisecond,
	}
	if c != nil {
		e.Cluster.SlurmEnv = c.Env
	}
	return e
}

const (
	localExecutor = `executor "local" {
    parallelism = 3
  }`
	slurmExecutor = `executor "slurm" {
    partition = "local"
    time      = "10m"
  }`
)

// withExecutor is testdata/harvest.hcl in 3 shards, with an executor block
// (none for "").
func withExecutor(t testing.TB, block string) []byte {
	return experiment(t, "shards    = 2", "shards = 3\n  "+block)
}

var inProcess struct {
	once sync.Once
	out  runOut
}

// baseline is the in-process run of the 3-shard harvest, run once.
func baseline(t *testing.T) runOut {
	t.Helper()
	inProcess.once.Do(func() {
		start := time.Now()
		inProcess.out = runExperiment(t, context.Background(), newEngine(t), withExecutor(t, ""), &testUI{})
		t.Logf("in-process 3-shard harvest: %v", time.Since(start).Round(time.Millisecond))
	})
	if inProcess.out.res.Status != stages.StatusRan {
		t.Fatalf("in-process run: status %s: %v", inProcess.out.res.Status, inProcess.out.res.Err)
	}
	return inProcess.out
}

// checkSame checks that out is the in-process run's result: same key, same
// bytes; and that the shards' work directory is gone.
func checkSame(t *testing.T, what string, eng *stages.Engine, out runOut) {
	t.Helper()
	base := baseline(t)
	if out.res.Status != stages.StatusRan {
		t.Fatalf("%s: status %s: %v\n%s", what, out.res.Status, out.res.Err, out.ui.log())
	}
	if out.res.Key != base.res.Key {
		t.Errorf("%s: key %s, in-process %s: the executor is in the key", what, out.res.Key, base.res.Key)
	}
	sameFiles(t, what+" vs in-process", base.files, out.files)
	if ents, _ := os.ReadDir(eng.Cluster.WorkRoot); len(ents) != 0 {
		t.Errorf("%s: the shards' work directory was not removed: %v", what, ents)
	}
}

// TestHarvestLocalExecutor: with executor "local" the shards are child
// processes (`dragonx stage-job`); the outputs are the in-process run's
// byte for byte, under the same key, and the stage log holds each shard's.
func TestHarvestLocalExecutor(t *testing.T) {
	eng := executorEngine(t, nil)
	start := time.Now()
	out := runExperiment(t, context.Background(), eng, withExecutor(t, localExecutor), &testUI{})
	t.Logf("3-shard harvest on the local executor: %v", time.Since(start).Round(time.Millisecond))
	checkSame(t, "local executor", eng, out)
	log := out.ui.log()
	for _, want := range []string{"3 shards on the local executor", "--- shard 2 (attempt 1", "shard 3/3: ", "searched 7 workloads"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestHarvestSlurm runs the 3-shard harvest as a job array on a real
// one-node Slurm cluster: the in-process run's key and bytes; a second
// run is a cache hit.
func TestHarvestSlurm(t *testing.T) {
	c := slurmtest.StartT(t, slurmtest.Options{OverSubscribe: 4})
	baseline(t)
	eng := executorEngine(t, c)
	src := withExecutor(t, slurmExecutor)
	start := time.Now()
	out := runExperiment(t, context.Background(), eng, src, &testUI{})
	t.Logf("3-shard harvest on Slurm: %v", time.Since(start).Round(time.Millisecond))
	checkSame(t, "slurm", eng, out)
	if log := out.ui.log(); !strings.Contains(log, "3 shards on the slurm executor") || !strings.Contains(log, "--- shard 1 (attempt 1") {
		t.Errorf("log:\n%s", log)
	}
	if again := runExperiment(t, context.Background(), eng, src, &testUI{}); again.res.Status != stages.StatusCached {
		t.Errorf("second run: %s", again.res.Status)
	}
}

// TestHarvestExecutorCancelResume runs the shards one at a time, cancels
// the run once shard 0 has finished, checks that nothing is left queued or
// running, and reruns: the finished shard is reused, the others run, and
// the outputs are the in-process run's.
func TestHarvestExecutorCancelResume(t *testing.T) {
	for _, name := range []string{"local", "slurm"} {
		t.Run(name, func(t *testing.T) {
			var c *slurmtest.Cluster
			block := `executor "local" {
    parallelism = 1
  }`
			if name == "slurm" {
				c = slurmtest.StartT(t, slurmtest.Options{OverSubscribe: 4})
				block = strings.Replace(slurmExecutor, "time ", "array_parallelism = 1\n    time ", 1)
			}
			baseline(t)
			eng := executorEngine(t, c)
			src := withExecutor(t, block)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Cancel once a shard's completion marker says it finished.
			watch := make(chan struct{})
			go func() {
				defer close(watch)
				for ctx.Err() == nil {
					ms, _ := filepath.Glob(filepath.Join(eng.Cluster.WorkRoot, "*", "shard-*", "done.json"))
					for _, m := range ms {
						if b, err := os.ReadFile(m); err == nil && strings.Contains(string(b), `"exit_code":0`) {
							cancel()
							return
						}
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
			first := runExperiment(t, ctx, eng, src, &testUI{})
			cancelled := ctx.Err() != nil
			cancel() // stops the watch if no marker ever appeared
			<-watch
			if first.res.Status != stages.StatusFailed || !cancelled {
				t.Fatalf("cancelled run: status %s (%v), cancelled by a shard's marker: %v", first.res.Status, first.res.Err, cancelled)
			}
			if c != nil {
				if jobs, err := c.Jobs(context.Background()); err != nil || len(jobs) != 0 {
					t.Errorf("after the cancel squeue lists %v (%v)", jobs, err)
				}
			}
			again := runExperiment(t, context.Background(), eng, src, &testUI{})
			log := again.ui.log()
			m := regexp.MustCompile(`shards: (\d) of 3 finished by an earlier run, reused`).FindStringSubmatch(log)
			if m == nil {
				t.Fatalf("the rerun reused no shard:\n%s", log)
			}
			t.Logf("cancelled run: %v; rerun: %s", first.res.Err, m[0])
			reused, _ := strconv.Atoi(m[1])
			if reused < 1 || reused > 2 {
				t.Errorf("%d shards reused, want 1 or 2", reused)
			}
			if want := fmt.Sprintf("(%d reused, %d task(s) started)", reused, 3-reused); !strings.Contains(log, want) {
				t.Errorf("rerun log lacks %q:\n%s", want, log)
			}
			checkSame(t, name+" resumed", eng, again)
		})
	}
}

// BenchmarkHarvestExecutors runs the 3-shard harvest of testdata (7
// workloads, 8 trials each) in-process, on the local executor (3 child
// processes) and on a one-node Slurm cluster (one array), each from an
// empty cache:
//
//	go test -run '^$' -bench HarvestExecutors -benchtime 3x ./stages/harvest/
func BenchmarkHarvestExecutors(b *testing.B) {
	cases := []struct{ name, block string }{{"in-process", ""}, {"local", localExecutor}, {"slurm", slurmExecutor}}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var cl *slurmtest.Cluster
			if c.name == "slurm" {
				cl = slurmtest.StartT(b, slurmtest.Options{OverSubscribe: 4})
				// The first job after a cold start waits for the node's
				// registration: warm the cluster up first.
				runExperiment(b, context.Background(), executorEngine(b, cl), withExecutor(b, c.block), &testUI{})
			}
			src := withExecutor(b, c.block)
			b.ResetTimer()
			for range b.N {
				out := runExperiment(b, context.Background(), executorEngine(b, cl), src, &testUI{})
				if out.res.Status != stages.StatusRan {
					b.Fatalf("status %s: %v", out.res.Status, out.res.Err)
				}
			}
		})
	}
}

// failingBinary writes a script that plays dragonx for the shard tasks but
// fails shard 1 (exit 3, with a message): always, or on its first attempt
// only.
func failingBinary(t *testing.T, always bool) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cond := fmt.Sprintf(`[ ! -e %[1]s/failed ] && touch %[1]s/failed`, dir)
	if always {
		cond = "true"
	}
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$DRAGONX_SHARD\" = 1 ] && %s; then echo 'injected failure of shard 1' >&2; exit 3; fi\nexec %s \"$@\"\n", cond, self)
	p := filepath.Join(dir, "dragonx")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHarvestExecutorRetries: a shard task that fails once is retried and
// the outputs are the in-process run's; one that always fails fails the
// stage, naming the shard, its exit status and its log's last lines.
func TestHarvestExecutorRetries(t *testing.T) {
	for _, name := range []string{"local", "slurm"} {
		t.Run(name, func(t *testing.T) {
			var c *slurmtest.Cluster
			block := localExecutor
			if name == "slurm" {
				c = slurmtest.StartT(t, slurmtest.Options{OverSubscribe: 4})
				block = slurmExecutor
			}
			baseline(t)
			eng := executorEngine(t, c)
			eng.Cluster.Binary = failingBinary(t, false)
			out := runExperiment(t, context.Background(), eng, withExecutor(t, block), &testUI{})
			checkSame(t, name+" retried", eng, out)
			if log := out.ui.log(); !strings.Contains(log, "shard 1 failed: exit status 3") || !strings.Contains(log, "retrying") || !strings.Contains(log, "(0 reused, 4 task(s) started)") {
				t.Errorf("log:\n%s", log)
			}

			eng = executorEngine(t, c)
			eng.Cluster.Binary = failingBinary(t, true)
			out = runExperiment(t, context.Background(), eng, withExecutor(t, strings.Replace(block, "{", "{\n    retries = 1", 1)), &testUI{})
			if out.res.Status != stages.StatusFailed {
				t.Fatalf("always failing: status %s", out.res.Status)
			}
			for _, want := range []string{"shard 1 of 3 failed after 2 attempt(s)", "exit status 3", "injected failure of shard 1"} {
				if !strings.Contains(out.res.Err.Error(), want) {
					t.Errorf("the error lacks %q: %v", want, out.res.Err)
				}
			}
		})
	}
}
