package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"dragonx/internal/progress"
	"dragonx/stages/cluster"
)

// Kind is a stage kind: a named, versioned recipe that decodes its own HCL
// body into a Stage. Kinds register themselves (Register) from init; package
// stages/all imports every kind.
type Kind interface {
	// Name is the value of the kind attribute, e.g. "exec".
	Name() string
	// Version changes whenever the kind's outputs would change for the same
	// parameters and inputs. It is part of every stage key.
	Version() string
	// Decode decodes a stage body (the block without kind and for_each)
	// into a Stage, reporting problems as diagnostics with source ranges.
	Decode(body hcl.Body, dc *DecodeContext) (Stage, hcl.Diagnostics)
}

// DecodeContext is what a Kind's Decode may use.
type DecodeContext struct {
	// Eval resolves var.*, local.*, each.*, stage.* and the functions.
	Eval *hcl.EvalContext
	// Dir is the directory of the experiment file; local paths are relative
	// to it.
	Dir string
	// Addr is the address of the instance being decoded.
	Addr Addr
	// DeclRange is the range of the stage block's header.
	DeclRange hcl.Range
}

// Stage is a decoded stage instance: typed parameters, inputs, declared
// outputs, and how to run it.
type Stage interface {
	// Params lists the decoded parameters that determine the outputs, in a
	// fixed order. Upstream outputs appear by reference (their digests enter
	// the key through Inputs). Params feed the key and `plan` explanations.
	Params() []Param
	// Inputs lists the artifacts the stage reads.
	Inputs() []Input
	// Outputs lists the outputs the stage produces, in a fixed order.
	Outputs() []OutputDecl
	// Run does the work in rc.Dir, a fresh private directory, and returns
	// nil once every declared output exists there at its Path.
	Run(ctx context.Context, rc *RunContext) error
}

// Param is one parameter line of a stage: a dotted name and its canonical
// value (JSON with sorted object keys).
type Param struct {
	Name  string
	Value string
}

// Input is one artifact a stage reads: an upstream output (Ref) or a local
// file or directory (Local, relative to the experiment file as written).
type Input struct {
	Name  string // unique within the stage, e.g. the path it is placed at
	Ref   *OutputRef
	Local string
	Range hcl.Range
}

// OutputDecl is one declared output: its name and the path, relative to the
// stage's working directory, where Run leaves it.
type OutputDecl struct {
	Name string
	Path string
}

// RunContext is what a running stage may use.
type RunContext struct {
	// Dir is the stage's fresh private working directory.
	Dir string
	// Log receives the stage's log; it is stored with the result and
	// replayed by `dragonx show`.
	Log io.Writer
	// Progress reports progress of long work.
	Progress progress.Reporter
	// Tmp is a private directory for the stage's temporary files (a
	// command's TMPDIR, a job file), beside Dir under the engine's work
	// root: removed with Dir, and by the next run when this one was
	// killed. "" outside the engine (tests).
	Tmp string
	// Materialize writes the named input (from Inputs) to dst, a path that
	// must not exist yet: a file or a directory, as the input is.
	Materialize func(ctx context.Context, input string, dst string) error
	// StateDir is a directory private to this stage key that survives an
	// interrupted or failed run and is removed once the result is stored:
	// where long work keeps what lets the next run resume (checkpoints,
	// finished shards). It may hold a previous attempt's files; a stage must
	// check them (they may be incomplete) before using them. "" when the
	// engine has no state root: the stage then cannot resume.
	StateDir string
	// Key is the stage key (hex), for naming and logs.
	Key string
	// Shards returns the executor that runs this stage's shards (the
	// stage's executor block, else the experiment's, else local), bound to
	// the stage key's work directory. Only sharded stages call it. nil when
	// the engine offers none.
	Shards func() (cluster.Executor, error)
	// Executor is the type of the executor block that applies to this
	// stage ("local" or "slurm": its own, else the experiment's), "" when
	// none is declared. A kind that can run its shards in-process (harvest)
	// does so when it is "", and through Shards otherwise.
	Executor string
	// Binary is the dragonx executable that a shard task runs as
	// `BINARY stage-job FILE` (package stages/job), at the path where the
	// executor's tasks see it: Engine.Cluster.Binary (the CLI: the
	// environment's DRAGONX_SHARD_TASK_BIN, else its own executable). ""
	// when the engine has none.
	Binary string
}

var registry = struct {
	sync.Mutex
	kinds map[string]Kind
}{kinds: map[string]Kind{}}

// Register makes a kind available to experiments. It panics if the name is
// empty or already registered: that is a programming error.
func Register(k Kind) {
	registry.Lock()
	defer registry.Unlock()
	if k.Name() == "" {
		panic("stages: Register of a kind with an empty name")
	}
	if _, dup := registry.kinds[k.Name()]; dup {
		panic("stages: Register called twice for kind " + k.Name())
	}
	registry.kinds[k.Name()] = k
}

// LookupKind returns the registered kind with the given name.
func LookupKind(name string) (Kind, bool) {
	registry.Lock()
	defer registry.Unlock()
	k, ok := registry.kinds[name]
	return k, ok
}

// KindNames returns the registered kind names, sorted.
func KindNames() []string {
	registry.Lock()
	defer registry.Unlock()
	names := make([]string, 0, len(registry.kinds))
	for n := range registry.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CtyParam returns a Param whose value is the canonical JSON of v. Stage
// outputs inside v are written as {"$ref":"stage.x.out.y"}.
func CtyParam(name string, v cty.Value) (Param, error) {
	s, err := canonicalCty(v)
	if err != nil {
		return Param{}, fmt.Errorf("stages: param %s: %w", name, err)
	}
	return Param{Name: name, Value: s}, nil
}

// GoParam returns a Param whose value is the canonical JSON of a Go value
// (encoding/json sorts map keys; struct fields keep their declared order).
func GoParam(name string, v any) (Param, error) {
	b, err := marshalPlain(v)
	if err != nil {
		return Param{}, fmt.Errorf("stages: param %s: %w", name, err)
	}
	return Param{Name: name, Value: string(b)}, nil
}

// marshalPlain is json.Marshal without HTML escaping (so that "a > b" stays
// readable in plan's explanations).
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// canonicalCty renders v as JSON with sorted keys, output references as
// {"$ref": ...}, and numbers in cty's exact decimal form.
func canonicalCty(v cty.Value) (string, error) {
	if v.IsNull() {
		return "null", nil
	}
	if !v.IsWhollyKnown() {
		return "", fmt.Errorf("value is not known until the experiment runs")
	}
	if r, ok := AsArtifact(v); ok {
		b, _ := marshalPlain(map[string]string{"$ref": r.String()})
		return string(b), nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		b, err := marshalPlain(v.AsString())
		return string(b), err
	case t.IsPrimitiveType():
		b, err := ctyjson.Marshal(v, t)
		return string(b), err
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		s := "["
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, e := it.Element()
			es, err := canonicalCty(e)
			if err != nil {
				return "", err
			}
			if i > 0 {
				s += ","
			}
			s += es
		}
		return s + "]", nil
	case t.IsMapType() || t.IsObjectType():
		// cty iterates maps and objects in lexical key order.
		s := "{"
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			k, e := it.Element()
			es, err := canonicalCty(e)
			if err != nil {
				return "", err
			}
			kb, _ := marshalPlain(k.AsString())
			if i > 0 {
				s += ","
			}
			s += string(kb) + ":" + es
		}
		return s + "}", nil
	}
	return "", fmt.Errorf("cannot encode a value of type %s", t.FriendlyName())
}
