package stages

import (
	"crypto/sha256"
	"encoding/hex"
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
// NAME, or NAME/KEY with the key escaped by keyDir, so that distinct keys
// always get distinct directories.
func (a Addr) Dir() string {
	if !a.Keyed {
		return a.Name
	}
	return a.Name + "/" + keyDir(a.Key)
}

// maxKeyDir bounds the length of a key's directory name, well under the
// 255 bytes most file systems allow.
const maxKeyDir = 200

// keyDir maps an instance key to a directory name, one to one: ASCII
// letters, digits, '-', '_' and '.' stay as they are, every other byte
// becomes %XX (upper-case hex), so "x y" is x%20y (not x_y, which is
// itself) and "é" is %C3%A9. The keys "." and ".." are written %2E and
// %2E%2E, and the empty key "%" (which no other key gives: an escape always
// has two hex digits). A name longer than maxKeyDir is cut, at an escape
// boundary, and ends in "~" and 32 hex digits of the key's SHA-256 ('~'
// itself is always escaped, so such a name cannot be another key's).
func keyDir(key string) string {
	switch key {
	case "":
		return "%"
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	s := b.String()
	if len(s) <= maxKeyDir {
		return s
	}
	sum := sha256.Sum256([]byte(key))
	tail := "~" + hex.EncodeToString(sum[:16])
	cut := maxKeyDir - len(tail)
	// Do not split an escape: back up to before a '%' in the last two bytes.
	for i := cut - 2; i < cut; i++ {
		if s[i] == '%' {
			cut = i
			break
		}
	}
	return s[:cut] + tail
}

// safeFileName makes a readable prefix for a temporary name (a stage's
// working directory): unsafe characters become '_' and it is cut at 64
// bytes. It is not one to one; the temporary name's random suffix is what
// makes it unique.
func safeFileName(s string) string {
	const maxLen = 64
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= maxLen {
			break
		}
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
