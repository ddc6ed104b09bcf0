package taskset

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"dragonx/kernels/workload"
)

//go:embed data/*.json
var dataFS embed.FS

// Statuses and reasons of a task.
const (
	Covered    = "covered"
	NotCovered = "not_covered"

	// NoFamily: no workload family computes the operator.
	NoFamily = "no_family"
	// NotAnExpression: the operator is not a tensor expression of one
	// block nest (a scan).
	NotAnExpression = "not_an_expression"
	// TooLarge: a family computes it, but the shape is beyond what the
	// numeric gate judges in reasonable time (see Limits).
	TooLarge = "too_large"
)

// Reasons lists the reasons a task may be not covered, in the order
// reports list them.
var Reasons = []string{NoFamily, NotAnExpression, TooLarge}

// MaxBytes is the most a task set file may hold.
const MaxBytes = 1 << 20

// Source names where a set's problems come from.
type Source struct {
	Repository string `json:"repository"`
	Commit     string `json:"commit"`
	Folder     string `json:"folder"`
	Note       string `json:"note"`
}

// Task is one problem of a set.
type Task struct {
	// Problem is the problem's number in its set; File its file at the
	// source's commit.
	Problem int    `json:"problem"`
	File    string `json:"file"`
	// Operator and Shapes say what the problem computes, in words.
	Operator string `json:"operator"`
	Shapes   string `json:"shapes"`
	// Status is Covered or NotCovered; Why the reason when not covered.
	Status string `json:"status"`
	Why    string `json:"why,omitempty"`
	// Spec is the workload spec: what a covered task is benched as, or
	// the spec a too_large task would be (absent for the other reasons).
	Spec json.RawMessage `json:"spec,omitempty"`
	// Note says how the family differs from the problem (layout), or why
	// the task is not covered.
	Note string `json:"note"`

	spec *workload.Spec
}

// Workload returns the parsed spec (nil when the task has none).
func (t *Task) Workload() *workload.Spec { return t.spec }

// Set is a task set.
type Set struct {
	About  string  `json:"about"`
	Name   string  `json:"name"`
	Source Source  `json:"source"`
	Tasks  []*Task `json:"tasks"`
}

// Covered returns the covered tasks in problem order.
func (s *Set) Covered() []*Task {
	var out []*Task
	for _, t := range s.Tasks {
		if t.Status == Covered {
			out = append(out, t)
		}
	}
	return out
}

// Counts is a set's tally: covered, and not covered by reason.
type Counts struct {
	Tasks, Covered int
	NotCovered     map[string]int
	// Families counts the covered tasks by workload family.
	Families map[string]int
}

// Count tallies s.
func (s *Set) Count() Counts {
	c := Counts{Tasks: len(s.Tasks), NotCovered: map[string]int{}, Families: map[string]int{}}
	for _, t := range s.Tasks {
		if t.Status == Covered {
			c.Covered++
			if t.spec != nil {
				c.Families[t.spec.Family()]++
			}
		} else {
			c.NotCovered[t.Why]++
		}
	}
	return c
}

// Names lists the embedded sets.
func Names() []string {
	ents, err := dataFS.ReadDir("data")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	return out
}

// Load reads the embedded set name ("kernelbench-level1").
func Load(name string) (*Set, error) {
	data, err := dataFS.ReadFile("data/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("taskset: no set %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	s, err := Read(data)
	if err != nil {
		return nil, fmt.Errorf("taskset %s: %w", name, err)
	}
	if s.Name != name {
		return nil, fmt.Errorf("taskset %s: the file names itself %q", name, s.Name)
	}
	return s, nil
}

// Read decodes and checks a task set: known fields only; a name, a source
// with a repository and a 40-digit commit; problems numbered 1 to n, each
// once, in order, each file named "<problem>_..."; a covered task has a
// valid workload spec and no reason; a not covered task has a known reason,
// and a spec exactly when the reason is too_large (a spec that need not
// pass validation: being too large may be why); every task has an operator,
// shapes and a note.
func Read(data []byte) (*Set, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("taskset: %d bytes, more than %d", len(data), MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Set
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("taskset: %w", err)
	}
	if dec.More() {
		return nil, errors.New("taskset: data after the set")
	}
	if s.Name == "" {
		return nil, errors.New("taskset: no name")
	}
	if s.Source.Repository == "" || !isCommit(s.Source.Commit) {
		return nil, fmt.Errorf("taskset %s: the source needs a repository and a 40-digit commit (got %q, %q)", s.Name, s.Source.Repository, s.Source.Commit)
	}
	if len(s.Tasks) == 0 {
		return nil, fmt.Errorf("taskset %s: no tasks", s.Name)
	}
	for i, t := range s.Tasks {
		if t == nil {
			return nil, fmt.Errorf("taskset %s: task %d is null", s.Name, i+1)
		}
		if err := t.check(i + 1); err != nil {
			return nil, fmt.Errorf("taskset %s: problem %d (%s): %w", s.Name, t.Problem, t.File, err)
		}
	}
	return &s, nil
}

func (t *Task) check(want int) error {
	if t.Problem != want {
		return fmt.Errorf("numbered %d where %d is due (problems are 1 to n, in order)", t.Problem, want)
	}
	if !strings.HasPrefix(t.File, strconv.Itoa(t.Problem)+"_") {
		return fmt.Errorf("file %q does not start with %d_", t.File, t.Problem)
	}
	if t.Operator == "" || t.Shapes == "" || t.Note == "" {
		return errors.New("operator, shapes and note are required")
	}
	hasSpec := len(t.Spec) > 0 && string(t.Spec) != "null"
	switch t.Status {
	case Covered:
		if t.Why != "" {
			return fmt.Errorf("covered, with a reason %q", t.Why)
		}
		if !hasSpec {
			return errors.New("covered, without a spec")
		}
		sp, err := workload.Parse(t.Spec)
		if err != nil {
			return err
		}
		t.spec = sp
	case NotCovered:
		if !slices.Contains(Reasons, t.Why) {
			return fmt.Errorf("not covered: reason %q (known: %s)", t.Why, strings.Join(Reasons, ", "))
		}
		if hasSpec != (t.Why == TooLarge) {
			return fmt.Errorf("not covered (%s): a spec is given exactly for %s", t.Why, TooLarge)
		}
		if hasSpec {
			t.spec, _ = workload.Parse(t.Spec) // nil when too large even to validate
		}
	default:
		return fmt.Errorf("status %q (want %s or %s)", t.Status, Covered, NotCovered)
	}
	return nil
}

func isCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
