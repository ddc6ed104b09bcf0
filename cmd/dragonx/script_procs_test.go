package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"dragonx/internal/procgroup/procgrouptest"
)

var procMarks atomic.Int64

// procsCmd is the script command
//
//	procs mark | some | none [SECONDS]
//
// mark sets $PROCMARK to a number unique to this test process ("1000.PID0N"),
// a sleep duration that finds a script's processes: the processes whose
// arguments are exactly "sleep $PROCMARK". some waits until one runs; none
// until none is left (at most SECONDS, default 5), and kills and names those
// left.
func procsCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: procs mark | some | none [SECONDS]")
	}
	if args[0] == "mark" {
		ts.Setenv("PROCMARK", fmt.Sprintf("1000.%d0%d", os.Getpid(), procMarks.Add(1)))
		return
	}
	limit := 5 * time.Second
	if len(args) == 2 {
		var n int
		_, err := fmt.Sscan(args[1], &n)
		ts.Check(err)
		limit = time.Duration(n) * time.Second
	}
	mark := ts.Getenv("PROCMARK")
	if mark == "" {
		ts.Fatalf("procs %s before procs mark", args[0])
	}
	isSleep := func(p procgrouptest.Proc) bool { return p.Cmdline == "sleep "+mark }
	switch args[0] {
	case "some":
		deadline := time.Now().Add(limit)
		for {
			ps, err := procgrouptest.Live(isSleep)
			ts.Check(err)
			if len(ps) > 0 {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("no process runs sleep %s after %s", mark, limit)
			}
			time.Sleep(20 * time.Millisecond)
		}
	case "none":
		left, err := procgrouptest.WaitNone(isSleep, limit)
		ts.Check(err)
		for _, p := range left {
			syscall.Kill(p.Pid, syscall.SIGKILL)
			ts.Logf("left running: %v", p)
		}
		if len(left) > 0 {
			ts.Fatalf("%d process(es) of the killed run still ran after %s", len(left), limit)
		}
	default:
		ts.Fatalf("usage: procs mark | some | none [SECONDS]")
	}
}
