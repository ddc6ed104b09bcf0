package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/workload"
)

// written builds the hand database's dataset (gmm2 held out, with a test
// workload outside the database) and writes it into a directory.
func written(t *testing.T) (string, *Result) {
	t.Helper()
	db, specs := handDB(t)
	opts := DefaultOptions()
	opts.PairsPerWorkload = 2
	opts.Test = []*workload.Spec{specs["gmm2"], spec(t, `{"family":"SFM","M":128,"N":128}`)}
	opts.TestConstruction, opts.TestRefinement = 2, 3
	res, err := Build(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(dir, res); err != nil {
		t.Fatal(err)
	}
	return dir, res
}

// reencode writes entries as Write does.
func reencode[T any](t *testing.T, es []Entry[T]) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range es {
		if err := enc.Encode(e.Value); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func readFile[T any, P checker[T]](t *testing.T, path string) ([]byte, []Entry[T]) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	es, err := Read[T, P](bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b, es
}

// TestReadWhatWriteWrites: each file reads back to what Build produced,
// and writing it again gives the same bytes.
func TestReadWhatWriteWrites(t *testing.T) {
	dir, res := written(t)
	b, c := readFile[Construction](t, filepath.Join(dir, ConstructionFile))
	if len(c) != len(res.Construction) || !bytes.Equal(reencode(t, c), b) {
		t.Errorf("construction: %d entries (want %d), or they write other bytes", len(c), len(res.Construction))
	}
	b, r := readFile[Refinement](t, filepath.Join(dir, RefinementFile))
	if len(r) != len(res.Refinement) || len(r) == 0 || !bytes.Equal(reencode(t, r), b) {
		t.Errorf("refinement: %d entries (want %d), or they write other bytes", len(r), len(res.Refinement))
	}
	b, tc := readFile[ConstructionTask](t, filepath.Join(dir, TestConstructionFile))
	if len(tc) != 2 || !bytes.Equal(reencode(t, tc), b) {
		t.Errorf("test construction: %d entries, or they write other bytes", len(tc))
	}
	b, tr := readFile[RefinementPrompt](t, filepath.Join(dir, TestRefinementFile))
	if len(tr) != len(res.TestRefinement) || len(tr) == 0 || !bytes.Equal(reencode(t, tr), b) {
		t.Errorf("test refinement: %d entries (want %d), or they write other bytes", len(tr), len(res.TestRefinement))
	}
	for i, e := range c {
		if e.Line != i+1 {
			t.Errorf("entry %d on line %d", i, e.Line)
		}
	}
}

func TestReadErrors(t *testing.T) {
	dir, _ := written(t)
	good, err := os.ReadFile(filepath.Join(dir, RefinementFile))
	if err != nil {
		t.Fatal(err)
	}
	first := string(bytes.SplitN(good, []byte{'\n'}, 2)[0])
	var m map[string]any
	if err := json.Unmarshal([]byte(first), &m); err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) string {
		var c map[string]any
		_ = json.Unmarshal([]byte(first), &c)
		f(c)
		b, _ := json.Marshal(c)
		return string(b)
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{"not json", "\n\n{", "line 3: unexpected end of JSON input"},
		{"no spec", edit(func(m map[string]any) { delete(m, "workload") }), "line 1: no workload spec"},
		{"bad spec", edit(func(m map[string]any) { m["workload"] = map[string]any{"family": "NOPE"} }), "line 1: "},
		{"hash", edit(func(m map[string]any) { m["hash"] = "00" }), "is not the hash of the workload spec"},
		{"family", edit(func(m map[string]any) { m["family"] = "GMM" }), `family "GMM" is not the workload's family SFM`},
		{"kernel", edit(func(m map[string]any) { m["kernel"] = "" }), "no kernel text"},
		{"struct hash", edit(func(m map[string]any) { m["struct_hash"] = "12" }), "struct_hash"},
		{"no source", edit(func(m map[string]any) { delete(m, "source") }), "source: no script"},
		{"no trace", edit(func(m map[string]any) { m["target"].(map[string]any)["trace"] = nil }), "target: no trace"},
		{"latency", edit(func(m map[string]any) { m["target"].(map[string]any)["latency_s"] = 0 }), "target: latency_s 0"},
		{"label", edit(func(m map[string]any) { m["source"].(map[string]any)["latency_source"] = "" }), "source: no latency_source"},
		{"second line", first + "\n" + "[]", "line 2: json: cannot unmarshal array"},
	} {
		_, err := Read[Refinement](strings.NewReader(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	// A construction file is not a refinement file, but a refinement line
	// holds what a construction needs (the extra fields are ignored).
	if _, err := Read[Refinement](bytes.NewReader(mustRead(t, filepath.Join(dir, ConstructionFile)))); err == nil || !strings.Contains(err.Error(), "source: no script") {
		t.Errorf("construction file read as refinements: %v", err)
	}
	if es, err := Read[Construction](strings.NewReader("\n  \n")); err != nil || len(es) != 0 {
		t.Errorf("blank file: %v, %d entries", err, len(es))
	}
	// No newline after the last line.
	if es, err := Read[Refinement](strings.NewReader(first)); err != nil || len(es) != 1 {
		t.Errorf("last line without newline: %v, %d entries", err, len(es))
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzRead: the readers never panic, and what they accept writes back to
// lines they accept again.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"workload":{"family":"SFM","M":64,"N":64},"hash":"x","family":"SFM","kernel":"k","struct_hash":"0123456789abcdef","target":{"script":"s","trace":[],"latency_s":1e-6,"latency_source":"measured"}}`))
	f.Add([]byte("{}\n\n[]\n"))
	f.Add([]byte(`{"workload":{"family":"SFM","M":64,"N":64},"reference_latency_s":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzOne[Construction](t, data)
		fuzzOne[Refinement](t, data)
		fuzzOne[ConstructionTask](t, data)
		fuzzOne[RefinementPrompt](t, data)
	})
}

func fuzzOne[T any, P checker[T]](t *testing.T, data []byte) {
	es, err := Read[T, P](bytes.NewReader(data))
	if err != nil {
		return
	}
	var buf bytes.Buffer
	for _, e := range es {
		b, err := json.Marshal(e.Value)
		if err != nil {
			t.Fatalf("an accepted entry does not encode: %v", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	again, err := Read[T, P](&buf)
	if err != nil || len(again) != len(es) {
		t.Fatalf("written back, %d entries read as %d: %v", len(es), len(again), err)
	}
}

// TestScan: Scan gives Read's entries one at a time, and stops at the
// first error of its callback.
func TestScan(t *testing.T) {
	dir, _ := written(t)
	b := mustRead(t, filepath.Join(dir, RefinementFile))
	all, err := Read[Refinement](bytes.NewReader(b))
	if err != nil || len(all) < 2 {
		t.Fatalf("%d entries: %v", len(all), err)
	}
	var got []Entry[Refinement]
	stop := errors.New("stop")
	err = Scan[Refinement](bytes.NewReader(b), func(e Entry[Refinement]) error {
		got = append(got, e)
		if len(got) == 2 {
			return stop
		}
		return nil
	})
	if err != stop || len(got) != 2 || got[1].Line != all[1].Line || got[1].Value.Hash != all[1].Value.Hash {
		t.Fatalf("scan: %v after %d entries", err, len(got))
	}
}
