package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"dragonx/internal/progress"
	"dragonx/internal/safeio"
	"dragonx/internal/torchbin"
	"dragonx/kernels/verdict"
	"dragonx/stages/job"
)

// A stage with shards > 1 runs one job per shard at once (in dragonx-torch
// with policies, in this process otherwise), each on the tasks of its
// workloads (tunedb.ShardOf), resuming from its own directory of the state
// directory. A shard writes its groups to shard-I-of-N.jsonl in the
// working directory; Run merges them into the outputs, which are the same
// bytes for any number of shards.

// shardName names shard i of n's state directory and result file.
func shardName(i, n int) string { return fmt.Sprintf("shard-%d-of-%d", i, n) }

// shardHeader is a shard file's first line: what the merge needs besides
// the groups.
type shardHeader struct {
	Source string          `json:"source"`
	Phases []verdict.Phase `json:"phases"`
}

// writeShard writes shard i of n's groups (every group of the state) into
// dir/shard-I-of-N.jsonl.
func writeShard(dir string, i, n int, source string, phases []verdict.Phase, st *state) error {
	st.mu.Lock()
	keys := make([]string, 0, len(st.groups))
	for k := range st.groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	b, err := json.Marshal(shardHeader{Source: source, Phases: phases})
	if err == nil {
		buf.Write(append(b, '\n'))
		for _, k := range keys {
			if b, err = json.Marshal(groupOf(st.groups[k])); err != nil {
				break
			}
			buf.Write(append(b, '\n'))
		}
	}
	st.mu.Unlock()
	if err != nil {
		return fmt.Errorf("shard %d of %d: %w", i, n, err)
	}
	return safeio.WriteAtomic(filepath.Join(dir, shardName(i, n)+".jsonl"), func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err })
}

// readShards reads the n shard files in dir into one set of groups, with
// the source and the judge's phases (those of a shard that had tasks).
func readShards(dir string, n int) (map[string][]*Attempt, string, []verdict.Phase, error) {
	groups := map[string][]*Attempt{}
	source := ""
	var phases []verdict.Phase
	for i := range n {
		path := filepath.Join(dir, shardName(i, n)+".jsonl")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, "", nil, fmt.Errorf("shard %d of %d ended without its result: %w", i, n, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 256<<20)
		for k := 0; sc.Scan(); k++ {
			if k == 0 {
				var h shardHeader
				if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
					return nil, "", nil, fmt.Errorf("%s: %w", path, err)
				}
				source = h.Source
				if phases == nil {
					phases = h.Phases
				}
				continue
			}
			var g stateGroup
			if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
				return nil, "", nil, fmt.Errorf("%s:%d: %w", path, k+1, err)
			}
			groups[groupKey(g.Policy, g.Decoding, g.Task, g.Index)] = g.Attempts
		}
		if err := sc.Err(); err != nil {
			return nil, "", nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return groups, source, phases, nil
}

// runShards runs the n shard jobs of spec at once (in dragonx-torch when bin
// is set, in this process otherwise, with newLoader's models), reporting their progress together,
// and merges their results into the outputs.
func runShards(ctx context.Context, sp Spec, spec []byte, dir, stateDir, bin string, newLoader NewLoader, n int, rep progress.Reporter, logw io.Writer) error {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lw := &lockedWriter{w: logw}
	agg := &shardProgress{rep: rep, done: make([]int64, n), total: make([]int64, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := &job.Job{Kind: "bench", Version: Version, Spec: spec, Dir: dir, StateDir: stateDir, Shard: i, Shards: n}
			r := progress.Func(func(e progress.Event) { agg.report(i, e) })
			var err error
			if bin == "" {
				err = runJob(ctx, j, &job.Env{Progress: r, Log: lw}, newLoader)
			} else {
				err = job.Run(ctx, j, job.Options{Binary: bin, Env: torchbin.Env(os.Getenv), Progress: r, Log: lw, Grace: interruptGrace})
			}
			if err != nil {
				errs[i] = fmt.Errorf("shard %d of %d: %w", i, n, err)
				cancel() // one failed shard fails the stage: stop the others
			}
		}()
	}
	wg.Wait()
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	if first != nil {
		return first
	}
	groups, source, phases, err := readShards(dir, n)
	if err != nil {
		return err
	}
	path := func(name string) string { return filepath.Join(dir, filepath.FromSlash(sp.Files[name])) }
	tasks, err := ReadTasks(path("construction_tasks"), path("refinement_prompts"), sp.Tasks, sp.TaskPick)
	if err != nil {
		return err
	}
	get := func(policy, mode string, t *Task) ([]*Attempt, bool) {
		g, ok := groups[groupKey(policy, mode, t.Kind, t.Index)]
		return g, ok
	}
	logf := func(format string, args ...any) { fmt.Fprintf(lw, "bench: "+format+"\n", args...) }
	if err := finish(dir, sp, tasks, get, source, phases, logf, start); err != nil {
		return err
	}
	for i := range n {
		os.Remove(filepath.Join(dir, shardName(i, n)+".jsonl"))
	}
	return nil
}

// lockedWriter serialises the shards' log writes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// shardProgress sums the shards' progress.
type shardProgress struct {
	mu          sync.Mutex
	rep         progress.Reporter
	done, total []int64
}

func (s *shardProgress) report(i int, e progress.Event) {
	s.mu.Lock()
	s.done[i], s.total[i] = e.Done, e.Total
	var d, t int64
	for k := range s.done {
		d += s.done[k]
		t += s.total[k]
	}
	s.mu.Unlock()
	s.rep.Report(progress.Event{Done: d, Total: t, Unit: e.Unit, Note: fmt.Sprintf("shard %d: %s", i, e.Note)})
}
