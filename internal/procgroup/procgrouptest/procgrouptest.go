// Package procgrouptest finds live processes, for the tests of package
// procgroup and of the stages that run commands through it: they check that
// nothing of a killed run is left. It reads /proc: on systems without it, Live fails.
package procgrouptest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Proc is one process.
type Proc struct {
	Pid, PPid, Pgid int
	// State is the one-letter state of /proc/PID/stat ('R', 'S', 'Z', ...).
	State byte
	// Cmdline is the arguments joined with spaces.
	Cmdline string
}

func (p Proc) String() string {
	return fmt.Sprintf("pid %d (ppid %d, group %d, state %c): %s", p.Pid, p.PPid, p.Pgid, p.State, p.Cmdline)
}

// Live returns the processes that match and are not zombies (a zombie has
// ended; only its exit status waits for its parent).
func Live(match func(Proc) bool) ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, ok := read(pid)
		if ok && p.State != 'Z' && p.State != 'X' && match(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// read reads one process; false when it is gone or unreadable.
func read(pid int) (Proc, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Proc{}, false
	}
	// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return Proc{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return Proc{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return Proc{}, false
	}
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	cmd = bytes.TrimRight(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}), " ")
	return Proc{Pid: pid, PPid: ppid, Pgid: pgid, State: f[0][0], Cmdline: string(cmd)}, true
}

// WithArg matches processes whose command line contains s.
func WithArg(s string) func(Proc) bool {
	return func(p Proc) bool { return strings.Contains(p.Cmdline, s) }
}

// InGroup matches the members of process group pgid.
func InGroup(pgid int) func(Proc) bool {
	return func(p Proc) bool { return p.Pgid == pgid }
}

// WaitNone polls until no live process matches or within has passed, and
// returns the ones left (nil when none).
func WaitNone(match func(Proc) bool, within time.Duration) ([]Proc, error) {
	deadline := time.Now().Add(within)
	for {
		left, err := Live(match)
		if err != nil || len(left) == 0 || time.Now().After(deadline) {
			return left, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
