package rl

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"dragonx/kernels/dataset"
	"dragonx/kernels/workload"
	"dragonx/stages/sft"
)

// Task is a training task RL samples for: an encoded prompt of the encode
// stage's train.jsonl, with the workload and the scripts of the dataset
// example it was encoded from.
type Task struct {
	// ID is the task's kind and its index among the training examples of
	// that kind, from 0 ("construction/4", "refinement/0").
	ID     string
	Kind   string
	Hash   string
	Family string
	Spec   *workload.Spec
	Prompt []int
	// Source is a refinement example's source script (nil for a
	// construction example).
	Source *dataset.Script
	// Best is the fastest target script of the dataset's examples of the
	// workload, construction and refinement alike.
	Best *dataset.Script
	// Format is the format the policy answers the prompt in (its record's).
	Format sft.Format
}

// Task kinds, as in train.jsonl.
const (
	KindConstruction = "construction"
	KindRefinement   = "refinement"
)

// readDataset reads one of harvest's training files with read
// (dataset.Read of its example type).
func readDataset[T any](path string, read func(io.Reader) ([]dataset.Entry[T], error)) ([]dataset.Entry[T], error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f)
}

// ReadTasks reads the training tasks: train.jsonl's records (sft.ReadTrain)
// and harvest's construction and refinement files they were encoded
// from. encode writes train.jsonl in the files' order (construction, then
// refinement), so record i is example i; each pair must agree on the task
// kind and the workload hash.
func ReadTasks(trainPath, constructionPath, refinementPath string, vocabSize int) ([]Task, error) {
	f, err := os.Open(trainPath)
	if err != nil {
		return nil, err
	}
	recs, err := sft.ReadTrain(f, "train.jsonl", vocabSize)
	f.Close()
	if err != nil {
		return nil, err
	}
	cons, err := readDataset(constructionPath, dataset.Read[dataset.Construction])
	if err != nil {
		return nil, fmt.Errorf("construction.jsonl: %w", err)
	}
	refs, err := readDataset(refinementPath, dataset.Read[dataset.Refinement])
	if err != nil {
		return nil, fmt.Errorf("refinement.jsonl: %w", err)
	}
	return MatchTasks(recs, cons, refs)
}

// MatchTasks pairs train.jsonl's records with the dataset examples (see
// ReadTasks).
func MatchTasks(recs []sft.TrainRecord, cons []dataset.Entry[dataset.Construction], refs []dataset.Entry[dataset.Refinement]) ([]Task, error) {
	if len(recs) != len(cons)+len(refs) {
		return nil, fmt.Errorf("train.jsonl has %d records, the dataset %d construction and %d refinement examples: not the files it was encoded from", len(recs), len(cons), len(refs))
	}
	best := map[string]*dataset.Script{}
	keepBest := func(hash string, s *dataset.Script) {
		if b, ok := best[hash]; !ok || s.LatencyS < b.LatencyS {
			best[hash] = s
		}
	}
	for _, c := range cons {
		keepBest(c.Value.Hash, &c.Value.Target)
	}
	for _, r := range refs {
		keepBest(r.Value.Hash, &r.Value.Target)
	}
	format, err := sft.TrainFormat(recs)
	if err != nil {
		return nil, err
	}
	tasks := make([]Task, len(recs))
	for i, rec := range recs {
		var w dataset.Workload
		var src *dataset.Script
		kind, index, line := KindConstruction, i, 0
		if i < len(cons) {
			w, line = cons[i].Value.Workload, cons[i].Line
		} else {
			index = i - len(cons)
			kind, w, line = KindRefinement, refs[index].Value.Workload, refs[index].Line
			src = &refs[index].Value.Source
		}
		if rec.Task != kind || rec.Hash != w.Hash {
			return nil, fmt.Errorf("train.jsonl:%d is a %s example of workload %s, but %s.jsonl:%d one of %s: train.jsonl was not encoded from these files",
				i+1, rec.Task, short(rec.Hash), kind, line, short(w.Hash))
		}
		tasks[i] = Task{ID: fmt.Sprintf("%s/%d", kind, index), Kind: kind, Hash: w.Hash, Family: w.Family, Spec: w.Spec,
			Prompt: rec.Prompt, Source: src, Best: best[w.Hash], Format: format}
	}
	return tasks, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// MixTasks orders the tasks for the trainer's prompt list: construction
// tasks make share of it and refinement tasks the rest, interleaved evenly
// (position k is a construction task when floor((k+1)·share) passes an
// integer), each kind's tasks in an order shuffled by seed and repeated,
// and the list long enough for every task to appear. A kind without tasks
// leaves the other alone.
func MixTasks(tasks []Task, share float64, seed int64) []Task {
	var cons, refs []Task
	for _, t := range tasks {
		if t.Kind == KindConstruction {
			cons = append(cons, t)
		} else {
			refs = append(refs, t)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x726c206d6978))
	rng.Shuffle(len(cons), func(i, j int) { cons[i], cons[j] = cons[j], cons[i] })
	rng.Shuffle(len(refs), func(i, j int) { refs[i], refs[j] = refs[j], refs[i] })
	switch {
	case len(cons) == 0 || share <= 0:
		if len(refs) == 0 {
			return cons
		}
		return refs
	case len(refs) == 0 || share >= 1:
		return cons
	}
	n := int(max(math.Ceil(float64(len(cons))/share), math.Ceil(float64(len(refs))/(1-share))))
	out := make([]Task, 0, n)
	var ci, ri int
	for k := range n {
		if spread(share, k) {
			out = append(out, cons[ci%len(cons)])
			ci++
		} else {
			out = append(out, refs[ri%len(refs)])
			ri++
		}
	}
	return out
}
