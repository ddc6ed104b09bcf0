// Package exec is the general `exec` stage kind: it runs a command in a fresh
// private working directory, with declared inputs placed at declared paths,
// and keeps only the declared outputs, like a DVC stage.
//
//	stage "square" {
//	  kind    = "exec"
//	  inputs  = { "in/nums.txt" = stage.gen.out.nums,   # upstream output
//	              "data.csv"    = "data/raw.csv" }      # local file or directory
//	  command = "awk '{print $1*$1}' in/nums.txt > sq.txt"   # shell string, or an argv list
//	  outputs = { sq = "sq.txt" }
//	  env     = { LC_ALL = "C" }
//	}
//
// The command sees only PATH, HOME, TMPDIR (a private temporary directory),
// DRAGONX_STAGE (the stage address) and the variables in env, so that its
// result depends on what the experiment declares and not on the caller's
// shell. A string command runs under `sh -c`; a list runs as is.
package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"dragonx/internal/procgroup"
	"dragonx/stages"
)

// Version is the exec kind's version; bump it when the same declaration
// would produce different outputs. 2: the stage address became a parameter
// (entries of version 1 are misses).
const Version = "2"

// Kind is the exec stage kind.
type Kind struct{}

func init() { stages.Register(Kind{}) }

// Name returns "exec".
func (Kind) Name() string { return "exec" }

// Version returns the kind version.
func (Kind) Version() string { return Version }

var schema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "command", Required: true},
		{Name: "inputs"},
		{Name: "outputs"},
		{Name: "env"},
		{Name: "shards"},
	},
}

// Stage is a decoded exec stage.
type Stage struct {
	addr    stages.Addr
	argv    []string // the command; a shell string becomes sh -c STRING
	shell   bool
	inputs  []stages.Input
	outputs []stages.OutputDecl
	env     map[string]string
	params  []stages.Param
	// shards is N for a sharded stage (shards = N), 0 otherwise.
	shards int
	// killGrace is how long an interrupted command gets between SIGTERM
	// and SIGKILL.
	killGrace time.Duration
}

// Decode decodes an exec stage body.
func (Kind) Decode(body hcl.Body, dc *stages.DecodeContext) (stages.Stage, hcl.Diagnostics) {
	content, diags := body.Content(schema)
	if diags.HasErrors() {
		return nil, diags
	}
	s := &Stage{addr: dc.Addr, env: map[string]string{}, killGrace: 5 * time.Second}
	var cmdVal, inVal, outVal, envVal cty.Value = cty.NilVal, cty.NilVal, cty.NilVal, cty.NilVal

	for _, at := range []struct {
		name   string
		val    *cty.Value
		decode func(*hcl.Attribute, cty.Value) hcl.Diagnostics
	}{
		{"command", &cmdVal, s.decodeCommand},
		{"inputs", &inVal, s.decodeInputs},
		{"outputs", &outVal, s.decodeOutputs},
		{"env", &envVal, s.decodeEnv},
	} {
		a, ok := content.Attributes[at.name]
		if !ok {
			continue
		}
		v, d := a.Expr.Value(dc.Eval)
		diags = append(diags, d...)
		if !d.HasErrors() {
			*at.val = v
			diags = append(diags, at.decode(a, v)...)
		}
	}
	diags = append(diags, s.checkPaths(content)...)
	var shardsVal cty.Value = cty.NilVal
	if a, ok := content.Attributes["shards"]; ok {
		v, d := a.Expr.Value(dc.Eval)
		diags = append(diags, d...)
		if !d.HasErrors() {
			shardsVal = v
			diags = append(diags, s.decodeShards(a, v)...)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	// The command can read DRAGONX_STAGE, so the address is a parameter:
	// two stages with the same command do not share one result.
	for _, p := range []struct {
		name string
		v    cty.Value
	}{{"command", cmdVal}, {"inputs", inVal}, {"outputs", outVal}, {"env", envVal}, {"stage", cty.StringVal(dc.Addr.String())}} {
		if p.v == cty.NilVal {
			p.v = cty.NullVal(cty.DynamicPseudoType)
		}
		prm, err := stages.CtyParam(p.name, p.v)
		if err != nil {
			return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + p.name, Detail: err.Error() + ".", Subject: dc.DeclRange.Ptr()})
		}
		s.params = append(s.params, prm)
	}
	// The command sees DRAGONX_SHARD and DRAGONX_SHARDS, so the count is
	// a parameter; it is added only when given, so that the keys of
	// unsharded stages stay as they were.
	if shardsVal != cty.NilVal {
		prm, err := stages.CtyParam("shards", shardsVal)
		if err != nil {
			return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid shards", Detail: err.Error() + ".", Subject: dc.DeclRange.Ptr()})
		}
		s.params = append(s.params, prm)
	}
	return s, diags
}

func (s *Stage) decodeCommand(a *hcl.Attribute, v cty.Value) hcl.Diagnostics {
	bad := func(detail string) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid command", Detail: detail + ` Write a shell string ("seq 1 10 > nums.txt", run with sh -c) or an argument list (["python3", "train.py"]).`, Subject: a.Expr.Range().Ptr()}}
	}
	if v.IsNull() {
		return bad("The command is null.")
	}
	t := v.Type()
	switch {
	case t == cty.String:
		if strings.TrimSpace(v.AsString()) == "" {
			return bad("The command is empty.")
		}
		s.shell = true
		s.argv = []string{"sh", "-c", v.AsString()}
	case t.IsListType() || t.IsTupleType():
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.IsNull() || !e.Type().Equals(cty.String) {
				if _, isRef := stages.AsArtifact(e); isRef {
					return bad("A stage output cannot be a command argument; place it with inputs and name its path.")
				}
				ev, err := toString(e)
				if err != nil {
					return bad("Every element of the command list must be a string.")
				}
				e = ev
			}
			s.argv = append(s.argv, e.AsString())
		}
		if len(s.argv) == 0 || s.argv[0] == "" {
			return bad("The command list is empty.")
		}
	default:
		return bad(fmt.Sprintf("The command has type %s.", t.FriendlyName()))
	}
	return nil
}

func (s *Stage) decodeInputs(a *hcl.Attribute, v cty.Value) hcl.Diagnostics {
	if v.IsNull() {
		return nil
	}
	t := v.Type()
	if !t.IsObjectType() && !t.IsMapType() {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid inputs", Detail: `inputs must be a map from a path in the working directory to an upstream output (stage.NAME.out.OUTPUT) or a local path (a string, relative to the experiment file).`, Subject: a.Expr.Range().Ptr()}}
	}
	var diags hcl.Diagnostics
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		p := k.AsString()
		in := stages.Input{Name: p, Range: a.Expr.Range()}
		if ref, ok := stages.AsArtifact(e); ok {
			in.Ref = &ref
		} else if !e.IsNull() && e.Type() == cty.String {
			local := e.AsString()
			if local == "" {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid input", Detail: fmt.Sprintf("Input %q has an empty local path.", p), Subject: a.Expr.Range().Ptr()})
				continue
			}
			in.Local = local
		} else {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid input", Detail: fmt.Sprintf("Input %q must be an upstream output (stage.NAME.out.OUTPUT) or a local path string, not %s.", p, e.Type().FriendlyName()), Subject: a.Expr.Range().Ptr()})
			continue
		}
		s.inputs = append(s.inputs, in)
	}
	return diags
}

func (s *Stage) decodeOutputs(a *hcl.Attribute, v cty.Value) hcl.Diagnostics {
	if v.IsNull() {
		return nil
	}
	t := v.Type()
	if !t.IsObjectType() && !t.IsMapType() {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid outputs", Detail: `outputs must be a map from an output name to a path in the working directory, e.g. { nums = "nums.txt" }.`, Subject: a.Expr.Range().Ptr()}}
	}
	var diags hcl.Diagnostics
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		name := k.AsString()
		if !validIdent(name) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid output name", Detail: fmt.Sprintf("%q is not a valid output name: use letters, digits and underscores, starting with a letter, so that stage.NAME.out.%s can refer to it.", name, name), Subject: a.Expr.Range().Ptr()})
			continue
		}
		sv, err := toString(e)
		if err != nil || sv.AsString() == "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid output path", Detail: fmt.Sprintf("Output %q must be a non-empty path string in the working directory.", name), Subject: a.Expr.Range().Ptr()})
			continue
		}
		s.outputs = append(s.outputs, stages.OutputDecl{Name: name, Path: sv.AsString()})
	}
	return diags
}

func (s *Stage) decodeEnv(a *hcl.Attribute, v cty.Value) hcl.Diagnostics {
	if v.IsNull() {
		return nil
	}
	t := v.Type()
	if !t.IsObjectType() && !t.IsMapType() {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid env", Detail: `env must be a map of variable names to strings, e.g. { LC_ALL = "C" }.`, Subject: a.Expr.Range().Ptr()}}
	}
	var diags hcl.Diagnostics
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		sv, err := toString(e)
		if err != nil || strings.ContainsAny(k.AsString(), "=\x00") || k.AsString() == "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid env", Detail: fmt.Sprintf("env entry %q must be a valid variable name with a string value.", k.AsString()), Subject: a.Expr.Range().Ptr()})
			continue
		}
		s.env[k.AsString()] = sv.AsString()
	}
	return diags
}

// checkPaths validates the working-directory paths of inputs and outputs.
func (s *Stage) checkPaths(content *hcl.BodyContent) hcl.Diagnostics {
	var diags hcl.Diagnostics
	rangeOf := func(attr string) *hcl.Range {
		if a, ok := content.Attributes[attr]; ok {
			return a.Expr.Range().Ptr()
		}
		return nil
	}
	seen := map[string]string{}
	check := func(p, what, attr string) {
		if msg := badWorkPath(p); msg != "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid path", Detail: fmt.Sprintf("%s path %q %s. Paths in the working directory are relative, use forward slashes, and stay inside it.", what, p, msg), Subject: rangeOf(attr)})
			return
		}
		c := path.Clean(p)
		for other, owhat := range seen {
			if c == other || strings.HasPrefix(c, other+"/") || strings.HasPrefix(other, c+"/") {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Overlapping paths", Detail: fmt.Sprintf("%s path %q overlaps %s path %q; give each input and output its own path.", what, p, owhat, other), Subject: rangeOf(attr)})
				return
			}
		}
		seen[c] = what
	}
	for _, in := range s.inputs {
		check(in.Name, "Input", "inputs")
	}
	for _, o := range s.outputs {
		check(o.Path, "Output", "outputs")
	}
	return diags
}

func badWorkPath(p string) string {
	switch {
	case p == "":
		return "is empty"
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/"):
		return "is absolute"
	case strings.Contains(p, "\\"):
		return "contains a backslash"
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "leaves the working directory"
	}
	return ""
}

func validIdent(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// Params returns command, inputs, outputs, env and stage (the address, as
// the command sees it in DRAGONX_STAGE) in canonical form.
func (s *Stage) Params() []stages.Param { return s.params }

// Inputs returns the declared inputs, sorted by path.
func (s *Stage) Inputs() []stages.Input { return s.inputs }

// Outputs returns the declared outputs, sorted by name.
func (s *Stage) Outputs() []stages.OutputDecl {
	out := append([]stages.OutputDecl(nil), s.outputs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Run places the inputs, runs the command and checks the outputs exist; a
// sharded stage runs it once per shard on its executor and merges the
// shards' outputs.
func (s *Stage) Run(ctx context.Context, rc *stages.RunContext) error {
	if s.shards > 0 {
		return s.runSharded(ctx, rc)
	}
	for _, in := range s.inputs {
		dst := filepath.Join(rc.Dir, filepath.FromSlash(in.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("exec: placing input %s: %w", in.Name, err)
		}
		if err := rc.Materialize(ctx, in.Name, dst); err != nil {
			return fmt.Errorf("exec: placing input %s: %w", in.Name, err)
		}
	}
	for _, o := range s.outputs {
		if err := os.MkdirAll(filepath.Join(rc.Dir, filepath.Dir(filepath.FromSlash(o.Path))), 0o755); err != nil {
			return fmt.Errorf("exec: preparing output %s: %w", o.Name, err)
		}
	}
	tmp := rc.Tmp
	if tmp == "" {
		// Outside the engine (which gives every stage a temporary
		// directory under its work root, cleared by the next run).
		d, err := os.MkdirTemp("", "dragonx-exec-tmp-")
		if err != nil {
			return fmt.Errorf("exec: %w", err)
		}
		defer os.RemoveAll(d)
		tmp = d
	}

	// The command runs in a process group of its own, owned by a
	// supervisor that kills the whole group when dragonx exits in any way,
	// kill -9 included (package procgroup): no part of a pipeline outlives
	// the run.
	cmd := procgroup.Command(s.argv...)
	cmd.Dir = rc.Dir
	cmd.Stdout = rc.Log
	cmd.Stderr = rc.Log
	cmd.Env = s.environ(tmp)
	fmt.Fprintf(rc.Log, "$ %s\n", s.display())
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("exec: cannot start %q: %w", s.argv[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Stop(done, syscall.SIGTERM, true, s.killGrace)
		return fmt.Errorf("exec: command interrupted: %w", ctx.Err())
	}
	if err != nil {
		var ee *procgroup.ExitError
		if errors.As(err, &ee) {
			if ee.Signaled() {
				return fmt.Errorf("exec: command killed by signal %v", ee.Signal)
			}
			return fmt.Errorf("exec: command exited with status %d", ee.Code)
		}
		return fmt.Errorf("exec: command failed: %w", err)
	}
	var missing []string
	for _, o := range s.Outputs() {
		if _, err := os.Lstat(filepath.Join(rc.Dir, filepath.FromSlash(o.Path))); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", o.Name, o.Path))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("exec: the command exited 0 but did not create the declared output(s) %s in its working directory", strings.Join(missing, ", "))
	}
	return nil
}

// environ is the command's environment, sorted. tmp is TMPDIR ("": none,
// for the shard wrapper sets its own), unless env sets it.
func (s *Stage) environ(tmp string) []string {
	env := map[string]string{
		"PATH":          os.Getenv("PATH"),
		"HOME":          os.Getenv("HOME"),
		"DRAGONX_STAGE": s.addr.String(),
	}
	if tmp != "" {
		env["TMPDIR"] = tmp
	}
	if env["PATH"] == "" {
		env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	for k, v := range s.env {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(env))
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

func (s *Stage) display() string {
	if s.shell {
		return s.argv[2]
	}
	return strings.Join(s.argv, " ")
}

// toString converts a non-null value to a string, as HCL would.
func toString(v cty.Value) (cty.Value, error) {
	if v.IsNull() {
		return cty.NilVal, fmt.Errorf("null")
	}
	return convertString(v)
}
