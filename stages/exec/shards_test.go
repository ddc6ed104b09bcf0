package exec_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/stages"
	"dragonx/stages/cluster"
	"dragonx/stages/cluster/slurmtest"
	_ "dragonx/stages/exec"
)

// The test binary is the Slurm tasks' wrapper (as `dragonx shard-task`)
// when this variable is set.
const taskEnv = "DRAGONX_EXEC_TEST_TASK"

func TestMain(m *testing.M) {
	if os.Getenv(taskEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		code := cluster.TaskMain(ctx, os.Args[1:], os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// shardedExperiment squares 1..20 in 4 shards (shard s takes the lines
// with NR % 4 == s) into one file, and writes a directory of one file per
// shard plus one file every shard writes alike. executor is the stage's
// executor block ("" for none); top the experiment's.
func shardedExperiment(top, executor string, shards int) string {
	return fmt.Sprintf(`
%s
stage "gen" {
  kind    = "exec"
  command = "seq 1 20 > nums.txt"
  outputs = { nums = "nums.txt" }
}

stage "sq" {
  kind    = "exec"
  inputs  = { "in/nums.txt" = stage.gen.out.nums }
  shards  = %d
  command = <<-EOT
    awk -v s=$DRAGONX_SHARD -v n=$DRAGONX_SHARDS 'NR %% n == s { print $1 * $1 }' in/nums.txt > sq.txt
    mkdir -p parts
    echo "shard $DRAGONX_SHARD of $DRAGONX_SHARDS" > parts/p$DRAGONX_SHARD.txt
    echo same > parts/common.txt
  EOT
  outputs = { sq = "sq.txt", parts = "parts" }
  %s
}
`, top, shards, executor)
}

func load(t *testing.T, src string) *stages.Config {
	t.Helper()
	cfg, diags := stages.LoadSource(filepath.Join(t.TempDir(), "exp.hcl"), []byte(src), stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return cfg
}

func engine(t testing.TB, c *slurmtest.Cluster) *stages.Engine {
	t.Helper()
	root := t.TempDir()
	e := &stages.Engine{
		Store:    cache.NewMem(),
		Jobs:     2,
		WorkRoot: filepath.Join(root, "work"),
		OutDir:   filepath.Join(root, "out"),
		Cluster:  stages.ClusterOptions{WorkRoot: filepath.Join(root, "shards")},
	}
	if c != nil {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		e.Cluster.Task = []string{"/usr/bin/env", taskEnv + "=1", self}
		e.Cluster.SlurmEnv = c.Env
		e.Cluster.Poll = 100 * time.Millisecond
	}
	return e
}

func keyOf(t *testing.T, src, stage string) cache.Key {
	t.Helper()
	rep, err := engine(t, nil).Plan(context.Background(), load(t, src), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Addr.Short() == stage {
			return r.Key
		}
	}
	t.Fatalf("no stage %s in the plan", stage)
	return cache.Key{}
}

// standalone is a sharded stage without upstream stages (so that plan
// knows its key before anything runs).
func standalone(top, executor string, shards int) string {
	return fmt.Sprintf(`
%s
stage "sq" {
  kind    = "exec"
  shards  = %d
  command = "seq $DRAGONX_SHARD > out.txt"
  outputs = { out = "out.txt" }
  %s
}
`, top, shards, executor)
}

// TestExecutorIsNotInTheKey: the same stage locally, on Slurm (its own
// block or the experiment's default) has one key; the shard count is in it.
func TestExecutorIsNotInTheKey(t *testing.T) {
	local := keyOf(t, standalone("", "", 4), "sq")
	if local.IsZero() {
		t.Fatal("plan gave no key")
	}
	for _, src := range []string{
		standalone("", `executor "local" { parallelism = 2 }`, 4),
		standalone("", `executor "slurm" {
    partition = "gpu"
    time = "2h"
    cpus_per_task = 8
    gpus_per_task = 1
    array_parallelism = 64
    extra_args = ["--account=abc"]
  }`, 4),
		standalone(`executor "slurm" { partition = "cpu" }`, "", 4),
	} {
		if k := keyOf(t, src, "sq"); k != local {
			t.Errorf("key %s differs from the local key %s for\n%s", k, local, src)
		}
	}
	if k := keyOf(t, standalone("", "", 3), "sq"); k == local {
		t.Error("3 shards and 4 shards have the same key")
	}
}

func TestExecutorBlockDecoded(t *testing.T) {
	cfg := load(t, shardedExperiment(`executor "slurm" {
  partition = "cpu"
  time = "90m"
}`, `executor "slurm" {
    partition = "gpu"
    time = "1h30m15s"
    cpus_per_task = 8
    gpus_per_task = 1
    array_parallelism = 64
    extra_args = ["--account=abc"]
    retries = 1
    work_dir = "scratch"
  }`, 4))
	gen := cfg.ExecutorOf(cfg.Instance(stages.Addr{Name: "gen"}))
	if gen == nil || gen.Partition != "cpu" || gen.Time != "0-01:30:00" {
		t.Errorf("gen's executor (the default): %+v", gen)
	}
	sq := cfg.ExecutorOf(cfg.Instance(stages.Addr{Name: "sq"}))
	want := stages.ExecutorSpec{Type: "slurm", Partition: "gpu", Time: "0-01:30:15", CPUsPerTask: 8, GPUsPerTask: 1,
		ArrayParallelism: 64, ExtraArgs: []string{"--account=abc"}, Retries: 1, WorkDir: filepath.Join(cfg.Dir, "scratch")}
	got := *sq
	got.DeclRange = want.DeclRange
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sq's executor:\n got %+v\nwant %+v", got, want)
	}
}

// TestExecutorPerInstance: a for_each stage's executor may use each.*.
func TestExecutorPerInstance(t *testing.T) {
	cfg := load(t, `
stage "sweep" {
  kind     = "exec"
  for_each = { a = "short", b = "long" }
  shards   = 2
  command  = "echo ${each.key} > out.txt"
  outputs  = { out = "out.txt" }
  executor "slurm" {
    partition = each.value
  }
}
`)
	for key, want := range map[string]string{"a": "short", "b": "long"} {
		inst := cfg.Instance(stages.Addr{Name: "sweep", Key: key, Keyed: true})
		if inst == nil {
			t.Fatalf("no instance %s", key)
		}
		if got := cfg.ExecutorOf(inst); got == nil || got.Partition != want {
			t.Errorf("instance %s: executor %+v, want partition %s", key, got, want)
		}
	}
}

func readOut(t *testing.T, e *stages.Engine, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.OutDir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func run(t *testing.T, e *stages.Engine, src string) (*stages.Report, time.Duration) {
	t.Helper()
	start := time.Now()
	rep, err := e.Run(context.Background(), load(t, src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep, time.Since(start)
}

func result(rep *stages.Report, stage string) *stages.Result {
	for _, r := range rep.Results {
		if r.Addr.Short() == stage {
			return r
		}
	}
	return nil
}

// TestShardedLocalEqualsSlurm runs the sharded stage locally and on a real
// one-node Slurm cluster: same key, byte-identical outputs, merged in shard
// order.
func TestShardedLocalEqualsSlurm(t *testing.T) {
	le := engine(t, nil)
	lrep, ldur := run(t, le, shardedExperiment("", "", 4))
	lres := result(lrep, "sq")
	if lres.Status != stages.StatusRan {
		t.Fatalf("local: %s: %v", lres.Status, lres.Err)
	}
	var want strings.Builder
	for s := range 4 {
		for n := 1; n <= 20; n++ {
			if n%4 == s {
				fmt.Fprintf(&want, "%d\n", n*n)
			}
		}
	}
	if got := readOut(t, le, "sq/sq.txt"); got != want.String() {
		t.Errorf("sq.txt:\n%s\nwant\n%s", got, want.String())
	}
	if got := readOut(t, le, "sq/parts/p2.txt") + readOut(t, le, "sq/parts/common.txt"); got != "shard 2 of 4\nsame\n" {
		t.Errorf("parts: %q", got)
	}
	if ents, _ := os.ReadDir(le.Cluster.WorkRoot); len(ents) != 0 {
		t.Errorf("the shards' work directory was not removed: %v", ents)
	}

	c := slurmtest.StartT(t, slurmtest.Options{OverSubscribe: 4})
	se := engine(t, c)
	src := shardedExperiment("", `executor "slurm" {
    partition = "local"
    time = "10m"
  }`, 4)
	srep, sdur := run(t, se, src)
	sres := result(srep, "sq")
	if sres.Status != stages.StatusRan {
		t.Fatalf("slurm: %s: %v", sres.Status, sres.Err)
	}
	t.Logf("4-shard exec stage (and a 1-stage upstream): local %v, Slurm %v", ldur.Round(time.Millisecond), sdur.Round(time.Millisecond))
	if sres.Key != lres.Key {
		t.Errorf("keys differ: local %s, slurm %s", lres.Key, sres.Key)
	}
	for name, lo := range lres.Outputs {
		if so := sres.Outputs[name]; fmt.Sprint(so) != fmt.Sprint(lo) {
			t.Errorf("output %s differs: local %v, slurm %v", name, lo, so)
		}
	}
	// The Slurm run is a cache hit for the local engine's store and back:
	// a second run on Slurm runs nothing.
	if again, _ := run(t, se, src); result(again, "sq").Status != stages.StatusCached {
		t.Errorf("second Slurm run: %s", result(again, "sq").Status)
	}
}

// TestShardedConflict: two shards writing one path with different bytes
// fail the stage, naming both.
func TestShardedConflict(t *testing.T) {
	src := strings.Replace(shardedExperiment("", "", 3), "echo same > parts/common.txt", "echo $DRAGONX_SHARD > parts/common.txt", 1)
	rep, _ := run(t, engine(t, nil), src)
	res := result(rep, "sq")
	if res.Status != stages.StatusFailed {
		t.Fatalf("status %s, want failed", res.Status)
	}
	if msg := res.Err.Error(); !strings.Contains(msg, "common.txt: shards 0 and 1 wrote different bytes") {
		t.Errorf("error: %v", msg)
	}
}

// TestShardedMissingOutput: a shard that does not create a declared output
// fails the stage, naming the shard.
func TestShardedMissingOutput(t *testing.T) {
	src := strings.Replace(shardedExperiment("", "", 3), "> sq.txt", "> sq.txt; [ $DRAGONX_SHARD = 2 ] && rm sq.txt; true", 1)
	rep, _ := run(t, engine(t, nil), src)
	res := result(rep, "sq")
	if res.Status != stages.StatusFailed || !strings.Contains(res.Err.Error(), "output sq (sq.txt): shard 2 did not create it") {
		t.Fatalf("status %s, error %v", res.Status, res.Err)
	}
}

// TestShardedFailureNamesShard: a shard that always fails fails the stage
// with its number and log tail.
func TestShardedFailureNamesShard(t *testing.T) {
	src := strings.Replace(shardedExperiment("", `executor "local" { retries = 1 }`, 3), "mkdir -p parts", `[ $DRAGONX_SHARD = 1 ] && { echo "no luck for shard 1" >&2; exit 5; }; mkdir -p parts`, 1)
	rep, _ := run(t, engine(t, nil), src)
	res := result(rep, "sq")
	if res.Status != stages.StatusFailed {
		t.Fatalf("status %s", res.Status)
	}
	for _, want := range []string{"shard 1 of 3 failed after 2 attempt(s)", "exit status 5", "no luck for shard 1"} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, res.Err)
		}
	}
}
