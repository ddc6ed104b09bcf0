package netbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"dragonx/kernels/corpus"
	"dragonx/stages"
	"dragonx/stages/bench"
)

// The bench block runs in benchDir of the working directory, on copies of
// its inputs kept to the subgraphs: the construction tasks whose
// structural hash is a subgraph's (the first of each), renumbered from 0;
// no refinement prompt; the held-out prompts of those tasks, renumbered
// alike. The bench kind does the rest (sampling, judging, baselines).
const (
	benchDir   = "bench"
	benchInDir = "bench-in"
)

// benchResult is what the bench block gave: its attempts by subgraph hash
// and its wall time.
type benchResult struct {
	attempts map[string][]*bench.Attempt // structural hash -> the attempts at its task
	wall     time.Duration
}

// runBench runs the bench block on the subgraphs of every network.
func (s *Stage) runBench(ctx context.Context, rc *stages.RunContext, nets []netSubgraphs) (*benchResult, error) {
	want := map[string]string{} // structural hash -> "network layer", for errors
	for _, n := range nets {
		for _, sg := range n.subgraphs {
			if _, ok := want[sg.Hash]; !ok {
				want[sg.Hash] = n.name + " " + sg.Layers[0]
			}
		}
	}
	sub := *rc
	sub.Dir = filepath.Join(rc.Dir, benchDir)
	if rc.StateDir != "" {
		sub.StateDir = filepath.Join(rc.StateDir, benchDir)
	}
	inDir := filepath.Join(rc.Dir, benchInDir)
	for _, d := range []string{sub.Dir, inDir, sub.StateDir} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	var (
		once     sync.Once
		onceErr  error
		newIndex map[int]int    // original construction index -> kept index
		hashOf   map[int]string // kept index -> structural hash
		consData []byte
	)
	tasks := func(ctx context.Context) error {
		once.Do(func() {
			orig := filepath.Join(inDir, "test_construction.jsonl")
			if onceErr = rc.Materialize(ctx, "construction_tasks", orig); onceErr != nil {
				return
			}
			consData, newIndex, hashOf, onceErr = keepTasks(orig, want)
		})
		return onceErr
	}
	sub.Materialize = func(ctx context.Context, input, dst string) error {
		switch input {
		case "construction_tasks":
			if err := tasks(ctx); err != nil {
				return err
			}
			return os.WriteFile(dst, consData, 0o644)
		case "refinement_prompts":
			return os.WriteFile(dst, nil, 0o644)
		case "heldout":
			if err := tasks(ctx); err != nil {
				return err
			}
			orig := filepath.Join(inDir, "heldout.jsonl")
			if err := rc.Materialize(ctx, input, orig); err != nil {
				return err
			}
			b, err := keepHeldout(orig, newIndex)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		}
		return rc.Materialize(ctx, input, dst)
	}
	start := time.Now()
	if err := s.bench.Run(ctx, &sub); err != nil {
		return nil, err
	}
	res := &benchResult{attempts: map[string][]*bench.Attempt{}, wall: time.Since(start)}
	b, err := os.ReadFile(filepath.Join(sub.Dir, bench.AttemptsFile))
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var a bench.Attempt
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, fmt.Errorf("the bench's %s line %d: %w", bench.AttemptsFile, line, err)
		}
		h, ok := hashOf[a.Index]
		if a.Task != bench.KindConstruction || !ok {
			return nil, fmt.Errorf("the bench's %s line %d: %s task %d is none of the subgraphs' tasks", bench.AttemptsFile, line, a.Task, a.Index)
		}
		res.attempts[h] = append(res.attempts[h], &a)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("the bench's %s: %w", bench.AttemptsFile, err)
	}
	return res, nil
}

// keepTasks keeps the lines of a construction-task file (harvest's
// test_construction.jsonl) whose struct_hash is one of want's, the first
// of each, in file order; every hash of want must be there.
func keepTasks(path string, want map[string]string) ([]byte, map[int]int, map[int]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	var out bytes.Buffer
	newIndex, hashOf, seen := map[int]int{}, map[int]string{}, map[string]bool{}
	i := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var t struct {
			StructHash string `json:"struct_hash"`
		}
		if err := json.Unmarshal(line, &t); err != nil {
			return nil, nil, nil, fmt.Errorf("the construction tasks, task %d: %w", i, err)
		}
		if _, ok := want[t.StructHash]; ok && !seen[t.StructHash] {
			seen[t.StructHash] = true
			newIndex[i] = len(hashOf)
			hashOf[len(hashOf)] = t.StructHash
			out.Write(line)
			out.WriteByte('\n')
		}
		i++
	}
	var missing []string
	for h, what := range want {
		if !seen[h] {
			missing = append(missing, what)
		}
	}
	if len(missing) > 0 {
		return nil, nil, nil, fmt.Errorf("the construction tasks (%d) hold no task of %d subgraphs (%s): hold the networks out in workloads and raise harvest's test_construction until their variant's layers are among the test tasks", i, len(missing), strings.Join(sortedStrings(missing), "; "))
	}
	return out.Bytes(), newIndex, hashOf, nil
}

// keepHeldout keeps the construction records of heldout.jsonl whose index
// newIndex keeps, renumbered; every other field passes unchanged.
func keepHeldout(path string, newIndex map[int]int) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for n, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("heldout.jsonl line %d: %w", n+1, err)
		}
		var task string
		var index int
		if err := json.Unmarshal(rec["task"], &task); err != nil {
			return nil, fmt.Errorf("heldout.jsonl line %d: task: %w", n+1, err)
		}
		if err := json.Unmarshal(rec["index"], &index); err != nil {
			return nil, fmt.Errorf("heldout.jsonl line %d: index: %w", n+1, err)
		}
		k, ok := newIndex[index]
		if task != bench.KindConstruction || !ok {
			continue
		}
		rec["index"] = json.RawMessage(fmt.Sprint(k))
		nb, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		out.Write(nb)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// netSubgraphs is one network's subgraphs at its variant.
type netSubgraphs struct {
	name, variant string
	subgraphs     []corpus.Subgraph
}
