package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// valueFormat is the first byte of every value a store writes (manifests,
// snapshots, stat entries, meta values, blob headers). A reader that finds
// another byte treats the entry as foreign: a miss, never an error.
const valueFormat byte = 1

// ErrForeignVersion is matched by a miss whose entry was written in another
// format version (by a newer or older dragonx). Such entries are not
// corrupt, but this version cannot use them.
var ErrForeignVersion = errors.New("cache: entry of another format version")

// ErrOlderVersion is matched, with ErrForeignVersion, by a manifest of an
// older version than this dragonx writes: one it may replace (a push
// replaces such a manifest on a remote), where a newer one must be left to
// the newer dragonx that wrote it.
var ErrOlderVersion = errors.New("cache: written by an older dragonx")

// encodeManifest returns the stored form of m: valueFormat then JSON.
func encodeManifest(m *Manifest) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(valueFormat)
	if err := json.NewEncoder(&buf).Encode(m); err != nil {
		return nil, fmt.Errorf("cache: encoding manifest %s: %w", m.Key, err)
	}
	return buf.Bytes(), nil
}

// decodeManifest parses the stored form of the manifest under k. Every
// failure is a *MissError: ErrForeignVersion for another value or manifest
// version, ErrCorrupt for bytes that do not decode or name another key.
func decodeManifest(k Key, b []byte) (*Manifest, error) {
	what := manifestWhat(k)
	if len(b) == 0 {
		return nil, corrupt(what, "empty value")
	}
	if b[0] != valueFormat {
		return nil, missing(what, fmt.Errorf("%w: value format %d, want %d", ErrForeignVersion, b[0], valueFormat))
	}
	var v struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b[1:], &v); err != nil {
		return nil, corrupt(what, "%v", err)
	}
	if v.Version == nil {
		return nil, corrupt(what, "no version field")
	}
	if *v.Version < ManifestVersion {
		return nil, missing(what, fmt.Errorf("%w (%w): manifest version %d, this dragonx reads %d", ErrForeignVersion, ErrOlderVersion, *v.Version, ManifestVersion))
	}
	if *v.Version != ManifestVersion {
		return nil, missing(what, fmt.Errorf("%w: manifest version %d, this dragonx reads %d", ErrForeignVersion, *v.Version, ManifestVersion))
	}
	m := new(Manifest)
	if err := json.Unmarshal(b[1:], m); err != nil {
		return nil, corrupt(what, "%v", err)
	}
	if m.Key != k {
		return nil, corrupt(what, "value names key %s", m.Key)
	}
	if err := checkSizes(m); err != nil {
		return nil, corrupt(what, "%v", err)
	}
	if m.Outputs == nil {
		m.Outputs = map[string]Output{}
	}
	return m, nil
}

// checkSizes checks the sizes a decoded manifest records: none negative,
// every tree's TreeSize in (0, MaxTreeSize], no TreeSize on a file, no log
// size without a log, and one size per blob (a digest named twice names
// the same bytes).
func checkSizes(m *Manifest) error {
	sizes := map[Digest]int64{}
	same := func(d Digest, n int64, what string) error {
		if old, ok := sizes[d]; ok && old != n {
			return fmt.Errorf("%s: blob %s is recorded with %d and %d bytes", what, d.Short(), old, n)
		}
		sizes[d] = n
		return nil
	}
	for _, name := range m.OutputNames() {
		o := m.Outputs[name]
		if o.Digest.IsZero() {
			return fmt.Errorf("output %q has no digest", name)
		}
		if o.Size < 0 || o.TreeSize < 0 {
			return fmt.Errorf("output %q has size %d (tree %d)", name, o.Size, o.TreeSize)
		}
		n := o.Size
		if o.Tree {
			if o.TreeSize == 0 || o.TreeSize > MaxTreeSize {
				return fmt.Errorf("tree output %q records a tree blob of %d bytes", name, o.TreeSize)
			}
			n = o.TreeSize
		} else if o.TreeSize != 0 {
			return fmt.Errorf("output %q is a file but records a tree size", name)
		}
		if err := same(o.Digest, n, fmt.Sprintf("output %q", name)); err != nil {
			return err
		}
	}
	if m.LogSize < 0 || (m.Log.IsZero() && m.LogSize != 0) {
		return fmt.Errorf("log size %d for log %s", m.LogSize, m.Log)
	}
	if !m.Log.IsZero() {
		return same(m.Log, m.LogSize, "log")
	}
	return nil
}

// prepareManifest checks m before a store writes it and returns the copy to
// store (with Version filled in).
func prepareManifest(m *Manifest) (*Manifest, error) {
	if m == nil {
		return nil, errors.New("cache: PutManifest of a nil manifest")
	}
	c := m.clone()
	if c.Version == 0 {
		c.Version = ManifestVersion
	}
	if c.Version < 0 {
		return nil, fmt.Errorf("cache: manifest %s has version %d", c.Key, c.Version)
	}
	for name, o := range c.Outputs {
		if o.Digest.IsZero() {
			return nil, fmt.Errorf("cache: manifest %s: output %q has no digest", c.Key, name)
		}
		if o.Size < 0 || o.TreeSize < 0 {
			return nil, fmt.Errorf("cache: manifest %s: output %q has size %d (tree %d)", c.Key, name, o.Size, o.TreeSize)
		}
	}
	if c.LogSize < 0 {
		return nil, fmt.Errorf("cache: manifest %s: log size %d", c.Key, c.LogSize)
	}
	return c, nil
}

// completeSizes checks the sizes manifest c records against the stored
// blobs (stored returns a blob's size, and false when it is not stored) and
// fills in a zero LogSize or TreeSize. A blob that is not stored is an
// ErrMissingBlob, another size an ErrSizeMismatch.
func completeSizes(c *Manifest, stored func(Digest) (int64, bool, error)) error {
	check := func(d Digest, rec *int64, fill bool, what string) error {
		n, ok, err := stored(d)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: manifest %s (stage %s) names %s (%s)", ErrMissingBlob, c.Key.Short(), c.Stage, d, what)
		}
		if fill && *rec == 0 {
			*rec = n
		}
		if *rec != n {
			return fmt.Errorf("%w: manifest %s (stage %s): %s %s records %d bytes, the stored blob has %d", ErrSizeMismatch, c.Key.Short(), c.Stage, what, d.Short(), *rec, n)
		}
		return nil
	}
	for _, name := range c.OutputNames() {
		o := c.Outputs[name]
		var err error
		if o.Tree {
			err = check(o.Digest, &o.TreeSize, true, fmt.Sprintf("tree of output %q", name))
		} else {
			err = check(o.Digest, &o.Size, false, fmt.Sprintf("output %q", name))
		}
		if err != nil {
			return err
		}
		c.Outputs[name] = o
	}
	if !c.Log.IsZero() {
		if err := check(c.Log, &c.LogSize, true, "log"); err != nil {
			return err
		}
	}
	if err := checkSizes(c); err != nil {
		return fmt.Errorf("cache: manifest %s (stage %s): %w", c.Key.Short(), c.Stage, err)
	}
	return nil
}

// encodeValue prefixes b with valueFormat.
func encodeValue(b []byte) []byte {
	v := make([]byte, 1+len(b))
	v[0] = valueFormat
	copy(v[1:], b)
	return v
}

// decodeValue strips valueFormat from a stored value; another format byte
// is a foreign miss, an empty value a corrupt one.
func decodeValue(what string, v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, corrupt(what, "empty value")
	}
	if v[0] != valueFormat {
		return nil, missing(what, fmt.Errorf("%w: value format %d, want %d", ErrForeignVersion, v[0], valueFormat))
	}
	return v[1:], nil
}

// encodeStat and decodeStat give a StatEntry's stored form.
func encodeStat(e StatEntry) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("cache: encoding stat entry: %w", err)
	}
	return encodeValue(b), nil
}

func decodeStat(path string, v []byte) (StatEntry, error) {
	var e StatEntry
	b, err := decodeValue("stat entry "+path, v)
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, corrupt("stat entry "+path, "%v", err)
	}
	return e, nil
}

// MarshalManifest returns the portable form of m, used by bundles and
// remote caches: its JSON, indented with tabs, ending in a newline (the
// stored form without the value format byte).
func MarshalManifest(m *Manifest) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("cache: encoding manifest %s: %w", m.Key, err)
	}
	return append(b, '\n'), nil
}

// UnmarshalManifest parses the portable form of the manifest that belongs
// under k. Like a stored entry, anything unusable is a *MissError:
// ErrForeignVersion for another manifest version, ErrCorrupt for bytes that
// do not decode or that name another key.
func UnmarshalManifest(k Key, b []byte) (*Manifest, error) {
	return decodeManifest(k, append([]byte{valueFormat}, b...))
}
