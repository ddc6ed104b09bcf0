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
	for name, o := range m.Outputs {
		if o.Digest.IsZero() {
			return nil, corrupt(what, "output %q has no digest", name)
		}
		if o.Size < 0 {
			return nil, corrupt(what, "output %q has size %d", name, o.Size)
		}
	}
	if m.Outputs == nil {
		m.Outputs = map[string]Output{}
	}
	return m, nil
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
		if o.Size < 0 {
			return nil, fmt.Errorf("cache: manifest %s: output %q has size %d", c.Key, name, o.Size)
		}
	}
	return c, nil
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
