// Package slurmtest runs a real one-node Slurm cluster for tests: munged,
// slurmctld and slurmd from Debian's packages (which `make setup` installs),
// as children of the test process, in a temporary directory, with a
// configuration written here.
//
// Each cluster is its own: its own munge key and socket, state, spool and
// logs under its directory, and two free TCP ports (slurmctld's and
// slurmd's) picked when it starts, so that clusters of tests running in
// parallel (several packages, or several tests of one) never meet. The
// daemons run in the foreground (-D, -F), so the test holds their PIDs and
// reaps them; Stop cancels every job first (a job's slurmstepd is a daemon
// of its own and would outlive slurmd), then stops each daemon by its PID,
// SIGTERM and SIGKILL after a grace. Nothing is ever signalled by name. The
// daemons are also killed if the test process dies (Pdeathsig).
//
// The configuration follows the measurements in the project's notes: no
// cgroups (proctrack/linuxproc, task/none), no accounting daemon (so sacct
// does not work; jobcomp/filetxt records ended jobs), the node called
// localhost at 127.0.0.1 whatever the host name, the hardware line that
// `slurmd -C` reports, and SchedulerParameters=batch_sched_delay=0,
// sched_min_interval=0, without which an array of 8 tasks took up to 12 s.
// Options.OverSubscribe lets several tasks share a core (FORCE:N).
package slurmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Programs are the executables a cluster needs.
var Programs = []string{"munged", "mungekey", "munge", "unmunge", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol", "scancel"}

// Missing returns the programs of Programs that are not installed.
func Missing() []string {
	var missing []string
	for _, p := range Programs {
		if lookPath(p) == "" {
			missing = append(missing, p)
		}
	}
	return missing
}

// lookPath finds a program on PATH or in the sbin directories (which a
// non-login PATH may lack).
func lookPath(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(d, name)
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// SkipReason says why this machine cannot run a test cluster, or "".
func SkipReason() string {
	if m := Missing(); len(m) > 0 {
		return fmt.Sprintf("Slurm is not installed (missing %s): the Slurm tests need slurmctld, slurmd, slurm-client and munge (make setup installs Debian's packages where it can)", strings.Join(m, ", "))
	}
	if os.Geteuid() != 0 {
		return "the Slurm tests need root: slurmd runs each job as its user"
	}
	return ""
}

// Options tune a cluster.
type Options struct {
	// OverSubscribe > 1 lets that many tasks share one core
	// (OverSubscribe=FORCE:N): an array of 8 trivial tasks then takes about
	// 1 s instead of 4 on two cores.
	OverSubscribe int
	// Timeout bounds the wait for each daemon (0: 30 s).
	Timeout time.Duration
}

// Cluster is a running one-node cluster.
type Cluster struct {
	// Dir holds the configuration, state, spool, logs and munge files.
	Dir string
	// Conf is the slurm.conf path; every client needs SLURM_CONF=Conf.
	Conf string
	// Env is the environment entry clients need: SLURM_CONF=Conf.
	Env []string
	// CtldPort and SlurmdPort are the ports the daemons listen on.
	CtldPort, SlurmdPort int

	daemons []*daemon // in start order; stopped in reverse
}

type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartT starts a cluster under a temporary directory of t, stopped when t
// ends; it skips t, saying why, where no cluster can run.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if r := SkipReason(); r != "" {
		t.Skip(r)
	}
	// Unix sockets have a 108-byte path limit: a short directory.
	dir, err := os.MkdirTemp("", "slurmtest-")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(dir, opts)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the Slurm cluster: %v", err)
		}
		os.RemoveAll(dir)
	})
	return c
}

// Start starts a cluster with its files under dir and returns once the node
// is idle. On failure, what was started is stopped again.
func Start(dir string, opts Options) (*Cluster, error) {
	if r := SkipReason(); r != "" {
		return nil, errors.New("slurmtest: " + r)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("slurmtest: %w", err)
	}
	var lastErr error
	// A free port may be taken by someone else before slurmctld binds it;
	// then try again with others.
	for range 3 {
		c, err := start(abs, opts)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	return nil, lastErr
}

func start(dir string, opts Options) (_ *Cluster, err error) {
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf")}
	c.Env = []string{"SLURM_CONF=" + c.Conf}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	for _, d := range []string{"state", "spool", "log", "run", "munge"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("slurmtest: %w", err)
		}
	}
	// munged refuses a socket directory that others cannot search (the
	// directory and every one above it).
	for _, d := range []string{dir, filepath.Join(dir, "munge")} {
		if err := os.Chmod(d, 0o755); err != nil {
			return nil, fmt.Errorf("slurmtest: %w", err)
		}
	}
	if c.CtldPort, err = freePort(); err != nil {
		return nil, err
	}
	if c.SlurmdPort, err = freePort(); err != nil {
		return nil, err
	}
	for c.SlurmdPort == c.CtldPort {
		if c.SlurmdPort, err = freePort(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()

	// munge: a key of its own, a socket of its own.
	key := filepath.Join(dir, "munge", "munge.key")
	sock := filepath.Join(dir, "munge", "munge.sock")
	if _, err := os.Stat(key); err != nil {
		if out, err := exec.CommandContext(ctx, lookPath("mungekey"), "--create", "--keyfile="+key).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("slurmtest: mungekey: %v: %s", err, out)
		}
	}
	if err := os.Chmod(key, 0o400); err != nil {
		return nil, fmt.Errorf("slurmtest: %w", err)
	}
	if err := c.spawn("munged", "-F",
		"--key-file="+key, "--socket="+sock,
		"--log-file="+filepath.Join(dir, "munge", "munged.log"),
		"--pid-file="+filepath.Join(dir, "munge", "munged.pid"),
		"--seed-file="+filepath.Join(dir, "munge", "munged.seed")); err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, "munged to answer", func() error {
		enc, err := exec.CommandContext(ctx, lookPath("munge"), "-S", sock, "-n").Output()
		if err != nil {
			return err
		}
		dec := exec.CommandContext(ctx, lookPath("unmunge"), "-S", sock)
		dec.Stdin = bytes.NewReader(enc)
		return dec.Run()
	}); err != nil {
		return nil, err
	}

	hw, err := exec.CommandContext(ctx, lookPath("slurmd"), "-C").Output()
	if err != nil {
		return nil, fmt.Errorf("slurmtest: slurmd -C: %w", err)
	}
	line, _, _ := strings.Cut(string(hw), "\n")
	_, hwLine, ok := strings.Cut(line, " ")
	if !strings.HasPrefix(line, "NodeName=") || !ok {
		return nil, fmt.Errorf("slurmtest: unexpected slurmd -C output %q", line)
	}
	if err := os.WriteFile(c.Conf, []byte(c.config(sock, hwLine, opts)), 0o644); err != nil {
		return nil, fmt.Errorf("slurmtest: %w", err)
	}
	if err := c.spawn("slurmctld", "-D", "-f", c.Conf); err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, "slurmctld to be UP", func() error {
		out, err := c.Command(ctx, "scontrol", "ping")
		if err == nil && !strings.Contains(out, "is UP") {
			err = errors.New(strings.TrimSpace(out))
		}
		return err
	}); err != nil {
		return nil, err
	}
	if err := c.spawn("slurmd", "-D", "-f", c.Conf, "-N", "localhost"); err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, "the node to be idle", func() error {
		out, err := c.Command(ctx, "sinfo", "-h", "-n", "localhost", "-o", "%T")
		if err == nil && strings.TrimSpace(out) != "idle" {
			err = fmt.Errorf("node state %q", strings.TrimSpace(out))
		}
		return err
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) config(sock, hw string, opts Options) string {
	over := ""
	if opts.OverSubscribe > 1 {
		over = fmt.Sprintf(" OverSubscribe=FORCE:%d", opts.OverSubscribe)
	}
	d := c.Dir
	return fmt.Sprintf(`# written by dragonx/stages/cluster/slurmtest
ClusterName=dragonx-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[4]s
StateSaveLocation=%[1]s/state
SlurmdSpoolDir=%[1]s/spool
SlurmctldPidFile=%[1]s/run/slurmctld.pid
SlurmdPidFile=%[1]s/run/slurmd.pid
SlurmctldLogFile=%[1]s/log/slurmctld.log
SlurmdLogFile=%[1]s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=%[1]s/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
CommunicationParameters=NoInAddrAny
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=localhost NodeAddr=127.0.0.1 %[5]s State=UNKNOWN
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP%[6]s
`, d, c.CtldPort, c.SlurmdPort, sock, strings.TrimSpace(hw), over)
}

// spawn starts a daemon in the foreground as a child of this process.
func (c *Cluster) spawn(name string, args ...string) error {
	cmd := exec.Command(lookPath(name), args...)
	cmd.Env = append(os.Environ(), c.Env...)
	out, err := os.OpenFile(filepath.Join(c.Dir, "log", name+".stderr"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("slurmtest: %w", err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group (a terminal's Ctrl-C is the test's business),
	// and killed if the test process dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("slurmtest: starting %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { d.err = cmd.Wait(); close(d.done) }()
	c.daemons = append(c.daemons, d)
	return nil
}

// waitFor retries check every 50 ms until it succeeds, a daemon exits, or
// ctx ends; the error then carries the daemons' last log lines.
func (c *Cluster) waitFor(ctx context.Context, what string, check func() error) error {
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		for _, d := range c.daemons {
			select {
			case <-d.done:
				return fmt.Errorf("slurmtest: %s exited (%v) while waiting for %s%s", d.name, d.err, what, c.logTails())
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slurmtest: timed out waiting for %s (last: %v)%s", what, last, c.logTails())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) logTails() string {
	var b strings.Builder
	for _, f := range []string{"munge/munged.log", "log/slurmctld.log", "log/slurmd.log", "log/munged.stderr", "log/slurmctld.stderr", "log/slurmd.stderr"} {
		data, err := os.ReadFile(filepath.Join(c.Dir, f))
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 8 {
			lines = lines[len(lines)-8:]
		}
		fmt.Fprintf(&b, "\n%s:\n  %s", f, strings.Join(lines, "\n  "))
	}
	return b.String()
}

// Command runs a Slurm client command against this cluster and returns its
// standard output.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, lookPath(name), args...)
	cmd.Env = append(os.Environ(), c.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Jobs returns squeue's rows (job id and state) for every job the cluster
// still lists, one per array task.
func (c *Cluster) Jobs(ctx context.Context) ([]string, error) {
	out, err := c.Command(ctx, "squeue", "-h", "-r", "-o", "%i %T")
	if err != nil {
		return nil, err
	}
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			rows = append(rows, l)
		}
	}
	return rows, nil
}

// Stop cancels every job, waits (at most 20 s) until squeue lists none,
// then stops slurmd, slurmctld and munged by their PIDs. It is safe to
// call twice.
func (c *Cluster) Stop() error {
	var errs []error
	if c.alive("slurmctld") {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if jobs, err := c.Jobs(ctx); err == nil && len(jobs) > 0 {
			if _, err := c.Command(ctx, "scancel", "--partition=local"); err != nil {
				errs = append(errs, err)
			}
			for {
				jobs, err := c.Jobs(ctx)
				if err != nil || len(jobs) == 0 {
					break
				}
				if ctx.Err() != nil {
					errs = append(errs, fmt.Errorf("slurmtest: jobs still listed 20 s after scancel: %v", jobs))
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		cancel()
	}
	for k := len(c.daemons) - 1; k >= 0; k-- {
		d := c.daemons[k]
		select {
		case <-d.done:
			continue
		default:
		}
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(15 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.done
			errs = append(errs, fmt.Errorf("slurmtest: %s (pid %d) ignored SIGTERM for 15 s; killed", d.name, d.cmd.Process.Pid))
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) alive(name string) bool {
	for _, d := range c.daemons {
		if d.name != name {
			continue
		}
		select {
		case <-d.done:
			return false
		default:
			return true
		}
	}
	return false
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("slurmtest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PIDs returns the PIDs of the daemons still running, by name.
func (c *Cluster) PIDs() map[string]int {
	m := map[string]int{}
	for _, d := range c.daemons {
		if c.alive(d.name) {
			m[d.name] = d.cmd.Process.Pid
		}
	}
	return m
}
