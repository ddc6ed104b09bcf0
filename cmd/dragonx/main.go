// Command dragonx runs reproducible, content-addressed experiments declared in
// HCL, and exposes the project's compiler (kernels) and language model (dragon)
// as subcommands.
//
// Each subcommand lives in its own file (cmd_<name>.go) as a *command value
// whose run function holds no globals; this file only dispatches and maps
// errors to the documented exit codes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"dragonx/internal/redact"
)

// Exit codes, documented in every command's help and in the README.
const (
	exitOK          = 0   // success
	exitFailure     = 1   // an operational failure (I/O, cache, environment)
	exitUsage       = 2   // bad command line
	exitConfig      = 3   // the experiment has configuration diagnostics
	exitStageFailed = 4   // a stage failed (its dependents were skipped)
	exitInterrupted = 130 // interrupted by the user (Ctrl-C / SIGTERM)
)

const exitStatusHelp = `EXIT STATUS
  0    success
  1    failure (I/O, cache, environment)
  2    usage error
  3    configuration diagnostics in the experiment
  4    a stage failed
  130  interrupted
`

// env is what a command may touch of the outside world; tests build their own.
type env struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	getenv         func(string) string
	isTerminal     bool // stderr is a terminal (progress bars instead of lines)
}

// command is one dragonx subcommand.
type command struct {
	name  string
	usage string // e.g. "run [flags] FILE.hcl"
	short string
	long  string // full help; the dispatcher appends the EXIT STATUS table
	run   func(ctx context.Context, e *env, args []string) error
	// subcommands: the first argument names a subcommand, so `help CMD
	// SUB` shows SUB's flags.
	subcommands bool
	// hidden commands are left out of `dragonx help` (internal plumbing).
	hidden bool
}

// commands lists every subcommand in help order.
func commands() []*command {
	return []*command{
		cmdRun, cmdPlan, cmdStatus, cmdGraph, cmdShow, cmdReport, cmdRuns, cmdDiff, cmdCache,
		cmdKernel, cmdEncode, cmdDecode,
		cmdVersion,
		cmdDragon,
		cmdStageJob,
	}
}

// usageError reports a bad command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// exitCodeError carries an explicit exit code with an optional message that
// has already been printed (msg empty) or still needs printing.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitCodeError) Unwrap() error { return e.err }

// withCode wraps err so that main exits with code. A nil err means the
// message was already shown to the user.
func withCode(code int, err error) error { return &exitCodeError{code: code, err: err} }

func main() {
	os.Exit(mainWithArgs(os.Args[1:]))
}

// mainWithArgs runs dragonx with args and returns the process exit code.
func mainWithArgs(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{
		stdout:     os.Stdout,
		stderr:     os.Stderr,
		stdin:      os.Stdin,
		getenv:     os.Getenv,
		isTerminal: isTerminal(os.Stderr),
	}
	return dispatch(ctx, e, args)
}

func dispatch(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		if len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				// The command prints its help, with its flags, for -h (a
				// subcommand's flags for `help CMD SUB`).
				hargs := []string{"-h"}
				if c.subcommands && len(args) > 2 {
					hargs = []string{args[2], "-h"}
				}
				return exitCode(e, c, c.run(ctx, e, hargs), ctx)
			}
			fmt.Fprintf(e.stderr, "dragonx: unknown command %q\n", args[1])
			return exitUsage
		}
		printHelp(e.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == shardTaskCommand {
		return runShardTask(ctx, e, args[1:])
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(e.stderr, "dragonx: unknown command %q\nRun 'dragonx help' for the list of commands.\n", args[0])
		return exitUsage
	}
	err := c.run(ctx, e, args[1:])
	return exitCode(e, c, err, ctx)
}

func exitCode(e *env, c *command, err error, ctx context.Context) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		printCommandHelp(e.stdout, c)
		var he *helpError
		if errors.As(err, &he) && he.flags != "" {
			fmt.Fprintf(e.stdout, "\n%s", he.flags)
		}
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "dragonx %s: %s\nusage: dragonx %s\nRun 'dragonx help %s' for details.\n", c.name, ue.msg, c.usage, c.name)
		return exitUsage
	}
	var ce *exitCodeError
	if errors.As(err, &ce) {
		if ce.err != nil {
			fmt.Fprintf(e.stderr, "dragonx %s: %s\n", c.name, redact.Text(ce.err.Error()))
		}
		return ce.code
	}
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		fmt.Fprintf(e.stderr, "dragonx %s: interrupted\n", c.name)
		return exitInterrupted
	}
	// Errors are redacted once more here, in case a URL with a secret
	// reached one by a path that did not redact it.
	fmt.Fprintf(e.stderr, "dragonx %s: %s\n", c.name, redact.Text(err.Error()))
	return exitFailure
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "dragonx: reproducible, content-addressed experiments for the little dragon.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: dragonx COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	cs := commands()
	width := 0
	for _, c := range cs {
		if !c.hidden {
			width = max(width, len(c.name))
		}
	}
	for _, c := range cs {
		if !c.hidden {
			fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.short)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'dragonx help COMMAND' for a command's flags and exit status.")
	fmt.Fprintln(w)
	fmt.Fprint(w, exitStatusHelp)
}

func printCommandHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: dragonx %s\n\n%s\n", c.usage, c.short)
	if c.long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.long, "\n"))
	}
	fmt.Fprintf(w, "\n%s", exitStatusHelp)
}

// helpError is flag.ErrHelp carrying the command's flags for the help text.
type helpError struct{ flags string }

func (h *helpError) Error() string        { return flag.ErrHelp.Error() }
func (h *helpError) Is(target error) bool { return target == flag.ErrHelp }

// newFlagSet returns a flag set for the named command that reports errors
// instead of exiting and prints nothing itself (the dispatcher prints usage).
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs, turning flag errors into usage errors.
// Flags may follow positional arguments ("run x.hcl -j 2").
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpError{flags: flagDefaults(fs)}
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			positional = append(positional, rest[1:]...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	return positional, nil
}

// flagDefaults renders a flag set's flags for help text, sorted by name.
func flagDefaults(fs *flag.FlagSet) string {
	var lines []string
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		l := "  -" + f.Name
		if name != "" {
			l += " " + name
		}
		l += "\n      " + usage
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			l += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		lines = append(lines, l)
	})
	sort.Strings(lines)
	return "FLAGS\n" + strings.Join(lines, "\n") + "\n"
}
