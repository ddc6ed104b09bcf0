package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"dragonx/cache"
	"dragonx/internal/humanize"
	"dragonx/internal/progress"
	"dragonx/stages"
	"dragonx/stages/runlog"
)

var cmdCache = &command{
	subcommands: true,
	name:        "cache",
	usage:       "cache ls|du|verify|gc|export|import|push|pull [flags] ...",
	short:       "inspect, check, trim and share the artifact cache",
	long: `The cache (default .dragonx/cache at the repository root; --cache DIR or
$DRAGONX_CACHE) holds every stage's outputs by content digest and one manifest per
stage run, keyed by the stage key. docs/cache-format.md specifies the format.

  cache ls [FILE.hcl...]          list cached stage runs (with files: mark those the
                                  experiments use now with *)
  cache du                        space used, unreferenced blobs, last gc
  cache verify [-repair] [FILE.hcl...]
                                  re-hash every blob and check every manifest (with
                                  files: also that the entries the experiments use now
                                  hold every output their stages declare); -repair
                                  deletes what is bad so the stages rerun (exit 1 if
                                  problems remain)
  cache gc [-keep FILE.hcl]... [-max-age 30d] [-max-size 20GB] [-drop-runs 90d] [-dry-run]
                                  evict entries unused for longer than max-age, then the
                                  least recently used beyond max-size, never those the
                                  -keep experiments use now nor those a recorded run
                                  names ('dragonx runs'; -drop-runs first removes the
                                  runs older than that); then remove unreachable blobs
  cache export BUNDLE FILE.hcl [STAGE...]
                                  write the cached runs of the experiment's stages (and
                                  everything upstream of them) to a portable bundle
  cache import BUNDLE             verify a bundle and add its entries to the cache
  cache push [-remote URL] [FILE.hcl] [-stage NAME]...
                                  upload the experiment's cached stage runs (with
                                  -stage: those stages and their upstreams; without
                                  FILE.hcl: every entry of the local cache) to the
                                  remote cache: blobs first, then manifests; entries
                                  the remote holds incomplete are completed
  cache pull [-remote URL] FILE.hcl [-stage NAME]...
                                  download, verified, the experiment's stage runs that
                                  the remote holds and the local cache lacks
  cache ls -remote URL FILE.hcl   what the remote holds for each stage of the
                                  experiment: complete, incomplete (blobs missing),
                                  absent, unusable (corrupt), or unknown (its key
                                  depends on a stage that is in neither cache)

Debug knobs, in the environment variable DRAGONX_DEBUG (comma-separated):
  cachehash=1     print the input lines of every stage key on standard error
  cacheverify=1   rerun every stage even when cached, and fail a stage whose new
                  outputs differ from the cached ones (a reproducibility audit)

push, pull and ls -remote fail (exit 1) when the remote cannot be used; run never
does (it warns and continues with the local cache).

` + remoteHelp,
	run: runCache,
}

func runCache(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("missing the cache subcommand (ls, du, verify, gc, export, import, push, pull)")
	}
	sub, args := args[0], args[1:]
	var f expFlags
	fs := newFlagSet("cache")
	f.registerCache(fs)
	f.registerLoad(fs)
	switch sub {
	case "-h", "-help", "--help", "help":
		return flag.ErrHelp
	case "ls":
		return cacheLs(ctx, e, fs, &f, args)
	case "du":
		return cacheDu(ctx, e, fs, &f, args)
	case "verify":
		return cacheVerify(ctx, e, fs, &f, args)
	case "gc":
		return cacheGC(ctx, e, fs, &f, args)
	case "export":
		return cacheExport(ctx, e, fs, &f, args)
	case "import":
		return cacheImport(ctx, e, fs, &f, args)
	case "push":
		return cachePush(ctx, e, fs, &f, args)
	case "pull":
		return cachePull(ctx, e, fs, &f, args)
	}
	return usagef("unknown cache subcommand %q (want ls, du, verify, gc, export, import, push or pull)", sub)
}

// openCacheFor opens the cache for an optional experiment file.
func openCacheFor(ctx context.Context, e *env, f *expFlags, file string) (cache.Store, string, error) {
	dir := cacheDirFor(e, f.cacheDir, file)
	s, err := openCache(ctx, e, dir, f.lockTimeout)
	return s, dir, err
}

// currentKeys returns the keys of the cached stage runs that the experiment
// uses as configured now (the targets and their upstreams, or all stages).
func currentKeys(ctx context.Context, e *env, f *expFlags, store cache.Store, file string, targets []stages.Addr) (map[cache.Key]string, error) {
	cfg, err := loadExperiment(e, f, file)
	if err != nil {
		return nil, err
	}
	f.outDir = "-"
	eng := newEngine(e, f, cfg, store, "", nil)
	rep, err := eng.Plan(ctx, cfg, targets)
	if err != nil {
		return nil, err
	}
	keys := map[cache.Key]string{}
	for _, r := range rep.Results {
		if r.Status == stages.StatusCached {
			keys[r.Key] = r.Addr.String()
		}
	}
	return keys, nil
}

// declaredOutputs adds to declared, for each stage of the experiment whose
// key is known now (its upstream stages are cached), the names of the
// outputs the stage declares.
func declaredOutputs(ctx context.Context, e *env, f *expFlags, store cache.Store, file string, declared map[cache.Key][]string) error {
	cfg, err := loadExperiment(e, f, file)
	if err != nil {
		return err
	}
	f.outDir = "-"
	eng := newEngine(e, f, cfg, store, "", nil)
	rep, err := eng.Plan(ctx, cfg, nil)
	if err != nil {
		return err
	}
	insts := map[string]*stages.Instance{}
	for _, inst := range cfg.Instances {
		insts[inst.Addr.String()] = inst
	}
	for _, r := range rep.Results {
		inst := insts[r.Addr.String()]
		if r.Key.IsZero() || inst == nil {
			continue
		}
		for _, o := range inst.Stage.Outputs() {
			declared[r.Key] = append(declared[r.Key], o.Name)
		}
	}
	return nil
}

func cacheLs(ctx context.Context, e *env, fs *flag.FlagSet, f *expFlags, args []string) error {
	fs.BoolVar(&f.json, "json", false, "print JSON")
	var rf remoteFlags
	rf.register(fs, false)
	files, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if rf.url != "" {
		return cacheLsRemote(ctx, e, f, &rf, files)
	}
	first := ""
	if len(files) > 0 {
		first = files[0]
	}
	store, _, err := openCacheFor(ctx, e, f, first)
	if err != nil {
		return err
	}
	defer store.Close()
	current := map[cache.Key]string{}
	for _, file := range files {
		ks, err := currentKeys(ctx, e, f, store, file, nil)
		if err != nil {
			return err
		}
		for k, v := range ks {
			current[k] = v
		}
	}
	entries, err := cache.List(ctx, store)
	if err != nil {
		return err
	}
	if f.json {
		type row struct {
			Stage    string `json:"stage"`
			Kind     string `json:"kind"`
			Key      string `json:"key"`
			Started  string `json:"started"`
			LastUsed string `json:"last_used"`
			Bytes    int64  `json:"bytes"`
			Missing  int    `json:"missing_blobs"`
			Current  bool   `json:"current"`
		}
		rows := []row{}
		for _, en := range entries {
			_, cur := current[en.Key]
			rows = append(rows, row{en.Stage, en.Kind, en.Key.String(), en.Started.Format(time.RFC3339), en.LastUsed.Format(time.RFC3339), en.Size, en.Missing, cur})
		}
		return writeJSON(e.stdout, rows)
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "\tSTAGE\tKIND\tKEY\tRAN\tLAST USED\tSIZE\t")
	for _, en := range entries {
		mark := " "
		if _, ok := current[en.Key]; ok {
			mark = "*"
		}
		extra := ""
		if en.Missing > 0 {
			extra = fmt.Sprintf("%d blob(s) missing", en.Missing)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, cache.Printable(en.Stage), cache.Printable(en.Kind), en.Key.Short(),
			en.Started.Local().Format(time.DateTime), en.LastUsed.Local().Format(time.DateTime), humanize.Bytes(en.Size), extra)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%d cached stage run%s\n", len(entries), plural(len(entries)))
	return nil
}

func cacheDu(ctx context.Context, e *env, fs *flag.FlagSet, f *expFlags, args []string) error {
	fs.BoolVar(&f.json, "json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("cache du takes no arguments")
	}
	store, dir, err := openCacheFor(ctx, e, f, "")
	if err != nil {
		return err
	}
	defer store.Close()
	u, err := cache.DiskUsage(ctx, store)
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(e.stdout, u)
	}
	fmt.Fprintf(e.stdout, "cache        %s\n", dir)
	fmt.Fprintf(e.stdout, "stage runs   %d", u.Manifests)
	if u.Unusable > 0 {
		fmt.Fprintf(e.stdout, " (+%d unusable: corrupt or another format version)", u.Unusable)
	}
	fmt.Fprintln(e.stdout)
	fmt.Fprintf(e.stdout, "blobs        %d, %s\n", u.Blobs, humanize.Bytes(u.BlobBytes))
	fmt.Fprintf(e.stdout, "unreferenced %d, %s (cache gc removes them)\n", u.Unreferenced, humanize.Bytes(u.UnreferencedBytes))
	if u.Leftovers.Blobs > 0 {
		fmt.Fprintf(e.stdout, "leftovers    %d interrupted writes, %s (cache gc removes them)\n", u.Leftovers.Blobs, humanize.Bytes(u.Leftovers.Bytes))
	}
	if u.DiskBytes >= 0 {
		fmt.Fprintf(e.stdout, "on disk      %s\n", humanize.Bytes(u.DiskBytes))
	}
	if u.LastGC.IsZero() {
		fmt.Fprintln(e.stdout, "last gc      never")
	} else {
		fmt.Fprintf(e.stdout, "last gc      %s\n", u.LastGC.Local().Format(time.DateTime))
	}
	return nil
}

func cacheVerify(ctx context.Context, e *env, fs *flag.FlagSet, f *expFlags, args []string) error {
	var repair bool
	fs.BoolVar(&repair, "repair", false, "delete corrupt blobs, unusable manifests and manifests that reach them, so those stages rerun")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	files, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	first := ""
	if len(files) > 0 {
		first = files[0]
	}
	store, dir, err := openCacheFor(ctx, e, f, first)
	if err != nil {
		return err
	}
	defer store.Close()
	declared := map[cache.Key][]string{}
	for _, file := range files {
		if err := declaredOutputs(ctx, e, f, store, file, declared); err != nil {
			return err
		}
	}
	rep, err := cache.Verify(ctx, store, cache.VerifyOptions{Repair: repair, Progress: bytesProgress(e, "verify"), Declared: declared})
	if err != nil {
		return err
	}
	if f.json {
		if err := writeJSON(e.stdout, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "verified %s: %d blobs (%s), %d stage runs\n", dir, rep.Blobs, humanize.Bytes(rep.Bytes), rep.Manifests)
		for _, p := range rep.Problems {
			fmt.Fprintf(e.stdout, "  problem: %s\n", p)
		}
		if rep.Leftovers.Blobs > 0 {
			state := "cache gc or verify -repair removes them"
			if rep.Leftovers.Removed {
				state = "removed"
			}
			fmt.Fprintf(e.stdout, "  %d interrupted writes (%s; %s)\n", rep.Leftovers.Blobs, humanize.Bytes(rep.Leftovers.Bytes), state)
		}
		if rep.OK() {
			fmt.Fprintln(e.stdout, "ok")
		}
	}
	remaining := 0
	for _, p := range rep.Problems {
		if !p.Repaired {
			remaining++
		}
	}
	if remaining > 0 {
		return withCode(exitFailure, fmt.Errorf("%d problem%s found; 'dragonx cache verify -repair' removes what is bad so the stages rerun", remaining, plural(remaining)))
	}
	return nil
}

func cacheGC(ctx context.Context, e *env, fs *flag.FlagSet, f *expFlags, args []string) error {
	var keep stringList
	var maxAge, maxSize string
	var dry bool
	fs.Var(&keep, "keep", "never evict what the experiment `FILE.hcl` uses now (repeatable)")
	fs.StringVar(&maxAge, "max-age", "30d", "evict entries unused for longer than this (e.g. 12h, 30d; 0 for no limit)")
	fs.StringVar(&maxSize, "max-size", "0", "then evict the least recently used entries beyond this total (e.g. 500MB, 20GB; 0 for no limit)")
	fs.BoolVar(&dry, "dry-run", false, "say what would be removed without removing it")
	dropRuns := fs.String("drop-runs", "0", "first remove the recorded runs older than this (e.g. 90d; 0: keep every run); gc keeps what the remaining runs name")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("cache gc takes no arguments (name experiments to keep with -keep)")
	}
	age, err := parseAge(maxAge)
	if err != nil {
		return usagef("-max-age: %v", err)
	}
	size, err := parseSize(maxSize)
	if err != nil {
		return usagef("-max-size: %v", err)
	}
	first := ""
	if len(keep) > 0 {
		first = keep[0]
	}
	runAge, err := parseAge(*dropRuns)
	if err != nil {
		return usagef("-drop-runs: %v", err)
	}
	store, cacheDir, err := openCacheFor(ctx, e, f, first)
	if err != nil {
		return err
	}
	defer store.Close()
	keys, err := runKeys(e, runlog.Dir(cacheDir), runAge, *dropRuns, dry)
	if err != nil {
		return err
	}
	for _, file := range keep {
		ks, err := currentKeys(ctx, e, f, store, file, nil)
		if err != nil {
			return err
		}
		for k := range ks {
			keys = append(keys, k)
		}
	}
	rep, err := cache.GC(ctx, store, cache.GCOptions{Keep: keys, MaxAge: age, MaxSize: size, DryRun: dry})
	if err != nil {
		return err
	}
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	for _, ev := range rep.Evicted {
		fmt.Fprintf(e.stdout, "  %s %s %s (%s)\n", verb, cache.Printable(ev.Stage), ev.Key.Short(), cache.Printable(ev.Reason))
	}
	fmt.Fprintf(e.stdout, "gc: %d of %d stage runs evicted, %d kept (%s); %s %d blobs (%s)\n",
		len(rep.Evicted), rep.Manifests, rep.Kept, humanize.Bytes(rep.KeptBytes), verb, rep.BlobsRemoved, humanize.Bytes(rep.BytesRemoved))
	if rep.Leftovers.Blobs > 0 {
		fmt.Fprintf(e.stdout, "gc: %s %d interrupted writes (%s)\n", verb, rep.Leftovers.Blobs, humanize.Bytes(rep.Leftovers.Bytes))
	}
	if !dry && rep.DiskBefore >= 0 {
		fmt.Fprintf(e.stdout, "gc: on disk %s before, %s after\n", humanize.Bytes(rep.DiskBefore), humanize.Bytes(rep.DiskAfter))
	}
	if rep.OverSize {
		fmt.Fprintln(e.stdout, "gc: the entries the -keep experiments use exceed -max-size on their own")
	}
	return nil
}

func cacheExport(ctx context.Context, e *env, fs *flag.FlagSet, f *expFlags, args []string) error {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("want BUNDLE FILE.hcl [STAGE...]")
	}
	bundle, file := pos[0], pos[1]
	targets, err := parseTargets(pos[2:])
	if err != nil {
		return err
	}
	store, _, err := openCacheFor(ctx, e, f, file)
	if err != nil {
		return err
	}
	defer store.Close()
	cur, err := currentKeys(ctx, e, f, store, file, targets)
	if err != nil {
		return err
	}
	if len(cur) == 0 {
		return errors.New("no stage of the selection is cached; run the experiment first")
	}
	keys := make([]cache.Key, 0, len(cur))
	for k := range cur {
		keys = append(keys, k)
	}
	rep, err := cache.ExportFile(ctx, store, keys, bundle, bytesProgress(e, "export"))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "exported %d stage runs, %d blobs (%s) to %s\n", rep.Manifests, rep.Blobs, humanize.Bytes(rep.Bytes), bundle)
	return nil
}

func cacheImport(ctx context.Context, e *env, fs *flag.FlagSet, f *expFlags, args []string) error {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want BUNDLE")
	}
	store, _, err := openCacheFor(ctx, e, f, "")
	if err != nil {
		return err
	}
	defer store.Close()
	rep, err := cache.ImportFile(ctx, store, pos[0], bytesProgress(e, "import"))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "imported %d stage runs (%d already present), %d blobs (%s; %d already present)\n",
		rep.Manifests, rep.ManifestsPresent, rep.Blobs, humanize.Bytes(rep.Bytes), rep.BlobsPresent)
	return nil
}

// bytesProgress renders a long cache operation's progress on stderr.
func bytesProgress(e *env, name string) progress.Reporter {
	return &progress.Writer{W: e.stderr, Name: name, Bar: e.isTerminal}
}

// runKeys removes the recorded runs older than age (none when age is 0;
// under dryRun it only says how many it would) and returns the keys that
// the remaining runs name, which gc keeps.
func runKeys(e *env, dir string, age time.Duration, ageText string, dryRun bool) ([]cache.Key, error) {
	l, err := runlog.List(dir)
	if err != nil {
		return nil, err
	}
	cut := time.Now().Add(-age)
	var keys []cache.Key
	old := 0
	for _, r := range l.Entries {
		if age > 0 && r.Started.Before(cut) {
			old++
			continue
		}
		keys = append(keys, r.Keys()...)
	}
	switch {
	case old > 0 && dryRun:
		fmt.Fprintf(e.stdout, "gc: would remove %d recorded run%s older than %s\n", old, plural(old), ageText)
	case old > 0:
		n, err := runlog.Remove(dir, cut)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(e.stdout, "gc: removed %d recorded run%s older than %s\n", n, plural(n), ageText)
	}
	return keys, nil
}

// parseAge parses a duration that may use d for days: 30d, 12h, 0.
func parseAge(s string) (time.Duration, error) {
	if s == "0" || s == "" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad age %q", s)
		}
		return time.Duration(n * 24 * float64(time.Hour)), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad age %q (use e.g. 30d or 12h)", s)
	}
	return v, nil
}

// parseSize parses a byte count with an optional unit: 500MB, 20GB, 1.5TiB.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToUpper(s))
	units := []struct {
		suffix string
		mult   float64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(v), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q (use e.g. 500MB or 20GB)", s)
	}
	return int64(n * mult), nil
}
