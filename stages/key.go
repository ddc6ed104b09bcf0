package stages

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"dragonx/cache"
)

// KeyScheme versions the way stage keys are computed. Changing the scheme
// (the lines below, their order, the hash) must change this string, which
// is the first line of every key's input, so old entries become misses
// instead of wrong hits.
const KeyScheme = "dragonx stage key v1"

// keyInput is everything that determines a stage's outputs, as readable
// lines (style.md R4): the scheme, the kind and its version, each parameter
// line in the kind's fixed order, and each input's content digest. Upstream
// stages enter through the digests of their outputs, never their keys, so an
// upstream rerun that produces the same bytes invalidates nothing downstream
// (early cut-off).
func keyInput(inst *Instance, inputs map[string]cache.Digest) []string {
	lines := []string{
		KeyScheme,
		"kind " + inst.Kind.Name(),
		"kind-version " + inst.Kind.Version(),
	}
	for _, p := range inst.Stage.Params() {
		lines = append(lines, "param "+p.Name+" "+p.Value)
	}
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		lines = append(lines, fmt.Sprintf("input %q %s", n, inputs[n]))
	}
	return lines
}

// hashLines hashes key input lines into a Key.
func hashLines(lines []string) cache.Key {
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	var k cache.Key
	copy(k[:], h.Sum(nil))
	return k
}

// snapshot is what dragonx remembers about the last successful run (or hit)
// of a stage address, so that plan can explain what changed.
type snapshot struct {
	Key         cache.Key               `json:"key"`
	Kind        string                  `json:"kind"`
	KindVersion string                  `json:"kind_version"`
	Params      []Param                 `json:"params"`
	Inputs      []snapInput             `json:"inputs"`
	Outputs     map[string]cache.Output `json:"outputs"`
	Time        time.Time               `json:"time"`
}

type snapInput struct {
	Name   string       `json:"name"`
	Source string       `json:"source"` // stage.x.out.y, or the local path
	Digest cache.Digest `json:"digest"`
}

func decodeSnapshot(b []byte) (*snapshot, error) {
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("stages: bad snapshot: %w", err)
	}
	return &s, nil
}

func inputSource(in Input) string {
	if in.Ref != nil {
		return in.Ref.String()
	}
	return in.Local
}

// explain compares the last snapshot of a stage with its current state and
// says, in words, why the stage must run. An empty list means nothing
// changed that dragonx can see (the entry was lost or evicted).
func explain(prev *snapshot, inst *Instance, inputs map[string]cache.Digest) []string {
	if prev == nil {
		return []string{"no previous run"}
	}
	var reasons []string
	if prev.Kind != inst.Kind.Name() {
		reasons = append(reasons, fmt.Sprintf("kind changed %s -> %s", prev.Kind, inst.Kind.Name()))
	} else if prev.KindVersion != inst.Kind.Version() {
		reasons = append(reasons, fmt.Sprintf("kind version changed %s -> %s", prev.KindVersion, inst.Kind.Version()))
	}
	reasons = append(reasons, ParamChanges(inst.Addr.Short(), prev.Params, inst.Stage.Params())...)
	oldIn := map[string]snapInput{}
	for _, in := range prev.Inputs {
		oldIn[in.Name] = in
	}
	for _, in := range inst.Stage.Inputs() {
		o, ok := oldIn[in.Name]
		d := inputs[in.Name]
		switch {
		case !ok:
			reasons = append(reasons, fmt.Sprintf("input %s added (%s)", in.Name, inputSource(in)))
		case o.Source != inputSource(in):
			reasons = append(reasons, fmt.Sprintf("input %s now comes from %s (was %s)", in.Name, inputSource(in), o.Source))
		case !d.IsZero() && o.Digest != d:
			reasons = append(reasons, fmt.Sprintf("input %s changed (%s: %s -> %s)", in.Name, inputSource(in), o.Digest.Short(), d.Short()))
		}
		delete(oldIn, in.Name)
	}
	for n := range oldIn {
		reasons = append(reasons, fmt.Sprintf("input %s removed", n))
	}
	return reasons
}

// ParamChanges says, in plan's words, how the parameters of a stage (its
// short address, "rl" or `rl["log"]`) changed from old to cur: "param
// rl.reward.bonus_scale changed 1 -> 2", "param rl.seed added: 3", "param
// rl.steps removed". Objects are descended to the changed keys; long
// strings are described by their first differing line. Equal lists give
// none. `dragonx plan` and `dragonx diff` both word changes this way.
func ParamChanges(stage string, old, cur []Param) []string {
	var out []string
	prev := map[string]string{}
	for _, p := range old {
		prev[p.Name] = p.Value
	}
	seen := map[string]bool{}
	for _, p := range cur {
		seen[p.Name] = true
		ov, ok := prev[p.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("param %s.%s added: %s", stage, p.Name, clip(p.Value)))
		case ov != p.Value:
			for _, d := range diffJSON(p.Name, ov, p.Value) {
				out = append(out, "param "+stage+"."+d)
			}
		}
	}
	for _, p := range old {
		if !seen[p.Name] {
			out = append(out, fmt.Sprintf("param %s.%s removed", stage, p.Name))
		}
	}
	return out
}

// diffJSON explains the difference between two canonical JSON values of a
// parameter: for objects it descends to the changed keys (param
// rl.reward.bonus_scale changed 1 -> 2), otherwise it gives the whole value.
func diffJSON(name, a, b string) []string {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return []string{fmt.Sprintf("%s changed %s -> %s", name, clip(a), clip(b))}
	}
	var out []string
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		mx, okx := x.(map[string]any)
		my, oky := y.(map[string]any)
		if !okx || !oky {
			xs, _ := marshalPlain(x)
			ys, _ := marshalPlain(y)
			if string(xs) == string(ys) {
				return
			}
			if sx, ok := x.(string); ok {
				if sy, ok := y.(string); ok && (len(xs) > 80 || len(ys) > 80) {
					out = append(out, path+" changed "+stringDiff(sx, sy))
					return
				}
			}
			out = append(out, fmt.Sprintf("%s changed %s -> %s", path, clip(string(xs)), clip(string(ys))))
			return
		}
		keys := map[string]bool{}
		for k := range mx {
			keys[k] = true
		}
		for k := range my {
			keys[k] = true
		}
		ks := make([]string, 0, len(keys))
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			xv, inX := mx[k]
			yv, inY := my[k]
			p := path + "." + k
			switch {
			case !inX:
				ys, _ := marshalPlain(yv)
				out = append(out, fmt.Sprintf("%s added: %s", p, clip(string(ys))))
			case !inY:
				out = append(out, fmt.Sprintf("%s removed", p))
			default:
				walk(p, xv, yv)
			}
		}
	}
	walk(name, va, vb)
	return out
}

// stringDiff describes how a long string changed by its first differing
// line: `at line 2: "echo n = 100" -> "echo n = 50"`.
func stringDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y || i >= len(la) || i >= len(lb) {
			xq, _ := marshalPlain(strings.TrimSpace(x))
			yq, _ := marshalPlain(strings.TrimSpace(y))
			return fmt.Sprintf("at line %d: %s -> %s", i+1, clip(string(xq)), clip(string(yq)))
		}
	}
	return "(whitespace only)"
}

// clip shortens a long value for display.
func clip(s string) string {
	const max = 120
	if len(s) <= max {
		return s
	}
	return s[:max-3] + "..."
}

// keyDebug renders key input lines for DRAGONX_DEBUG=cachehash=1.
func keyDebug(addr Addr, key cache.Key, lines []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cachehash %s key %s\n", addr, key)
	for _, l := range lines {
		fmt.Fprintf(&b, "cachehash %s   %s\n", addr, l)
	}
	return b.String()
}
