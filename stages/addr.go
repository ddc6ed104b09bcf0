package stages

import (
	"fmt"
	"strconv"
	"strings"
)

// Addr is the immutable address of a stage instance, printed in HCL traversal
// syntax: stage.gen, or stage.rl["log"] for an instance of a stage with
// for_each.
type Addr struct {
	Name  string
	Key   string // instance key; meaningful only when Keyed
	Keyed bool
}

// String returns the address in HCL syntax: stage.NAME or stage.NAME["KEY"].
func (a Addr) String() string { return "stage." + a.Short() }

// Short returns the address without the "stage." prefix: NAME or NAME["KEY"].
func (a Addr) Short() string {
	if !a.Keyed {
		return a.Name
	}
	return a.Name + "[" + strconv.Quote(a.Key) + "]"
}

// Dir returns a relative directory for the instance's materialised outputs:
// NAME, or NAME/KEY (the key made safe for a file name).
func (a Addr) Dir() string {
	if !a.Keyed {
		return a.Name
	}
	return a.Name + "/" + safeFileName(a.Key)
}

func safeFileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 || s == "." || s == ".." {
		return "_"
	}
	return b.String()
}

// ParseAddr parses what a person types on the command line to name a stage:
// "gen", "stage.gen", `rl["log"]`, `stage.rl["log"]` or rl[log].
func ParseAddr(s string) (Addr, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "stage.")
	name, rest, keyed := strings.Cut(s, "[")
	if !validName(name) {
		return Addr{}, fmt.Errorf("stages: %q is not a stage address (want NAME or NAME[\"KEY\"])", s)
	}
	if !keyed {
		return Addr{Name: name}, nil
	}
	key, ok := strings.CutSuffix(rest, "]")
	if !ok {
		return Addr{}, fmt.Errorf("stages: %q: missing ] after instance key", s)
	}
	if strings.HasPrefix(key, `"`) {
		k, err := strconv.Unquote(key)
		if err != nil {
			return Addr{}, fmt.Errorf("stages: %q: bad quoted instance key: %v", s, err)
		}
		key = k
	}
	return Addr{Name: name, Key: key, Keyed: true}, nil
}

// validName reports whether s is an HCL identifier usable as a stage or
// variable name.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case (r >= '0' && r <= '9') || r == '-':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}
