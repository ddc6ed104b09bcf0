//go:build unix && !linux

package procgroup

import "syscall"

// selfExe: none; os.Executable finds the executable.
const selfExe = ""

// parentDeathSignal: there is no Pdeathsig here, only the lifeline; the
// signal is caught and, as on Linux, acted on only when the parent is gone.
const parentDeathSignal = syscall.SIGUSR2

func supervisorAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func commandAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// groupAlive says whether a process of group pgid can still be signalled
// (a zombie counts until it is reaped).
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
