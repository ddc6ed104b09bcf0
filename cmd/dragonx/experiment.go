package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"dragonx/cache"
	"dragonx/stages"
	_ "dragonx/stages/all" // every stage kind
)

// expFlags are the flags shared by the commands that load an experiment.
type expFlags struct {
	vars        stringList
	varFiles    stringList
	cacheDir    string
	lockTimeout time.Duration
	jobs        int
	outDir      string
	json        bool
	verbose     bool
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func (f *expFlags) registerLoad(fs *flag.FlagSet) {
	fs.Var(&f.vars, "var", "set a variable: `NAME=VALUE` (repeatable)")
	fs.Var(&f.varFiles, "var-file", "read variable values from an HCL `FILE` of NAME = VALUE lines (repeatable)")
}

func (f *expFlags) registerCache(fs *flag.FlagSet) {
	fs.StringVar(&f.cacheDir, "cache", "", "cache `DIR` (default $DRAGONX_CACHE, else .dragonx/cache at the experiment's repository root)")
	fs.DurationVar(&f.lockTimeout, "lock-timeout", cache.DefaultLockTimeout, "how long to wait for another dragonx process using the cache")
}

// cacheDirFor returns the cache directory for an experiment file: the flag,
// else $DRAGONX_CACHE, else .dragonx/cache at the root of the repository that
// holds the file (the file's directory when it is in none).
func cacheDirFor(e *env, flagDir, file string) string {
	if flagDir != "" {
		return flagDir
	}
	if d := e.getenv("DRAGONX_CACHE"); d != "" {
		return d
	}
	return filepath.Join(projectRoot(file), ".dragonx", "cache")
}

// projectRoot returns the closest directory above file (or above the
// current directory when file is "") that holds .git, else file's directory.
func projectRoot(file string) string {
	start := "."
	if file != "" {
		start = filepath.Dir(file)
	}
	abs, err := filepath.Abs(start)
	if err != nil {
		return start
	}
	for d := abs; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return abs
		}
		d = parent
	}
}

// loadExperiment loads file with the flags' variables and prints any
// diagnostics; config errors come back as exit code 3.
func loadExperiment(e *env, f *expFlags, file string) (*stages.Config, error) {
	cfg, diags := stages.Load(file, stages.LoadOptions{Vars: f.vars, VarFiles: f.varFiles})
	if len(diags) > 0 {
		printDiags(e, f.json, cfg, diags)
	}
	if diags.HasErrors() {
		return nil, withCode(exitConfig, nil)
	}
	return cfg, nil
}

// loadWithTargets loads the experiment named by pos[0] and parses the
// STAGE arguments after it.
func loadWithTargets(e *env, f *expFlags, pos []string) (*stages.Config, []stages.Addr, error) {
	if len(pos) == 0 {
		return nil, nil, usagef("missing the experiment file")
	}
	targets, err := parseTargets(pos[1:])
	if err != nil {
		return nil, nil, err
	}
	cfg, err := loadExperiment(e, f, pos[0])
	if err != nil {
		return nil, nil, err
	}
	return cfg, targets, nil
}

// printDiags renders diagnostics: source snippets for people, one JSON
// document under --json.
func printDiags(e *env, asJSON bool, cfg *stages.Config, diags hcl.Diagnostics) {
	var files map[string]*hcl.File
	if cfg != nil {
		files = cfg.Files
	}
	if asJSON {
		type jdiag struct {
			Severity string `json:"severity"`
			Summary  string `json:"summary"`
			Detail   string `json:"detail"`
			Range    string `json:"range,omitempty"`
		}
		var out []jdiag
		for _, d := range diags {
			j := jdiag{Severity: "error", Summary: d.Summary, Detail: d.Detail}
			if d.Severity == hcl.DiagWarning {
				j.Severity = "warning"
			}
			if d.Subject != nil {
				j.Range = fmt.Sprintf("%s:%d:%d", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
			}
			out = append(out, j)
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"ok": false, "diagnostics": out})
		return
	}
	w := hcl.NewDiagnosticTextWriter(e.stderr, files, 100, false)
	_ = w.WriteDiagnostics(diags)
}

// openCache opens the cache directory, waiting for another process that
// holds it and saying so.
func openCache(ctx context.Context, e *env, dir string, timeout time.Duration) (cache.Store, error) {
	if timeout <= 0 {
		timeout = -1 // fail at once
	}
	s, err := cache.Open(ctx, dir, cache.Options{
		LockTimeout: timeout,
		OnLockWait: func(h cache.LockHolder) {
			fmt.Fprintf(e.stderr, "dragonx: waiting for the cache %s, held by %s (up to %s; --lock-timeout changes it)\n", dir, h, timeout)
		},
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// newEngine builds an engine over an open store for the experiment cfg.
func newEngine(e *env, f *expFlags, cfg *stages.Config, store cache.Store, cacheDir string, ui stages.UI) *stages.Engine {
	host, _ := os.Hostname()
	jobs := f.jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	eng := &stages.Engine{
		Store: store,
		Jobs:  jobs,
		// Inside the cache directory, so the cache's process lock guards it.
		WorkRoot: filepath.Join(cacheDir, "work"),
		// Resume state of interrupted stages, by key; also under the lock.
		StateRoot: filepath.Join(cacheDir, "state"),
		UI:        ui,
		Debug:     parseDebug(e.getenv("DRAGONX_DEBUG")),
		DebugOut:  e.stderr,
		Host:      host,
		Tool:      "dragonx " + versionString(),
		// Sharded stages: work directories by key under the cache
		// directory (an executor's work_dir overrides it), and this
		// executable as the Slurm tasks' wrapper.
		Cluster: stages.ClusterOptions{WorkRoot: filepath.Join(cacheDir, "shards")},
	}
	if exe := e.getenv("DRAGONX_SHARD_TASK_BIN"); exe != "" {
		// Where the nodes find dragonx, when not at this executable's path.
		eng.Cluster.Task = clusterTask(exe)
		eng.Cluster.Binary = exe
	} else if exe, err := os.Executable(); err == nil {
		eng.Cluster.Task = clusterTask(exe)
		eng.Cluster.Binary = exe
	}
	if cfg != nil {
		out := f.outDir
		if out == "" {
			out = filepath.Join(projectRoot(cfg.File), "out")
		}
		if out != "-" {
			eng.OutDir = out
		}
	}
	return eng
}

// parseDebug reads DRAGONX_DEBUG, a comma-separated list of knob=value.
func parseDebug(s string) stages.Debug {
	var d stages.Debug
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		on, _ := strconv.ParseBool(v)
		if v == "" {
			on = true
		}
		switch k {
		case "cachehash":
			d.CacheHash = on
		case "cacheverify":
			d.CacheVerify = on
		}
	}
	return d
}

// parseTargets turns STAGE arguments into addresses.
func parseTargets(args []string) ([]stages.Addr, error) {
	var out []stages.Addr
	for _, a := range args {
		addr, err := stages.ParseAddr(a)
		if err != nil {
			return nil, usagef("%v", err)
		}
		out = append(out, addr)
	}
	return out, nil
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// optionalFile returns the one experiment file among pos, or "" when pos
// is empty.
func optionalFile(pos []string) (string, error) {
	switch len(pos) {
	case 0:
		return "", nil
	case 1:
		return pos[0], nil
	}
	return "", usagef("want at most one experiment file")
}
