package stages_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"dragonx/stages"
	_ "dragonx/stages/exec"
)

var update = flag.Bool("update", false, "rewrite golden files")

// errorMarker finds "# ERROR: <summary>" markers on the offending lines.
var errorMarker = regexp.MustCompile(`#\s*ERROR:\s*(.+?)\s*$`)

// TestErrorFiles loads every file in testdata/error-files and checks that
// the diagnostics are exactly the ones marked in the file, on the marked
// lines, all reported in one run.
func TestErrorFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/error-files/*.hcl")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			for i, line := range strings.Split(string(src), "\n") {
				if m := errorMarker.FindStringSubmatch(line); m != nil {
					want[fmt.Sprintf("%d: %s", i+1, m[1])] = true
				}
			}
			_, diags := stages.Load(file, stages.LoadOptions{})
			got := map[string]bool{}
			for _, d := range diags {
				if d.Subject == nil {
					t.Errorf("diagnostic without a source range: %s: %s", d.Summary, d.Detail)
					continue
				}
				if d.Detail == "" {
					t.Errorf("%s: diagnostic %q has no detail", d.Subject, d.Summary)
				}
				got[fmt.Sprintf("%d: %s", d.Subject.Start.Line, d.Summary)] = true
			}
			if diff := setDiff(got, want); diff != "" {
				t.Errorf("Load(%s) diagnostics differ (-got +want):\n%s\nall diagnostics:\n%s", file, diff, diags.Error())
			}
		})
	}
}

func setDiff(got, want map[string]bool) string {
	var lines []string
	for k := range got {
		if !want[k] {
			lines = append(lines, "- "+k)
		}
	}
	for k := range want {
		if !got[k] {
			lines = append(lines, "+ "+k)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestValidFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid-files/*.hcl")
	for _, file := range files {
		cfg, diags := stages.Load(file, stages.LoadOptions{})
		if len(diags) > 0 {
			t.Errorf("Load(%s): %s", file, diags.Error())
			continue
		}
		if len(cfg.Instances) == 0 {
			t.Errorf("Load(%s): no stages", file)
		}
	}
}

// TestDiagnosticText golden-tests the full text a person sees (summary,
// file:line:col, snippet, detail) for a few representative mistakes.
func TestDiagnosticText(t *testing.T) {
	var buf bytes.Buffer
	for _, name := range []string{"unknown_kind.hcl", "cycle.hcl", "unknown_output.hcl", "for_each.hcl"} {
		file := filepath.Join("testdata", "error-files", name)
		cfg, diags := stages.Load(file, stages.LoadOptions{})
		w := hcl.NewDiagnosticTextWriter(&buf, cfg.Files, 100, false)
		if err := w.WriteDiagnostics(diags); err != nil {
			t.Fatal(err)
		}
	}
	checkGolden(t, "testdata/diagnostics.golden", buf.Bytes())
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output; run go test -update to accept:\n--- got ---\n%s", path, got)
	}
}

func TestForEachInstancesAndEdges(t *testing.T) {
	cfg, diags := stages.Load("testdata/valid-files/pipeline.hcl", stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	order := edges(cfg)
	want := []string{
		`gen<-`,
		`sweep["a"]<-gen`,
		`sweep["b"]<-gen`,
		`pick<-sweep["b"]`,
		`sweep["c"]<-gen`,
		`collect<-sweep["a"],sweep["b"],sweep["c"]`,
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("instances = %q\nwant %q", order, want)
	}
}

func TestVariables(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "x.hcl")
	os.WriteFile(exp, []byte(`
variable "n" {
  type = number
  default = 1
}
variable "names" {
  type = list(string)
  default = []
}
variable "s" {
  default = "d"
}
stage "gen" {
  kind = "exec"
  command = "echo ${var.n} ${join(",", var.names)} ${var.s} > x"
  outputs = { x = "x" }
}
`), 0o644)
	varFile := filepath.Join(dir, "v.hcl")
	os.WriteFile(varFile, []byte("n = 7\ns = \"from-file\"\n"), 0o644)
	tests := []struct {
		vars     []string
		varFiles []string
		want     string
		wantErr  string
	}{
		{nil, nil, `"echo 1  d > x"`, ""},
		{[]string{"n=3"}, nil, `"echo 3  d > x"`, ""},
		{[]string{`names=["a","b"]`}, nil, `"echo 1 a,b d > x"`, ""},
		{nil, []string{varFile}, `"echo 7  from-file > x"`, ""},
		{[]string{"n=9"}, []string{varFile}, `"echo 9  from-file > x"`, ""},
		{[]string{"n=lots"}, nil, "", "Invalid value for variable"},
		{[]string{"m=1"}, nil, "", "Undeclared variable"},
		{[]string{"n"}, nil, "", "Invalid -var option"},
	}
	for _, tt := range tests {
		cfg, diags := stages.Load(exp, stages.LoadOptions{Vars: tt.vars, VarFiles: tt.varFiles})
		if tt.wantErr != "" {
			if !diags.HasErrors() || diags[0].Summary != tt.wantErr {
				t.Errorf("Load(vars %v) diags = %v; want %q", tt.vars, diags, tt.wantErr)
			}
			continue
		}
		if diags.HasErrors() {
			t.Errorf("Load(vars %v, files %v): %s", tt.vars, tt.varFiles, diags.Error())
			continue
		}
		got := cfg.Instances[0].Stage.Params()[0].Value
		if got != tt.want {
			t.Errorf("Load(vars %v, files %v) command = %s; want %s", tt.vars, tt.varFiles, got, tt.want)
		}
	}
}

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in, want string
		err      bool
	}{
		{"gen", "stage.gen", false},
		{"stage.gen", "stage.gen", false},
		{`rl["log"]`, `stage.rl["log"]`, false},
		{`stage.rl["a b"]`, `stage.rl["a b"]`, false},
		{`rl[log]`, `stage.rl["log"]`, false},
		{`rl["x`, "", true},
		{"1x", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		a, err := stages.ParseAddr(tt.in)
		if (err != nil) != tt.err || (err == nil && a.String() != tt.want) {
			t.Errorf("ParseAddr(%q) = %v, %v; want %q, err %v", tt.in, a, err, tt.want, tt.err)
		}
	}
}

func TestVariableValidation(t *testing.T) {
	src := `
variable "scale" {
  default = "small"
  validation {
    condition     = contains(["smoke", "small"], var.scale)
    error_message = "scale must be smoke or small."
  }
}
stage "a" {
  kind    = "exec"
  command = "echo ${var.scale} > a.txt"
  outputs = { a = "a.txt" }
}
`
	for _, tc := range []struct {
		vars []string
		want string // "" = valid
	}{
		{nil, ""},
		{[]string{"scale=smoke"}, ""},
		{[]string{"scale=huge"}, `exp.hcl:5,21-60: Invalid value for variable; Variable "scale" is "huge": scale must be smoke or small.`},
	} {
		_, diags := stages.LoadSource("exp.hcl", []byte(src), stages.LoadOptions{Vars: tc.vars})
		got := ""
		if diags.HasErrors() {
			got = diags.Error()
		}
		if got != tc.want {
			t.Errorf("vars %v: got %q, want %q", tc.vars, got, tc.want)
		}
	}
	bad := `
variable "x" {
  default = 1
  validation {
    condition = var.x > 0
  }
}
`
	_, diags := stages.LoadSource("bad.hcl", []byte(bad), stages.LoadOptions{})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), `"error_message" is required`) {
		t.Errorf("a validation without error_message: %v", diags)
	}
}

// edges lists cfg's instances in order, each as "ADDR<-DEP,DEP".
func edges(cfg *stages.Config) []string {
	var out []string
	for _, inst := range cfg.Instances {
		var deps []string
		for _, d := range inst.Deps {
			deps = append(deps, d.Short())
		}
		out = append(out, fmt.Sprintf("%s<-%s", inst.Addr.Short(), strings.Join(deps, ",")))
	}
	return out
}

// A for_each over an empty collection (a stage behind a variable) gives no
// instances: stage.NAME is an empty object, and an instance of it unknown.
func TestForEachEmpty(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "x.hcl")
	os.WriteFile(exp, []byte(`
variable "on" {
  type    = bool
  default = false
}
stage "opt" {
  kind     = "exec"
  for_each = var.on ? toset(["a"]) : toset([])
  command  = "echo ${each.key} > x"
  outputs  = { x = "x" }
}
stage "collect" {
  kind    = "exec"
  command = "cat in/* > all || true"
  inputs  = { for k, r in stage.opt : "in/${k}" => r.out.x }
  outputs = { all = "all" }
}
`), 0o644)
	for _, c := range []struct {
		vars []string
		want string
	}{
		{nil, "collect<-"},
		{[]string{"on=true"}, `opt["a"]<- collect<-opt["a"]`},
	} {
		cfg, diags := stages.Load(exp, stages.LoadOptions{Vars: c.vars})
		if diags.HasErrors() {
			t.Fatalf("vars %v: %s", c.vars, diags.Error())
		}
		if got := edges(cfg); strings.Join(got, " ") != c.want {
			t.Errorf("vars %v: instances %q, want %q", c.vars, strings.Join(got, " "), c.want)
		}
	}
	os.WriteFile(exp, []byte(`
stage "opt" {
  kind     = "exec"
  for_each = toset([])
  command  = "echo ${each.key} > x"
  outputs  = { x = "x" }
}
stage "pick" {
  kind    = "exec"
  command = "cat in/x > y"
  inputs  = { "in/x" = stage.opt["a"].out.x }
  outputs = { y = "y" }
}
`), 0o644)
	if _, diags := stages.Load(exp, stages.LoadOptions{}); !diags.HasErrors() || !strings.Contains(diags.Error(), "Unknown stage instance") {
		t.Errorf("an instance of a stage without instances: %v", diags)
	}
}

func TestWholeNumber(t *testing.T) {
	for _, tc := range []struct {
		v     cty.Value
		n     int64
		whole bool
	}{
		{cty.NumberIntVal(7), 7, true},
		{cty.NumberIntVal(-3), -3, true},
		{cty.NumberFloatVal(2.5), 0, false},
		{cty.MustParseNumberVal("1e30"), 0, false},
		{cty.NullVal(cty.Number), 0, false},
		{cty.StringVal("7"), 0, false},
	} {
		if n, ok := stages.WholeNumber(tc.v); n != tc.n || ok != tc.whole {
			t.Errorf("WholeNumber(%#v) = %d, %v; want %d, %v", tc.v, n, ok, tc.n, tc.whole)
		}
	}
}
