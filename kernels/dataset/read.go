package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"dragonx/internal/safeio"
)

// MaxLineBytes bounds one line of the files Write writes (a kernel text
// and one or two scripts with their trace JSON: a few KB to tens of KB).
const MaxLineBytes = 64 << 20

// Entry is one example read from a JSON-lines file, with the line it was
// on (from 1), so that a later check can name it.
type Entry[T any] struct {
	Line  int
	Value *T
}

// checker is implemented by the four example types.
type checker[T any] interface {
	*T
	check() error
}

// Read reads one of the files Write writes (T is Construction, Refinement,
// ConstructionTask or RefinementPrompt): one JSON object a line, blank
// lines skipped. Every line must decode into T and carry what an example
// of that file needs (a workload spec whose hash is the line's hash, its
// family, a kernel text, scripts with a trace and a positive finite
// latency); the error names the first line that does not.
func Read[T any, P checker[T]](r io.Reader) ([]Entry[T], error) {
	var out []Entry[T]
	err := Scan[T, P](r, func(e Entry[T]) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Scan reads a file as Read does, but calls fn with each entry in turn
// instead of holding them all: memory stays that of one line. An error
// from fn stops the scan and is returned as is.
func Scan[T any, P checker[T]](r io.Reader, fn func(Entry[T]) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		line, err := safeio.ReadLine(br, MaxLineBytes)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("dataset: line %d: %w", n, err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			v := new(T)
			if err := json.Unmarshal(t, v); err != nil {
				return fmt.Errorf("dataset: line %d: %w", n, err)
			}
			if err := P(v).check(); err != nil {
				return fmt.Errorf("dataset: line %d: %w", n, err)
			}
			if err := fn(Entry[T]{Line: n, Value: v}); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

func (w *Workload) check() error {
	switch {
	case w.Spec == nil:
		return errors.New("no workload spec")
	case w.Hash != w.Spec.Hash():
		return fmt.Errorf("hash %q is not the hash of the workload spec (%s)", w.Hash, w.Spec.Hash())
	case w.Family != w.Spec.Family():
		return fmt.Errorf("family %q is not the workload's family %s", w.Family, w.Spec.Family())
	case w.Kernel == "":
		return errors.New("no kernel text")
	case len(w.StructHash) != 16:
		return fmt.Errorf("struct_hash %q: want 16 hex digits", w.StructHash)
	}
	return nil
}

func (s *Script) check(what string) error {
	switch {
	case s.Script == "":
		return fmt.Errorf("%s: no script", what)
	case len(bytes.TrimSpace(s.Trace)) == 0 || bytes.Equal(bytes.TrimSpace(s.Trace), []byte("null")):
		return fmt.Errorf("%s: no trace", what)
	case !(s.LatencyS > 0) || math.IsInf(s.LatencyS, 0):
		return fmt.Errorf("%s: latency_s %v: want a positive finite number", what, s.LatencyS)
	case s.LatencySource == "":
		return fmt.Errorf("%s: no latency_source", what)
	}
	return nil
}

func (c *Construction) check() error {
	if err := c.Workload.check(); err != nil {
		return err
	}
	return c.Target.check("target")
}

func (r *Refinement) check() error {
	if err := r.Workload.check(); err != nil {
		return err
	}
	if err := r.Source.check("source"); err != nil {
		return err
	}
	return r.Target.check("target")
}

func (t *ConstructionTask) check() error {
	if err := t.Workload.check(); err != nil {
		return err
	}
	if l := t.ReferenceLatencyS; l != nil && (!(*l > 0) || math.IsInf(*l, 0)) {
		return fmt.Errorf("reference_latency_s %v: want a positive finite number", *l)
	}
	return nil
}

func (p *RefinementPrompt) check() error {
	if err := p.Workload.check(); err != nil {
		return err
	}
	return p.Source.check("source")
}
