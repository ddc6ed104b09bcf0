//go:build unix

package procgroup

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// init turns this process into a supervisor when it was started as one
// (Cmd.Start runs the executable again with the marker argument): it never
// returns then.
func init() {
	if len(os.Args) > 2 && os.Args[1] == marker && os.Args[2] == "--" {
		os.Exit(supervise(os.Args[3:]))
	}
}

// supervise runs argv in a new process group and reports on the status pipe;
// it returns its own exit status.
func supervise(argv []string) int {
	syscall.CloseOnExec(fdLifeline)
	syscall.CloseOnExec(fdStatus)
	lifeline := os.NewFile(fdLifeline, "lifeline")
	status := os.NewFile(fdStatus, "status")
	report := func(format string, a ...any) {
		// One line: a start error may hold newlines.
		msg := strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " ")
		fmt.Fprintln(status, msg)
	}
	if len(argv) == 0 || lifeline == nil || status == nil {
		fmt.Fprintln(os.Stderr, "procgroup: the supervisor is started by package procgroup, with a command")
		return 2
	}
	parent, _ := strconv.Atoi(os.Getenv(envParent))
	// Catch the signals before the command exists, so that none is lost.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, parentDeathSignal)
	if parent != 0 && os.Getppid() != parent {
		report("error the program that started %q is gone", argv[0])
		return 1
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = withoutVar(os.Environ(), envParent)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = commandAttr()
	if err := cmd.Start(); err != nil {
		report("error %v", err)
		return 127
	}
	pgid := cmd.Process.Pid
	report("started %d", pgid)
	killGroup := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	// The lifeline: requests from the program, then EOF when the program
	// is gone or called Kill.
	requests := make(chan request)
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		r := bufio.NewReader(lifeline)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if req, ok := parseRequest(line); ok {
				requests <- req
			}
		}
	}()
	for {
		select {
		case <-done:
			// Whatever the command left in its group (a shell's
			// background jobs) ends with it, before Wait returns.
			killGroup()
			awaitGroupGone(pgid, groupGoneWait)
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				report("signal %d", int(ws.Signal()))
				return 128 + int(ws.Signal())
			}
			report("exit %d", ws.ExitStatus())
			return ws.ExitStatus()
		case <-gone:
			killGroup()
			gone = nil
		case req := <-requests:
			target := -pgid
			if !req.group {
				target = pgid
			}
			_ = syscall.Kill(target, req.sig)
		case s := <-sigs:
			sig := s.(syscall.Signal)
			if sig == parentDeathSignal {
				if os.Getppid() != parent {
					killGroup()
				}
				continue
			}
			_ = syscall.Kill(-pgid, sig)
		}
	}
}

// groupGoneWait bounds how long the supervisor waits, after killing what
// the command left in its group, for the kernel to take those processes
// down (SIGKILL is delivered asynchronously).
const groupGoneWait = 5 * time.Second

// awaitGroupGone polls until no process of the group pgid is running
// (groupAlive) or max has passed.
func awaitGroupGone(pgid int, max time.Duration) {
	deadline := time.Now().Add(max)
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// request is one line of the lifeline: "group SIG" or "command SIG".
type request struct {
	group bool
	sig   syscall.Signal
}

func parseRequest(line string) (request, bool) {
	who, n, _ := strings.Cut(strings.TrimSpace(line), " ")
	sig, err := strconv.Atoi(n)
	if err != nil || sig <= 0 || (who != "group" && who != "command") {
		return request{}, false
	}
	return request{group: who == "group", sig: syscall.Signal(sig)}, true
}

// withoutVar returns env without the variable name.
func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// selfPath is the executable to start as the supervisor.
func selfPath() (string, error) {
	if p := selfExe; p != "" {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return os.Executable()
}
