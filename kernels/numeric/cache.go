package numeric

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"dragonx/kernels/internal/blobcache"
)

// cache is the gate's cache directory: kernels/internal/blobcache (atomic,
// checksummed, content-addressed entries), shared with kernels/ptxas.
type cache = blobcache.Cache

// key returns the hex SHA-256 of the parts, each length-prefixed.
func key(parts ...string) string { return blobcache.Key(parts...) }

// compiler is a C compiler with its flags.
type compiler struct {
	path  string   // resolved executable
	flags []string // before the source
	libs  []string // after it
	// id identifies the compiler (path and version output) for cache keys.
	id string
	// timeout bounds each compilation.
	timeout time.Duration
}

func newCompiler(ctx context.Context, cc string, flags []string, timeout time.Duration) (*compiler, error) {
	path, err := exec.LookPath(cc)
	if err != nil {
		return nil, fmt.Errorf("numeric: C compiler %q: %w (install gcc: make setup)", cc, err)
	}
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err() // the probe was cut short: say why, not how
		}
		return nil, fmt.Errorf("numeric: C compiler %s --version: %w", path, err)
	}
	return &compiler{path: path, flags: flags, libs: []string{"-lm"}, id: path + "\n" + string(out), timeout: timeout}, nil
}

// binary returns the path of the executable compiled from src, from the
// cache or compiled now (cached reports which).
func (cc *compiler) binary(ctx context.Context, c *cache, src string) (path string, cached bool, err error) {
	name := key("bin", src, cc.id, strings.Join(cc.flags, "\x00"), strings.Join(cc.libs, "\x00")) + ".bin"
	path = c.Path(name)
	if c.Valid(name) {
		return path, true, nil
	}
	tmp, err := c.TempFile(name)
	if err != nil {
		return "", false, fmt.Errorf("numeric: %w", err)
	}
	defer os.Remove(tmp)
	args := append(append(append([]string{}, cc.flags...), "-x", "c", "-", "-o", tmp), cc.libs...)
	cctx, cancel := context.WithTimeout(ctx, cc.timeout)
	defer cancel()
	cmd := command(cctx, cc.path, args...)
	cmd.Stdin = strings.NewReader(src)
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", false, fmt.Errorf("numeric: compile: %w", ctx.Err())
		}
		if cctx.Err() != nil {
			return "", false, &Error{Kind: KindTimeout, Msg: fmt.Sprintf("the C compiler ran past its limit of %s (numeric.Options.CompileTimeout)", cc.timeout)}
		}
		return "", false, &Error{Kind: KindCompile, Msg: fmt.Sprintf("%s %s: %v: %s", cc.path, strings.Join(args, " "), err, stderr.tail())}
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		return "", false, fmt.Errorf("numeric: compile: %w", err)
	}
	if err := c.Put(name, data, 0o755); err != nil {
		return "", false, fmt.Errorf("numeric: %w", err)
	}
	return path, false, nil
}

// etxtbsyTries bounds the restarts of a program found "text file busy".
const etxtbsyTries = 20

// command returns the command of path with args in a process group of
// its own (blobcache.Command).
func command(ctx context.Context, path string, args ...string) *exec.Cmd {
	return blobcache.Command(ctx, path, args...)
}

// tailBuffer keeps the last bytes of a tool's output (blobcache.TailBuffer).
type tailBuffer struct{ blobcache.TailBuffer }

func (t *tailBuffer) tail() string { return t.Tail() }

// run runs the program at path with args, stdin in, and returns its
// standard output. The program gets its limits in its environment (and
// nothing else from the gate's: see kernels/cgen's protocol) and is killed
// after Options.RunTimeout. A failure is an *Error: its kind from the exit
// status (see kernels/cgen's protocol) or the limit it ran into, its
// message the tail of standard error. The end of ctx is an error, not a
// verdict.
func (g *Gate) run(ctx context.Context, what, path string, in []byte, args ...string) ([]byte, error) {
	cpu := max(g.opts.CPUTime.Truncate(time.Second), time.Second)
	rctx, cancel := context.WithTimeout(ctx, g.opts.RunTimeout)
	defer cancel()
	var out bytes.Buffer
	var stderr tailBuffer
	var err error
	for try := 0; ; try++ {
		cmd := command(rctx, path, args...)
		cmd.Env = []string{
			fmt.Sprintf("DX_CPU_SECONDS=%d", int64(cpu/time.Second)),
			fmt.Sprintf("DX_MEMORY_BYTES=%d", g.opts.MaxMemory+AddressSpaceSlack),
		}
		cmd.Stdin = bytes.NewReader(in)
		out.Reset()
		stderr = tailBuffer{}
		cmd.Stdout, cmd.Stderr = &out, &stderr
		err = cmd.Run()
		// A program just written by this process can be "text file busy"
		// for a moment: a child forked by another goroutine still holds
		// the write descriptor until it execs (golang/go#22315). Not a
		// verdict: start it again.
		if !errors.Is(err, syscall.ETXTBSY) || try == etxtbsyTries || rctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(try+1) * 5 * time.Millisecond)
	}
	if err == nil {
		return out.Bytes(), nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("numeric: %s: %w", what, ctx.Err())
	}
	if rctx.Err() != nil {
		return nil, &Error{Kind: KindTimeout, Msg: fmt.Sprintf("%s: ran past the wall-clock limit of %s (numeric.Options.RunTimeout)", what, g.opts.RunTimeout)}
	}
	kind := KindRun
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws, _ := ee.Sys().(syscall.WaitStatus)
		used := ee.UserTime() + ee.SystemTime()
		switch {
		case ws.Signaled() && (ws.Signal() == syscall.SIGXCPU || ws.Signal() == syscall.SIGKILL && used >= cpu):
			return nil, &Error{Kind: KindTimeout, Msg: fmt.Sprintf("%s: ran past the CPU-time limit of %s (numeric.Options.CPUTime)", what, cpu)}
		case ee.ExitCode() == 3:
			kind = KindOutOfBounds
		case ee.ExitCode() == 4:
			kind = KindDivergentBarrier
		case ee.ExitCode() == 5:
			kind = KindResources
		}
	}
	msg := strings.TrimPrefix(stderr.tail(), "dragonx-numeric: ")
	return nil, &Error{Kind: kind, Msg: fmt.Sprintf("%s: %s (%v)", what, msg, err)}
}
