package bench

import (
	"fmt"
	"io"
	"os"

	"dragonx/kernels/dataset"
	"dragonx/kernels/taskset"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
	"dragonx/stages/encode"
	"dragonx/stages/sft"
)

// Task kinds, as in heldout.jsonl.
const (
	KindConstruction = "construction"
	KindRefinement   = "refinement"
)

// Task is a held-out task: a construction task or a refinement prompt of
// harvest's test files, with its encoded prompt (from heldout.jsonl, when
// policies sample).
type Task struct {
	Kind   string
	Index  int
	Hash   string
	Family string
	Spec   *workload.Spec
	// Source is a refinement prompt's script ("" for construction).
	Source string
	// Prompt is the encoded prompt (nil without heldout.jsonl).
	Prompt []int
}

// Name is the task's name in logs and errors ("construction/3").
func (t *Task) Name() string { return fmt.Sprintf("%s/%d", t.Kind, t.Index) }

func readEntries[T any](path string, read func(io.Reader) ([]dataset.Entry[T], error)) ([]dataset.Entry[T], error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f)
}

// The values of the bench's task_pick.
const (
	TaskPickFirst  = "first"  // the first n tasks of each file
	TaskPickSpread = "spread" // n tasks evenly spaced through each file
)

// pick returns the positions of the n tasks (0: all) that pick chooses
// among total, in file order: the first n, or with TaskPickSpread the
// positions i*total/n (harvest's test files are grouped by family, so
// that the first few tasks are of two or three families).
func pick(total, n int, how string) []int {
	if n <= 0 || n > total {
		n = total
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
		if how == TaskPickSpread {
			out[i] = i * total / n
		}
	}
	return out
}

// ReadTasks reads n tasks (0: all) of harvest's test files, chosen as pick
// says (TaskPickFirst or "": the first; TaskPickSpread), in file order,
// construction tasks first. A task's Index is its position in its file.
func ReadTasks(constructionPath, refinementPath string, n int, how string) ([]*Task, error) {
	cons, err := readEntries(constructionPath, dataset.Read[dataset.ConstructionTask])
	if err != nil {
		return nil, fmt.Errorf("the construction tasks: %w", err)
	}
	refs, err := readEntries(refinementPath, dataset.Read[dataset.RefinementPrompt])
	if err != nil {
		return nil, fmt.Errorf("the refinement prompts: %w", err)
	}
	var tasks []*Task
	for _, i := range pick(len(cons), n, how) {
		c := cons[i]
		w := c.Value.Workload
		tasks = append(tasks, &Task{Kind: KindConstruction, Index: i, Hash: w.Hash, Family: w.Family, Spec: w.Spec})
	}
	for _, i := range pick(len(refs), n, how) {
		r := refs[i]
		w := r.Value.Workload
		tasks = append(tasks, &Task{Kind: KindRefinement, Index: i, Hash: w.Hash, Family: w.Family, Spec: w.Spec, Source: r.Value.Source.Script})
	}
	return tasks, nil
}

// AttachPrompts gives each task its prompt from heldout.jsonl's records
// (encode writes the task of index i of each test file as the record of
// that kind and index); a task without a record, or whose record is of
// another workload, is an error: heldout.jsonl was not encoded from these
// test files.
func AttachPrompts(tasks []*Task, held []sft.HeldoutRecord) error {
	by := map[taskKey]*sft.HeldoutRecord{}
	for i := range held {
		h := &held[i]
		by[taskKey{h.Task, h.Index}] = h
	}
	for _, t := range tasks {
		h, ok := by[taskKey{t.Kind, t.Index}]
		if !ok {
			return fmt.Errorf("heldout.jsonl has no %s task %d: it was not encoded from these test files", t.Kind, t.Index)
		}
		if h.Hash != t.Hash {
			return fmt.Errorf("heldout.jsonl's %s task %d is of workload %.12s, the test file's of %.12s: it was not encoded from these test files", t.Kind, t.Index, h.Hash, t.Hash)
		}
		t.Prompt = h.Prompt
	}
	return nil
}

// OutsideTasks returns the first n (0: all) covered tasks of an outside
// task set (kernels/taskset) as construction tasks: Index is the task's
// position among the set's covered tasks, in problem order.
func OutsideTasks(name string, n int) ([]*Task, error) {
	set, err := taskset.Load(name)
	if err != nil {
		return nil, err
	}
	var tasks []*Task
	for i, t := range set.Covered() {
		if n > 0 && i >= n {
			break
		}
		sp := t.Workload()
		tasks = append(tasks, &Task{Kind: KindConstruction, Index: i, Hash: sp.Hash(), Family: sp.Family(), Spec: sp})
	}
	return tasks, nil
}

// BuildPrompts gives each task the prompt encode would give it as a
// held-out construction task in format (encode.ConstructionPrompt, or
// encode.DecisionsConstructionPrompt): for tasks from outside the harvest,
// which heldout.jsonl does not hold.
func BuildPrompts(tasks []*Task, voc *vocab.Vocab, format sft.Format) error {
	for _, t := range tasks {
		f, err := t.Spec.Build()
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name(), err)
		}
		if format.Streams() {
			t.Prompt, err = encode.DecisionsConstructionPrompt(voc, t.Spec, f)
		} else {
			t.Prompt, err = encode.ConstructionPrompt(voc, f)
		}
		if err != nil {
			return fmt.Errorf("%s: its prompt: %w", t.Name(), err)
		}
	}
	return nil
}
