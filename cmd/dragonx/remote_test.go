package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dragonx/cache/cachetest"
	"dragonx/internal/nginxtest"
)

// The remote-cache tests run the real CLI in-process (dispatch) against a
// real nginx (internal/nginxtest) or a shared directory, with one local
// cache per teammate.

// teamExperiment has a chain (gen -> sq -> sum), a directory output (tree,
// with a symbolic link) that sum also reads, and an independent stage. Its
// "sq" stage prints to its log.
const teamExperiment = `
variable "n" {
  default = 5
}
stage "gen" {
  kind    = "exec"
  command = "seq 1 ${var.n} > nums.txt"
  outputs = { nums = "nums.txt" }
}
stage "sq" {
  kind    = "exec"
  inputs  = { "nums.txt" = stage.gen.out.nums }
  command = "echo squaring; awk '{print $1*$1}' nums.txt > sq.txt"
  outputs = { sq = "sq.txt" }
}
stage "tree" {
  kind    = "exec"
  command = "mkdir -p d/e && echo a > d/a.txt && echo b > d/e/b.txt && ln -s a.txt d/link"
  outputs = { d = "d" }
}
stage "sum" {
  kind    = "exec"
  inputs  = { "sq.txt" = stage.sq.out.sq, "d" = stage.tree.out.d }
  command = "awk '{s += $1} END {print s}' sq.txt > sum.txt && cat d/e/b.txt >> sum.txt"
  outputs = { sum = "sum.txt" }
}
stage "other" {
  kind    = "exec"
  command = "echo other > o.txt"
  outputs = { o = "o.txt" }
}
`

// team is a set of teammates sharing one experiment file, each with their
// own cache and output directory.
type team struct {
	t   *testing.T
	dir string
	exp string
	env map[string]string
}

func newTeam(t *testing.T, experiment string) *team {
	t.Helper()
	dir := t.TempDir()
	exp := filepath.Join(dir, "exp.hcl")
	if err := os.WriteFile(exp, []byte(experiment), 0o644); err != nil {
		t.Fatal(err)
	}
	return &team{t: t, dir: dir, exp: exp, env: map[string]string{"HOME": dir}}
}

// result is one dragonx invocation.
type result struct {
	code           int
	stdout, stderr string
}

// warnings returns the warning lines of stderr.
func (r result) warnings() []string {
	var ws []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "warning:") {
			ws = append(ws, l)
		}
	}
	return ws
}

// report decodes a -json run.
func (r result) report(t *testing.T) reportJSON {
	t.Helper()
	var rep reportJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("decoding the JSON report: %v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	return rep
}

// dx runs dragonx as teammate who (their cache is dir/who/cache, their
// outputs dir/who/out) with args, and extra environment variables.
func (tm *team) dx(who string, extra map[string]string, args ...string) result {
	tm.t.Helper()
	vars := map[string]string{}
	for k, v := range tm.env {
		vars[k] = v
	}
	vars["DRAGONX_CACHE"] = filepath.Join(tm.dir, who, "cache")
	for k, v := range extra {
		vars[k] = v
	}
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(k string) string { return vars[k] }}
	full := args
	if len(args) > 0 && args[0] == "run" {
		full = append([]string{"run", "-out", filepath.Join(tm.dir, who, "out")}, args[1:]...)
	}
	code := dispatch(context.Background(), e, full)
	return result{code, out.String(), errb.String()}
}

// statuses maps each stage to its status ("cached" or "cached/remote" for
// a pulled one) in a -json report.
func statuses(rep reportJSON) map[string]string {
	m := map[string]string{}
	for _, s := range rep.Stages {
		st := s.Status
		if s.Remote {
			st += "/remote"
		}
		m[s.Name] = st
	}
	return m
}

func wantStatuses(t *testing.T, r result, want map[string]string) reportJSON {
	t.Helper()
	rep := r.report(t)
	got := statuses(rep)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("stage %s: %s, want %s\nstderr:\n%s", name, got[name], w, r.stderr)
		}
	}
	if len(got) != len(want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	return rep
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

// wantOneWarning checks that the run warned exactly once, with every
// phrase in the warning.
func wantOneWarning(t *testing.T, r result, phrases ...string) {
	t.Helper()
	ws := r.warnings()
	if len(ws) != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", len(ws), r.stderr)
	}
	for _, p := range phrases {
		if !strings.Contains(ws[0], p) {
			t.Errorf("the warning does not say %q:\n%s", p, ws[0])
		}
	}
}

// sameTree fails t unless directories a and b hold the same files, bytes
// and links (the notebook report aside).
func sameTree(t *testing.T, a, b string) {
	t.Helper()
	list := func(root string) map[string]string {
		m := map[string]string{}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			// The notebook report records this run (ran or
			// cached/remote, durations): not a stage output.
			if rel == reportMD || rel == reportHTML || rel == reportFigures {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasPrefix(d.Name(), ".dragonx") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				m[rel] = "link " + target
			case d.Type().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				m[rel] = "file " + string(b)
			case d.IsDir():
				m[rel] = "dir"
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ma, mb := list(a), list(b)
	for k, v := range ma {
		if mb[k] != v {
			t.Errorf("%s: %q in %s, %q in %s", k, v, a, mb[k], b)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			t.Errorf("%s is in %s, not in %s", k, b, a)
		}
	}
	if len(ma) < 5 {
		t.Errorf("%s holds only %d entries", a, len(ma))
	}
}

// remoteKind is one kind of remote the tests run against.
type remoteKind struct {
	name string
	// start returns the remote's URL and the directory that holds its
	// entries (ROOT/cas, ROOT/ac).
	start func(t *testing.T) (url, root string)
}

var remoteKinds = []remoteKind{
	{"nginx", func(t *testing.T) (string, string) {
		s := nginxtest.StartT(t)
		return s.URL, s.Root
	}},
	{"dir", func(t *testing.T) (string, string) {
		root := t.TempDir()
		return "file://" + root, root
	}},
}

// TestRemoteTeammates is the headline: A runs and pushes; B, with an empty
// cache, gets every stage as a hit with byte-identical outputs; a changed
// parameter reruns exactly that stage and its dependents.
func TestRemoteTeammates(t *testing.T) {
	for _, rk := range remoteKinds {
		t.Run(rk.name, func(t *testing.T) {
			url, _ := rk.start(t)
			tm := newTeam(t, teamExperiment)
			all := func(st string) map[string]string {
				return map[string]string{"gen": st, "sq": st, "tree": st, "sum": st, "other": st}
			}
			r := tm.dx("A", nil, "run", "-json", "-remote", url, "-push", tm.exp)
			wantCode(t, r, 0)
			wantStatuses(t, r, all("ran"))
			if ws := r.warnings(); len(ws) > 0 {
				t.Errorf("warnings: %v", ws)
			}

			r = tm.dx("B", nil, "run", "-json", "-remote", url, tm.exp)
			wantCode(t, r, 0)
			wantStatuses(t, r, all("cached/remote"))
			sameTree(t, filepath.Join(tm.dir, "A", "out"), filepath.Join(tm.dir, "B", "out"))
			r = tm.dx("B", nil, "show", tm.exp, "sq")
			if !strings.Contains(r.stdout, "squaring") {
				t.Errorf("B's show does not replay the log A's run stored:\n%s", r.stdout)
			}
			r = tm.dx("B", nil, "cache", "verify")
			wantCode(t, r, 0)

			// A rerun with every stage local does not contact the remote:
			// an unreachable one changes nothing, not even a warning.
			r = tm.dx("B", nil, "run", "-json", "-remote", "http://127.0.0.1:1", tm.exp)
			wantCode(t, r, 0)
			wantStatuses(t, r, all("cached"))
			if ws := r.warnings(); len(ws) > 0 {
				t.Errorf("a local no-op contacted the remote: %v", ws)
			}

			// C changes one parameter: gen and what depends on it run, the
			// rest comes from the remote.
			r = tm.dx("C", nil, "run", "-json", "-remote", url, "-var", "n=6", tm.exp)
			wantCode(t, r, 0)
			wantStatuses(t, r, map[string]string{"gen": "ran", "sq": "ran", "tree": "cached/remote", "sum": "ran", "other": "cached/remote"})
			b, _ := os.ReadFile(filepath.Join(tm.dir, "C", "out", "sum", "sum.txt"))
			if string(b) != "91\nb\n" {
				t.Errorf("C's sum = %q, want 91, b", b)
			}
		})
	}
}

// TestRemoteNoContactOnHits counts nginx's requests: a rerun whose stages
// are all cached locally sends none, unless pushing.
func TestRemoteNoContactOnHits(t *testing.T) {
	s := nginxtest.StartT(t)
	tm := newTeam(t, teamExperiment)
	requests := func() int {
		b, _ := os.ReadFile(filepath.Join(s.Dir, "access.log"))
		return bytes.Count(b, []byte("\n"))
	}
	wantCode(t, tm.dx("A", nil, "run", "-remote", s.URL, "-push", tm.exp), 0)
	n := requests()
	wantCode(t, tm.dx("A", nil, "run", "-remote", s.URL, tm.exp), 0)
	if got := requests(); got != n {
		t.Errorf("a rerun with every stage cached sent %d requests, want none", got-n)
	}
	wantCode(t, tm.dx("A", nil, "run", "-remote", s.URL, "-push", tm.exp), 0)
	if got := requests(); got == n {
		t.Errorf("a rerun with -push sent no request: it does not check that the remote holds the entries")
	}
}

// TestRemoteSettings checks the precedence: the experiment's cache block,
// then $DRAGONX_REMOTE, then -remote; "off" turns the remote off.
func TestRemoteSettings(t *testing.T) {
	fileRoot, envRoot, flagRoot := t.TempDir(), t.TempDir(), t.TempDir()
	exp := `variable "remote" {
  default = ""
}
cache {
  remote = var.remote
}
stage "one" {
  kind    = "exec"
  command = "echo one > one.txt"
  outputs = { one = "one.txt" }
}
`
	tm := newTeam(t, exp)
	fileVar := "remote=file://" + fileRoot
	holds := func(root string) bool {
		ents, _ := os.ReadDir(filepath.Join(root, "ac"))
		return len(ents) > 0
	}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string // the root that receives the push; "" none
	}{
		{"file", nil, []string{"-var", fileVar}, fileRoot},
		{"env over file", map[string]string{"DRAGONX_REMOTE": "file://" + envRoot}, []string{"-var", fileVar}, envRoot},
		{"flag over env", map[string]string{"DRAGONX_REMOTE": "file://" + envRoot}, []string{"-var", fileVar, "-remote", "file://" + flagRoot}, flagRoot},
		{"env off", map[string]string{"DRAGONX_REMOTE": "off"}, []string{"-var", fileVar}, ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, root := range []string{fileRoot, envRoot, flagRoot} {
				os.RemoveAll(filepath.Join(root, "ac"))
				os.RemoveAll(filepath.Join(root, "cas"))
			}
			who := fmt.Sprintf("user%d", i)
			args := append([]string{"run", "-push"}, c.args...)
			r := tm.dx(who, c.env, append(args, tm.exp)...)
			if c.want == "" {
				wantCode(t, r, exitUsage)
				return
			}
			wantCode(t, r, 0)
			for _, root := range []string{fileRoot, envRoot, flagRoot} {
				if holds(root) != (root == c.want) {
					t.Errorf("%s holds an entry: %v, want %v", root, holds(root), root == c.want)
				}
			}
		})
	}
	// $DRAGONX_REMOTE_PUSH pushes without the flag; -push=false wins over it.
	os.RemoveAll(filepath.Join(flagRoot, "ac"))
	r := tm.dx("pushenv", map[string]string{"DRAGONX_REMOTE_PUSH": "1"}, "run", "-push=false", "-remote", "file://"+flagRoot, tm.exp)
	wantCode(t, r, 0)
	if holds(flagRoot) {
		t.Errorf("-push=false pushed")
	}
	r = tm.dx("pushenv2", map[string]string{"DRAGONX_REMOTE_PUSH": "1"}, "run", "-remote", "file://"+flagRoot, tm.exp)
	wantCode(t, r, 0)
	if !holds(flagRoot) {
		t.Errorf("DRAGONX_REMOTE_PUSH=1 did not push")
	}
	// $DRAGONX_REMOTE_PUSH is for the experiments that have a remote; it
	// does not stop the others.
	r = tm.dx("pushenv3", map[string]string{"DRAGONX_REMOTE_PUSH": "1"}, "run", tm.exp)
	wantCode(t, r, 0)
	r = tm.dx("bad", nil, "run", "-remote", "ftp://example.com/x", tm.exp)
	if r.code != exitFailure || !strings.Contains(r.stderr, "unsupported URL scheme") {
		t.Errorf("a bad remote URL: exit %d, %s", r.code, r.stderr)
	}
}

// TestRemoteDownAtStart: a remote that is not there costs one warning; the
// run completes locally, and the local cache is complete.
func TestRemoteDownAtStart(t *testing.T) {
	for _, c := range []struct{ name, url, says string }{
		{"http", "http://127.0.0.1:1", "connection refused"},
		{"dir", "file:///nonexistent/dragonx-team-cache", "is not there"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tm := newTeam(t, teamExperiment)
			r := tm.dx("A", nil, "run", "-json", "-push", "-remote", c.url, tm.exp)
			wantCode(t, r, 0)
			wantStatuses(t, r, map[string]string{"gen": "ran", "sq": "ran", "tree": "ran", "sum": "ran", "other": "ran"})
			wantOneWarning(t, r, "unavailable", c.says, "continuing with the local cache")
			wantCode(t, tm.dx("A", nil, "cache", "verify"), 0)
			r = tm.dx("A", nil, "run", "-json", tm.exp)
			wantStatuses(t, r, map[string]string{"gen": "cached", "sq": "cached", "tree": "cached", "sum": "cached", "other": "cached"})
		})
	}
}

// chainExperiment's middle stage kills the process whose PID is in the
// file named by its command, if the file exists: the same command (and so
// the same key) whether or not it kills anything.
func chainExperiment(pidFile string) string {
	return fmt.Sprintf(`
stage "one" {
  kind    = "exec"
  command = "echo one > one.txt"
  outputs = { one = "one.txt" }
}
stage "two" {
  kind    = "exec"
  inputs  = { "one.txt" = stage.one.out.one }
  command = "if [ -f %[1]s ]; then kill -9 $(cat %[1]s); sleep 0.2; fi; cat one.txt > two.txt; echo two >> two.txt"
  outputs = { two = "two.txt" }
}
stage "three" {
  kind    = "exec"
  inputs  = { "two.txt" = stage.two.out.two }
  command = "cat two.txt > three.txt; echo three >> three.txt"
  outputs = { three = "three.txt" }
}
`, pidFile)
}

// TestRemoteDownMidRun kills nginx from inside a run, while it reads
// through and while it writes through.
func TestRemoteDownMidRun(t *testing.T) {
	s := nginxtest.StartT(t)
	pidFile := filepath.Join(t.TempDir(), "nginx.pid")
	tm := newTeam(t, chainExperiment(pidFile))
	r := tm.dx("A", nil, "run", "-json", "-remote", s.URL, "-push", tm.exp)
	wantCode(t, r, 0)
	rep := r.report(t)
	var twoKey string
	for _, st := range rep.Stages {
		if st.Name == "two" {
			twoKey = st.Key
		}
	}
	// Reading through: the remote holds one and three but not two; B
	// pulls one, runs two (which kills nginx), and three's lookup finds
	// the remote gone.
	if err := os.Remove(s.Path("ac", twoKey)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(pidFile, []byte(fmt.Sprint(s.PID())), 0o644)
	r = tm.dx("B", nil, "run", "-json", "-remote", s.URL, tm.exp)
	wantCode(t, r, 0)
	wantStatuses(t, r, map[string]string{"one": "cached/remote", "two": "ran", "three": "ran"})
	wantOneWarning(t, r, "unavailable", "continuing with the local cache")
	sameTree(t, filepath.Join(tm.dir, "A", "out"), filepath.Join(tm.dir, "B", "out"))
	wantCode(t, tm.dx("B", nil, "cache", "verify"), 0)

	// Writing through: C pushes; two kills nginx while one's entry may
	// still be uploading.
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(pidFile, []byte(fmt.Sprint(s.PID())), 0o644)
	r = tm.dx("C", nil, "run", "-json", "-remote", "http://"+strings.TrimPrefix(s.URL, "http://")+"/other", "-push", tm.exp)
	wantCode(t, r, 0)
	wantStatuses(t, r, map[string]string{"one": "ran", "two": "ran", "three": "ran"})
	wantOneWarning(t, r, "unavailable", "continuing with the local cache")
	wantCode(t, tm.dx("C", nil, "cache", "verify"), 0)
}

// serverFile returns the file that holds a digest ("sha256:<hex>") under a
// remote's root.
func serverFile(root, digest string) string {
	return filepath.Join(root, "cas", strings.TrimPrefix(digest, "sha256:"))
}

func outputDigest(t *testing.T, rep reportJSON, stage, output string) string {
	t.Helper()
	for _, s := range rep.Stages {
		if s.Name == stage {
			if d, ok := s.Outputs[output]; ok {
				return d
			}
		}
	}
	t.Fatalf("no output %s.%s in the report", stage, output)
	return ""
}

// TestRemoteCorruptBlob flips a byte of a blob on the server: the stage
// that owns it reruns (its dependents stay hits: it produces the same
// bytes), with one warning; nothing corrupt enters B's cache; B's push
// repairs the server, so C then gets everything.
func TestRemoteCorruptBlob(t *testing.T) {
	for _, rk := range remoteKinds {
		t.Run(rk.name, func(t *testing.T) {
			url, root := rk.start(t)
			tm := newTeam(t, teamExperiment)
			r := tm.dx("A", nil, "run", "-json", "-remote", url, "-push", tm.exp)
			wantCode(t, r, 0)
			p := serverFile(root, outputDigest(t, r.report(t), "sq", "sq"))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x20
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			r = tm.dx("B", nil, "run", "-json", "-remote", url, "-push", tm.exp)
			wantCode(t, r, 0)
			wantStatuses(t, r, map[string]string{"gen": "cached/remote", "sq": "ran", "tree": "cached/remote", "sum": "cached/remote", "other": "cached/remote"})
			wantOneWarning(t, r, "sq", "corrupt", "the stage runs here")
			sameTree(t, filepath.Join(tm.dir, "A", "out"), filepath.Join(tm.dir, "B", "out"))
			v := tm.dx("B", nil, "cache", "verify")
			wantCode(t, v, 0)
			if strings.Contains(v.stdout, "problem") {
				t.Errorf("B's cache has problems:\n%s", v.stdout)
			}
			r = tm.dx("C", nil, "run", "-json", "-remote", url, tm.exp)
			wantCode(t, r, 0)
			wantStatuses(t, r, map[string]string{"gen": "cached/remote", "sq": "cached/remote", "tree": "cached/remote", "sum": "cached/remote", "other": "cached/remote"})
			if ws := r.warnings(); len(ws) > 0 {
				t.Errorf("B's push did not repair the remote: %v", ws)
			}
		})
	}
}

// TestRemoteMissingBlob deletes a blob that a manifest on the server names
// (what an evicting server or a person does): the entry is a miss, the
// stage runs, one warning.
func TestRemoteMissingBlob(t *testing.T) {
	for _, rk := range remoteKinds {
		t.Run(rk.name, func(t *testing.T) {
			url, root := rk.start(t)
			tm := newTeam(t, teamExperiment)
			r := tm.dx("A", nil, "run", "-json", "-remote", url, "-push", tm.exp)
			wantCode(t, r, 0)
			rep := r.report(t)
			if err := os.Remove(serverFile(root, outputDigest(t, rep, "gen", "nums"))); err != nil {
				t.Fatal(err)
			}
			// A file inside a directory output goes missing too.
			var treeFile string
			tree, err := os.ReadFile(serverFile(root, outputDigest(t, rep, "tree", "d")))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(string(tree), "\n") {
				if strings.HasSuffix(l, `"e/b.txt"`) {
					treeFile = strings.Fields(l)[3]
				}
			}
			if err := os.Remove(serverFile(root, treeFile)); err != nil {
				t.Fatal(err)
			}
			r = tm.dx("B", nil, "run", "-json", "-remote", url, tm.exp)
			wantCode(t, r, 0)
			wantStatuses(t, r, map[string]string{"gen": "ran", "sq": "cached/remote", "tree": "ran", "sum": "cached/remote", "other": "cached/remote"})
			ws := r.warnings()
			if len(ws) != 2 || !strings.Contains(r.stderr, "gen: remote entry") || !strings.Contains(r.stderr, "tree: remote entry") || !strings.Contains(ws[0], "missing on the remote") {
				t.Errorf("want one warning for each incomplete entry (gen, tree):\n%s", r.stderr)
			}
			sameTree(t, filepath.Join(tm.dir, "A", "out"), filepath.Join(tm.dir, "B", "out"))
			wantCode(t, tm.dx("B", nil, "cache", "verify"), 0)
		})
	}
}

// TestRemoteSlow: a server that accepts connections and never answers
// costs one timeout and one warning, not one per stage.
func TestRemoteSlow(t *testing.T) {
	var mu sync.Mutex
	requests := 0
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	tm := newTeam(t, teamExperiment)
	start := time.Now()
	r := tm.dx("A", map[string]string{"DRAGONX_REMOTE_TIMEOUT": "300ms"}, "run", "-json", "-j", "1", "-remote", srv.URL, tm.exp)
	took := time.Since(start)
	wantCode(t, r, 0)
	wantStatuses(t, r, map[string]string{"gen": "ran", "sq": "ran", "tree": "ran", "sum": "ran", "other": "ran"})
	wantOneWarning(t, r, "unavailable", "timeout")
	wantCode(t, tm.dx("A", nil, "cache", "verify"), 0)
	mu.Lock()
	n := requests
	mu.Unlock()
	if n != 1 {
		t.Errorf("the slow server got %d requests, want 1 (a timeout is not retried, and the remote is not asked again)", n)
	}
	if took > 10*time.Second {
		t.Errorf("the run took %v with a 300ms timeout", took)
	}
}

// TestRemoteLargeArtifact streams one large output to nginx and back into
// a second cache with the heap bounded far below its size. make test uses
// 128 MiB (10-30 s here, the disk being the limit); DRAGONX_REMOTE_HEAVY=1
// (make bench) the 2 GiB of the issue.
func TestRemoteLargeArtifact(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 128 MiB")
	}
	size := int64(128 << 20)
	if os.Getenv("DRAGONX_REMOTE_HEAVY") == "1" {
		size = 2 << 30
	}
	const limit = 96 << 20 // a few chunks and buffers in flight, Badger's memtables, slack
	s := nginxtest.StartT(t)
	exp := fmt.Sprintf(`
stage "big" {
  kind    = "exec"
  command = "head -c %d /dev/urandom > big.bin"
  outputs = { big = "big.bin" }
}
`, size)
	tm := newTeam(t, exp)
	stop := cachetest.HeapPeak()
	start := time.Now()
	r := tm.dx("A", nil, "run", "-json", "-remote", s.URL, "-push", tm.exp)
	push := time.Since(start)
	peak := stop()
	wantCode(t, r, 0)
	digest := outputDigest(t, r.report(t), "big", "big")
	t.Logf("run and push of %d MiB: %v (heap peak +%d MiB)", size>>20, push.Round(time.Millisecond), peak>>20)
	if peak > limit {
		t.Errorf("running and pushing %d MiB grew the heap by %d MiB, want at most %d: it does not stream", size>>20, peak>>20, limit>>20)
	}
	info, err := os.Stat(serverFile(s.Root, digest))
	if err != nil || info.Size() != size {
		t.Fatalf("the server holds %v, %v; want %d bytes", info, err, size)
	}

	stop = cachetest.HeapPeak()
	start = time.Now()
	r = tm.dx("B", nil, "run", "-json", "-remote", s.URL, tm.exp)
	pull := time.Since(start)
	peak = stop()
	wantCode(t, r, 0)
	wantStatuses(t, r, map[string]string{"big": "cached/remote"})
	if ws := r.warnings(); len(ws) > 0 {
		t.Errorf("warnings: %v", ws)
	}
	t.Logf("pull of %d MiB (and copy to out/): %v, %.0f MB/s (heap peak +%d MiB)", size>>20, pull.Round(time.Millisecond), float64(size)/pull.Seconds()/1e6, peak>>20)
	if peak > limit {
		t.Errorf("pulling %d MiB grew the heap by %d MiB, want at most %d: it does not stream", size>>20, peak>>20, limit>>20)
	}
	f, err := os.Open(filepath.Join(tm.dir, "B", "out", "big", "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != digest {
		t.Errorf("B's output hashes to %s, want %s", got, digest)
	}
}
