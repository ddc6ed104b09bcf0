//go:build linux

package procgroup_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dragonx/internal/procgroup"
	"dragonx/internal/procgroup/procgrouptest"
)

// gone is how long a killed group may take to disappear.
const gone = 5 * time.Second

var marks int

// marker returns a sleep duration unique to this test ("1000.PID0N"), to
// find its processes by their arguments.
func marker(t *testing.T) string {
	marks++
	return fmt.Sprintf("1000.%d0%d", os.Getpid(), marks)
}

// pipeline is a shell pipeline whose sleep is a grandchild of the supervisor.
func pipeline(mark string) []string {
	return []string{"sh", "-c", "sleep " + mark + " | cat; :"}
}

// isSleep matches the sleep of a test's pipeline (not the shell or the
// supervisor, whose arguments hold the script).
func isSleep(mark string) func(procgrouptest.Proc) bool {
	return func(p procgrouptest.Proc) bool { return p.Cmdline == "sleep "+mark }
}

func assertNoneLeft(t *testing.T, mark string, pgid int) {
	t.Helper()
	left, err := procgrouptest.WaitNone(func(p procgrouptest.Proc) bool {
		return (pgid != 0 && p.Pgid == pgid) || strings.Contains(p.Cmdline, mark)
	}, gone)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		syscall.Kill(p.Pid, syscall.SIGKILL)
		t.Errorf("left running: %v", p)
	}
}

func waitStarted(t *testing.T, mark string) {
	t.Helper()
	deadline := time.Now().Add(gone)
	for {
		ps, err := procgrouptest.Live(isSleep(mark))
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sleep never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		script string
		code   int
		sig    syscall.Signal
	}{
		{"exit 0", 0, 0},
		{"echo out; echo err >&2; exit 3", 3, 0},
		{"kill -TERM $$", -1, syscall.SIGTERM},
		{"kill -KILL $$", -1, syscall.SIGKILL},
	} {
		t.Run(tc.script, func(t *testing.T) {
			c := procgroup.Command("sh", "-c", tc.script)
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			err := c.Wait()
			var ee *procgroup.ExitError
			switch {
			case tc.code == 0 && err != nil:
				t.Fatalf("Wait: %v, want nil", err)
			case tc.code == 0:
			case !errors.As(err, &ee):
				t.Fatalf("Wait: %v, want an ExitError", err)
			case ee.Code != tc.code || ee.Signal != tc.sig:
				t.Fatalf("Wait: code %d signal %v, want %d %v", ee.Code, ee.Signal, tc.code, tc.sig)
			case tc.sig != 0 && ee.Status() != 128+int(tc.sig), tc.sig == 0 && ee.Status() != tc.code:
				t.Fatalf("Status() = %d for code %d signal %v", ee.Status(), tc.code, tc.sig)
			}
			if strings.Contains(tc.script, "echo") && (out.String() != "out\n" || errb.String() != "err\n") {
				t.Errorf("stdout %q stderr %q, want \"out\\n\" \"err\\n\"", out.String(), errb.String())
			}
		})
	}
}

func TestEnvDirAndStdin(t *testing.T) {
	dir := t.TempDir()
	c := procgroup.Command("sh", "-c", `read x; echo "$x $V $(pwd) ${DRAGONX_PROCGROUP_PARENT:-unset}"`)
	c.Dir = dir
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "V=v"}
	c.Stdin = strings.NewReader("in\n")
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if want := "in v " + dir + " unset\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

func TestStartError(t *testing.T) {
	c := procgroup.Command("/nonexistent/program")
	err := c.Start()
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/program") {
		t.Fatalf("Start: %v, want an error naming the program", err)
	}
}

func TestSignalReachesTheGroup(t *testing.T) {
	mark := marker(t)
	c := procgroup.Command(pipeline(mark)...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitStarted(t, mark)
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err == nil {
		t.Error("Wait: nil after SIGTERM")
	}
	assertNoneLeft(t, mark, c.Pid())
}

// TestSignalCommand: SIGINT sent to the command reaches the shell alone (its
// pipeline goes on); sent to the group, it reaches the pipeline too.
func TestSignalCommand(t *testing.T) {
	mark := marker(t)
	c := procgroup.Command("sh", "-c", "trap 'echo got INT; exit 7' INT; sleep "+mark+" | cat")
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitStarted(t, mark)
	if err := c.SignalCommand(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if ps, _ := procgrouptest.Live(isSleep(mark)); len(ps) != 1 {
		t.Errorf("after SIGINT to the command, %d sleeps run, want 1", len(ps))
	}
	if err := c.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var ee *procgroup.ExitError
	if err := c.Wait(); !errors.As(err, &ee) || ee.Code != 7 {
		t.Fatalf("Wait: %v, want exit status 7", err)
	}
	if out.String() != "got INT\n" {
		t.Errorf("stdout %q", out.String())
	}
	assertNoneLeft(t, mark, c.Pid())
}

func TestKill(t *testing.T) {
	mark := marker(t)
	// The shell ignores SIGTERM: only Kill ends it.
	c := procgroup.Command("sh", "-c", "trap '' TERM; sleep "+mark+" | cat; :")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitStarted(t, mark)
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	var ee *procgroup.ExitError
	if err := c.Wait(); !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
		t.Errorf("Wait: %v, want killed by SIGKILL", err)
	}
	assertNoneLeft(t, mark, c.Pid())
}

// TestLeftoversOfAFinishedCommand: a background job of a shell that exited
// ends with it.
func TestLeftoversOfAFinishedCommand(t *testing.T) {
	mark := marker(t)
	c := procgroup.Command("sh", "-c", "sleep "+mark+" >/dev/null & exit 0")
	var out bytes.Buffer
	c.Stdout = &out // a pipe: Wait would hang while the sleep held it
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	assertNoneLeft(t, mark, c.Pid())
}

// TestParentKilled is the point of the package: a program that runs a
// pipeline is killed with SIGKILL, and no process of the pipeline is left.
func TestParentKilled(t *testing.T) {
	mark := marker(t)
	parent := exec.Command(os.Args[0], "-test.run=^TestHelperParent$")
	parent.Env = append(os.Environ(), "PROCGROUP_TEST_PARENT="+mark)
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	pgid, perr := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "group "))
	if err != nil || perr != nil {
		t.Fatalf("the helper said %q (%v)", line, err)
	}
	waitStarted(t, mark)
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	parent.Wait()
	assertNoneLeft(t, mark, pgid)
}

// TestHelperParent is the program TestParentKilled kills.
func TestHelperParent(t *testing.T) {
	mark := os.Getenv("PROCGROUP_TEST_PARENT")
	if mark == "" {
		t.Skip("run by TestParentKilled")
	}
	c := procgroup.Command(pipeline(mark)...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("group %d\n", c.Pid())
	c.Wait()
}

// TestStop: a command that ignores the polite signal is killed after the
// grace period; one that obeys ends with it.
func TestStop(t *testing.T) {
	for _, c := range []struct {
		script string
		sig    syscall.Signal
		late   bool
	}{
		{"sleep %s | cat", syscall.SIGTERM, false},
		{"trap '' TERM; sleep %s | cat", syscall.SIGKILL, true},
	} {
		mark := marker(t)
		cmd := procgroup.Command("sh", "-c", fmt.Sprintf(c.script, mark))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitStarted(t, mark)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		const grace = 300 * time.Millisecond
		start := time.Now()
		err := cmd.Stop(done, syscall.SIGTERM, true, grace)
		var ee *procgroup.ExitError
		if !errors.As(err, &ee) || ee.Signal != c.sig {
			t.Errorf("%q: Stop: %v, want killed by %v", c.script, err, c.sig)
		}
		if late := time.Since(start) >= grace; late != c.late {
			t.Errorf("%q: Stop took %v with a grace of %v", c.script, time.Since(start), grace)
		}
		assertNoneLeft(t, mark, cmd.Pid())
	}
}

// TestEscapedProcessDoesNotHangWait: a process that leaves the group
// (setsid) survives it, but Wait returns although it holds the output pipe.
func TestEscapedProcessDoesNotHangWait(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	mark := marker(t)
	c := procgroup.Command("sh", "-c", "setsid sleep "+mark+" & exit 0")
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ps, _ := procgrouptest.Live(isSleep(mark))
		for _, p := range ps {
			syscall.Kill(p.Pid, syscall.SIGKILL)
		}
	}()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Wait: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Wait hangs on the pipe an escaped process holds")
	}
}
