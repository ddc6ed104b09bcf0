package procgroup

import "syscall"

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
