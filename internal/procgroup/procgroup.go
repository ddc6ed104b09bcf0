//go:build unix

// Package procgroup runs a command in a process group of its own, owned by a
// small supervisor process that kills the whole group when the program that
// started it exits in any way, kill -9 included. Stages run their commands
// (exec) and jobs (sft, rl, bench in dragonx-torch) through it, so that no
// process of a stage outlives the `dragonx run` that started it.
//
// # Why a supervisor
//
// A process group is the unit to kill: `sh -c "sleep 1000 | cat"` is three
// processes, and only the group reaches them all. Nothing in the kernel kills
// a group when the program that made it dies:
//
//   - Pdeathsig (Linux) signals one process, the direct child, when its
//     parent dies; the grandchildren in its group (the sleep) keep running.
//   - PR_SET_CHILD_SUBREAPER makes orphans ours while we live; once we are
//     killed they pass to init, still running.
//   - A PID namespace dies with its first process, but creating one needs
//     privileges or user namespaces, which many machines disable.
//
// So a process sits between the program and the command: the running
// executable itself, started again with a marker argument. Any binary that
// links this package can serve (its init recognises the marker and never
// returns), so dragonx, dragonx-torch and test binaries need no hidden
// command of their own. The supervisor starts the command in a new process
// group and holds the read end of a pipe, the lifeline, whose write end only
// the program holds. When the program exits, however it exits, the kernel
// closes the write end; the supervisor reads EOF, kills the group with
// SIGKILL and exits. There is no race with an early death: a pipe whose
// writer is already gone reads EOF at once. On Linux the supervisor also gets
// Pdeathsig, a second trigger; it acts on it only after checking getppid (the
// signal also comes when the parent's thread that started it ends, while the
// parent lives on), and it starts nothing when its parent is already gone.
//
// The program also writes its requests on the lifeline, one a line: Signal
// ("group 15") signals the group, SignalCommand ("command 2") the command
// alone; Cmd.Kill closes the lifeline, and the group is killed as on the
// program's death. SIGINT, SIGTERM and SIGHUP sent to the supervisor itself
// (by a person with kill) go to the group. When the command itself ends, the group's
// other members (background jobs of a shell) are killed too, so that nothing
// of a finished stage keeps running or holds its output pipes. The
// supervisor reports the command's pid and how it ended on a status pipe, so
// that Wait returns the command's own exit status or signal.
//
// Killing the supervisor itself with SIGKILL leaves only its direct child
// killed (Pdeathsig): nothing in dragonx does that.
package procgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// marker is the first argument that makes a binary linking this package a
// supervisor; envParent carries the pid of the program that started it.
const (
	marker    = "__dragonx-procgroup-supervisor"
	envParent = "DRAGONX_PROCGROUP_PARENT"
)

// The supervisor's extra file descriptors (exec.Cmd.ExtraFiles).
const (
	fdLifeline = 3 // read end; EOF when the program is gone
	fdStatus   = 4 // write end; "started PID", then "exit N" or "signal N"
)

// pipeDelay is how long Wait waits for the output pipes to close once the
// supervisor has exited.
const pipeDelay = 2 * time.Second

// Cmd is a command that runs in its own process group under a supervisor.
// Set the exported fields before Start, as with exec.Cmd.
type Cmd struct {
	// Argv is the command and its arguments; Argv[0] is looked up in PATH
	// (of Env, when set) as exec.Command does.
	Argv []string
	// Dir is the working directory ("" means the caller's).
	Dir string
	// Env is the command's environment; nil means the caller's.
	Env []string
	// Stdin, Stdout and Stderr are as in exec.Cmd (nil: /dev/null).
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	sup      *exec.Cmd
	mu       sync.Mutex // orders requests and Kill on the lifeline
	lifeline *os.File   // write end, held until Wait or Kill
	status   *bufio.Reader
	statusR  *os.File
	pid      int
}

// Command returns a Cmd that runs argv.
func Command(argv ...string) *Cmd { return &Cmd{Argv: argv} }

// supervisor returns the supervisor's exec.Cmd, built once.
func (c *Cmd) supervisor() (*exec.Cmd, error) {
	if c.sup != nil {
		return c.sup, nil
	}
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return nil, errors.New("procgroup: no command")
	}
	self, err := selfPath()
	if err != nil {
		return nil, fmt.Errorf("procgroup: finding this executable to supervise %q: %w", c.Argv[0], err)
	}
	sup := exec.Command(self, append([]string{marker, "--"}, c.Argv...)...)
	sup.SysProcAttr = supervisorAttr()
	// A process that left the group (setsid) may still hold the output
	// pipes after the group is gone: Wait does not wait for it long.
	sup.WaitDelay = pipeDelay
	c.sup = sup
	return sup, nil
}

// StdoutPipe returns a pipe connected to the command's standard output, as
// exec.Cmd.StdoutPipe.
func (c *Cmd) StdoutPipe() (io.ReadCloser, error) {
	sup, err := c.supervisor()
	if err != nil {
		return nil, err
	}
	return sup.StdoutPipe()
}

// StderrPipe returns a pipe connected to the command's standard error, as
// exec.Cmd.StderrPipe.
func (c *Cmd) StderrPipe() (io.ReadCloser, error) {
	sup, err := c.supervisor()
	if err != nil {
		return nil, err
	}
	return sup.StderrPipe()
}

// Start starts the supervisor and waits until it has started the command
// (or failed to: that is Start's error, as with exec.Cmd).
func (c *Cmd) Start() error {
	sup, err := c.supervisor()
	if err != nil {
		return err
	}
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	sup.Dir = c.Dir
	sup.Env = append(append([]string(nil), env...), envParent+"="+strconv.Itoa(os.Getpid()))
	sup.Stdin = c.Stdin
	if sup.Stdout == nil { // else StdoutPipe set it
		sup.Stdout = c.Stdout
	}
	if sup.Stderr == nil {
		sup.Stderr = c.Stderr
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("procgroup: %w", err)
	}
	statR, statW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		return fmt.Errorf("procgroup: %w", err)
	}
	sup.ExtraFiles = []*os.File{lifeR, statW}
	err = sup.Start()
	lifeR.Close()
	statW.Close()
	if err != nil {
		lifeW.Close()
		statR.Close()
		return fmt.Errorf("procgroup: starting the supervisor of %q: %w", c.Argv[0], err)
	}
	c.lifeline, c.statusR, c.status = lifeW, statR, bufio.NewReader(statR)
	line, rerr := c.status.ReadString('\n')
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	if word == "started" {
		if c.pid, err = strconv.Atoi(rest); err == nil {
			return nil
		}
	}
	// The command did not start: the supervisor has exited (or will).
	c.lifeline.Close()
	_ = sup.Wait()
	c.statusR.Close()
	if word == "error" {
		return errors.New(rest)
	}
	return fmt.Errorf("procgroup: the supervisor of %q ended before starting it (%q, %v)", c.Argv[0], line, rerr)
}

// Pid is the command's process id, which is also its process group id.
func (c *Cmd) Pid() int { return c.pid }

// Signal sends sig to every process of the command's group.
func (c *Cmd) Signal(sig syscall.Signal) error { return c.request("group", sig) }

// SignalCommand sends sig to the command alone (a program that saves its
// state on SIGINT, while its own children finish their work).
func (c *Cmd) SignalCommand(sig syscall.Signal) error { return c.request("command", sig) }

// request asks the supervisor, on the lifeline, to signal who.
func (c *Cmd) request(who string, sig syscall.Signal) error {
	if c.lifeline == nil {
		return errors.New("procgroup: not started")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := fmt.Fprintf(c.lifeline, "%s %d\n", who, int(sig)); err != nil {
		return fmt.Errorf("procgroup: signalling %q: %w", c.Argv[0], err)
	}
	return nil
}

// Kill kills every process of the command's group with SIGKILL, as if the
// program had died. Wait still has to be called.
func (c *Cmd) Kill() error {
	if c.lifeline == nil {
		return errors.New("procgroup: not started")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lifeline.Close()
}

// Stop ends the command politely: it sends sig (to the whole group, or to
// the command alone), waits up to grace for done (where the caller's Wait
// reports), then kills the group. It returns what Wait reported.
func (c *Cmd) Stop(done <-chan error, sig syscall.Signal, wholeGroup bool, grace time.Duration) error {
	if wholeGroup {
		_ = c.Signal(sig)
	} else {
		_ = c.SignalCommand(sig)
	}
	select {
	case err := <-done:
		return err
	case <-time.After(grace):
		_ = c.Kill()
		return <-done
	}
}

// Wait waits for the command and its supervisor and reports how the command
// ended: nil, an *ExitError, or another error when the supervisor failed.
// When Wait returns, no process of the group is left.
func (c *Cmd) Wait() error {
	if c.sup == nil || c.sup.Process == nil {
		return errors.New("procgroup: not started")
	}
	line, _ := c.status.ReadString('\n')
	werr := c.sup.Wait()
	c.mu.Lock()
	c.lifeline.Close()
	c.mu.Unlock()
	c.statusR.Close()
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	n, err := strconv.Atoi(rest)
	switch {
	case err == nil && word == "exit" && n == 0:
		return nil
	case err == nil && word == "exit":
		return &ExitError{Code: n}
	case err == nil && word == "signal":
		return &ExitError{Code: -1, Signal: syscall.Signal(n)}
	}
	if werr == nil {
		werr = errors.New("no status")
	}
	return fmt.Errorf("procgroup: the supervisor of %q failed: %w", c.Argv[0], werr)
}

// ExitError is a command that did not exit with status 0.
type ExitError struct {
	// Code is the exit status, -1 when a signal ended the command.
	Code int
	// Signal is the signal that ended the command, 0 when it exited.
	Signal syscall.Signal
}

// Signaled reports whether a signal ended the command.
func (e *ExitError) Signaled() bool { return e.Signal != 0 }

// Status is the exit status as a shell reports it: Code, or 128+N for a
// command killed by signal N.
func (e *ExitError) Status() int {
	if e.Signaled() {
		return 128 + int(e.Signal)
	}
	return e.Code
}

func (e *ExitError) Error() string {
	if e.Signaled() {
		return "killed by signal " + e.Signal.String()
	}
	return "exit status " + strconv.Itoa(e.Code)
}
