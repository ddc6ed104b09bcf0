package numeric

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// cache is a directory of content-addressed entries: NAME holds the data,
// NAME.sum the hex SHA-256 of the data. Both are written to a temporary
// file and renamed, data first, so a reader sees either no entry, an old
// one or a complete one; an entry whose data does not match its sum (a
// crash between the two renames, a truncated or edited file) is not
// trusted: the caller rebuilds it. Two processes filling the same entry
// at once both write complete files and the last rename wins.
type cache struct{ dir string }

// key returns the hex SHA-256 of the parts, each length-prefixed.
func key(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// get returns the data of entry name, or nil when there is no valid entry.
func (c *cache) get(name string) []byte {
	want, err := os.ReadFile(filepath.Join(c.dir, name+".sum"))
	if err != nil {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil || sum(data) != strings.TrimSpace(string(want)) {
		return nil
	}
	return data
}

// valid reports whether entry name exists and matches its sum.
func (c *cache) valid(name string) bool { return c.get(name) != nil }

// put writes entry name with data.
func (c *cache) put(name string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("numeric: cache: %w", err)
	}
	if err := c.writeAtomic(name, data, mode); err != nil {
		return err
	}
	return c.writeAtomic(name+".sum", []byte(sum(data)+"\n"), 0o644)
}

func (c *cache) writeAtomic(name string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(c.dir, name+".tmp*")
	if err != nil {
		return fmt.Errorf("numeric: cache: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if e := f.Close(); err == nil {
		err = e
	}
	if err == nil {
		err = os.Chmod(tmp, mode)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(c.dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("numeric: cache: %w", err)
	}
	return nil
}

// compiler is a C compiler with its flags.
type compiler struct {
	path  string   // resolved executable
	flags []string // before the source
	libs  []string // after it
	// id identifies the compiler (path and version output) for cache keys.
	id string
}

func newCompiler(ctx context.Context, cc string, flags []string) (*compiler, error) {
	path, err := exec.LookPath(cc)
	if err != nil {
		return nil, fmt.Errorf("numeric: C compiler %q: %w (install gcc: make setup)", cc, err)
	}
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("numeric: C compiler %s --version: %w", path, err)
	}
	return &compiler{path: path, flags: flags, libs: []string{"-lm"}, id: path + "\n" + string(out)}, nil
}

// binary returns the path of the executable compiled from src, from the
// cache or compiled now (cached reports which).
func (cc *compiler) binary(ctx context.Context, c *cache, src string) (path string, cached bool, err error) {
	name := key("bin", src, cc.id, strings.Join(cc.flags, "\x00"), strings.Join(cc.libs, "\x00")) + ".bin"
	path = filepath.Join(c.dir, name)
	if c.valid(name) {
		return path, true, nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return "", false, fmt.Errorf("numeric: cache: %w", err)
	}
	f, err := os.CreateTemp(c.dir, name+".tmp*")
	if err != nil {
		return "", false, fmt.Errorf("numeric: cache: %w", err)
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp)
	args := append(append(append([]string{}, cc.flags...), "-x", "c", "-", "-o", tmp), cc.libs...)
	cmd := command(ctx, cc.path, args...)
	cmd.Stdin = strings.NewReader(src)
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", false, fmt.Errorf("numeric: compile: %w", ctx.Err())
		}
		return "", false, &Error{Kind: KindCompile, Msg: fmt.Sprintf("%s %s: %v: %s", cc.path, strings.Join(args, " "), err, stderr.tail())}
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		return "", false, fmt.Errorf("numeric: compile: %w", err)
	}
	if err := c.put(name, data, 0o755); err != nil {
		return "", false, err
	}
	return path, false, nil
}

// command returns the command of path with args in a process group of
// its own: cancelling ctx kills the group (the compiler driver and the
// cc1, as and ld it started, not just the driver), and so does the death
// of this process (Pdeathsig).
func command(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// tailBuffer keeps the last tailMax bytes written to it.
type tailBuffer struct{ b []byte }

const tailMax = 2048

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) tail() string {
	b := t.b
	if len(b) > tailMax {
		b = b[len(b)-tailMax:]
	}
	s := strings.TrimSpace(string(bytes.ToValidUTF8(b, []byte("?"))))
	if s == "" {
		return "(no output)"
	}
	return s
}

// run runs the program at path with args, stdin in, and returns its
// standard output. A failure is an *Error: its kind from the exit status
// (see kernels/cgen's protocol), its message the tail of standard error.
func run(ctx context.Context, what, path string, in []byte, args ...string) ([]byte, error) {
	cmd := command(ctx, path, args...)
	cmd.Stdin = bytes.NewReader(in)
	var out bytes.Buffer
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err == nil {
		return out.Bytes(), nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("numeric: %s: %w", what, ctx.Err())
	}
	kind := KindRun
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		switch ee.ExitCode() {
		case 3:
			kind = KindOutOfBounds
		case 4:
			kind = KindDivergentBarrier
		}
	}
	msg := strings.TrimPrefix(stderr.tail(), "dragonx-numeric: ")
	return nil, &Error{Kind: kind, Msg: fmt.Sprintf("%s: %s (%v)", what, msg, err)}
}
