package procgroup

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// selfExe is this executable even after its file was replaced (make build
// during a run).
const selfExe = "/proc/self/exe"

// parentDeathSignal is the supervisor's Pdeathsig. It is not a forwarded
// signal: the supervisor checks getppid when it comes.
const parentDeathSignal = syscall.SIGUSR2

// supervisorAttr: its own process group (a Ctrl-C on the terminal reaches
// the stage once, through dragonx), and Pdeathsig as a second trigger beside
// the lifeline. Go's fork checks getppid after setting Pdeathsig and signals
// the child when the parent is already gone.
func supervisorAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: parentDeathSignal}
}

// commandAttr: a new process group, and SIGKILL to the command should the
// supervisor itself be killed.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// groupAlive says whether a process of group pgid is still running: a
// zombie, dead and waiting for its new parent to reap it, does not count.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			return true
		}
	}
	return false
}
