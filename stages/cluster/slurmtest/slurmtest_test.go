package slurmtest_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dragonx/stages/cluster/slurmtest"
)

// TestClusterRunsAJobAndStops starts a cluster, runs a job array on it,
// leaves a job running, stops the cluster and checks that no job and no
// daemon is left.
func TestClusterRunsAJobAndStops(t *testing.T) {
	if r := slurmtest.SkipReason(); r != "" {
		t.Skip(r)
	}
	dir, err := os.MkdirTemp("", "slurmtest-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	t0 := time.Now()
	c, err := slurmtest.Start(dir, slurmtest.Options{OverSubscribe: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cold start: %v (ports %d, %d)", time.Since(t0).Round(time.Millisecond), c.CtldPort, c.SlurmdPort)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	work := t.TempDir()
	t1 := time.Now()
	if _, err := c.Command(ctx, "sbatch", "--array=0-3", "--chdir="+work, "--output=/dev/null",
		"--wrap", "echo $SLURM_ARRAY_TASK_ID > out_$SLURM_ARRAY_TASK_ID.tmp && mv out_$SLURM_ARRAY_TASK_ID.tmp out_$SLURM_ARRAY_TASK_ID.txt"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		want := strconv.Itoa(i)
		for {
			b, err := os.ReadFile(filepath.Join(work, "out_"+want+".txt"))
			if err == nil {
				if got := strings.TrimSpace(string(b)); got != want {
					t.Fatalf("task %d wrote %q", i, got)
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("task %d did not write its file: %v", i, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("array of 4 trivial tasks, submit to all files written: %v", time.Since(t1).Round(time.Millisecond))
	if _, err := c.Command(ctx, "sbatch", "--chdir="+work, "--output=/dev/null", "--wrap", "sleep 300"); err != nil {
		t.Fatal(err)
	}
	for {
		jobs, err := c.Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 1 && strings.HasSuffix(jobs[0], " RUNNING") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the sleep job does not run: %v", jobs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pids := c.PIDs()
	if len(pids) != 3 {
		t.Fatalf("PIDs() = %v, want 3 daemons", pids)
	}
	t2 := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stop with a running job: %v", time.Since(t2).Round(time.Millisecond))
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("%s (pid %d) is still alive after Stop", name, pid)
		}
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	// The job's processes (slurmstepd's children) are gone too.
	if left := processesIn(work); len(left) > 0 {
		t.Errorf("processes still running in the job's directory after Stop: %v", left)
	}
}

// processesIn lists the PIDs whose current directory is dir.
func processesIn(dir string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
				// A zombie waits for its parent; it runs nothing.
				if f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:])); len(f) > 0 && f[0] == "Z" {
					continue
				}
			}
			pids = append(pids, pid)
		}
	}
	return pids
}
