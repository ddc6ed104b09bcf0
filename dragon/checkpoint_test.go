package dragon

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files and fuzz seeds under testdata")

// goldenCheckpoint is a small training checkpoint with fixed content.
func goldenCheckpoint(train bool) *checkpoint { return goldenCheckpointOf(train, false) }

// goldenCheckpointOf is goldenCheckpoint, or an optimizer's checkpoint when
// optim.
func goldenCheckpointOf(train, optim bool) *checkpoint {
	cfg := Config{Layers: 1, Width: 4, Heads: 2, Context: 3, Vocab: 5, Dropout: 0.1}
	ck := &checkpoint{Config: cfg, Tokenizer: VocabularyIdentity("word/v1", []string{"a", "b", "c", "d", "e"})}
	tens := checkpointTensors(cfg, train || optim)
	for i, t := range tens {
		v := make([]float32, numel(t.Shape))
		for j := range v {
			v[j] = float32(i) + float32(j)/8
		}
		ck.Values = append(ck.Values, v)
	}
	if train {
		tc := DefaultTrainConfig()
		tc.Steps = 10
		ck.Train = &trainState{Config: tc, Step: 4, Epoch: 1, Next: 2, Tokens: 1234,
			TorchRNG: []byte{1, 2, 3, 250}, Data: examplesDigest([]Example{{Prompt: []int{1}, Target: []int{2}}})}
	}
	if optim {
		ac := DefaultTrainConfig().AdamW()
		ac.Steps = 0
		ck.Optim = &optimState{Config: ac, Step: 7, TorchRNG: []byte{4, 5}, State: []byte(`{"rl_step":7,"seed":[1,2]}`)}
	}
	return ck
}

func encode(t testing.TB, ck *checkpoint) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeCheckpoint(&buf, ck); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCheckpointGolden pins the checkpoint format: the bytes of a fixed
// checkpoint must not change without a format version bump.
func TestCheckpointGolden(t *testing.T) {
	for _, kind := range []string{"model", "train", "optimizer"} {
		name := kind + ".ckpt"
		ck := goldenCheckpointOf(kind == "train", kind == "optimizer")
		got := encode(t, ck)
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			writeFuzzSeed(t, "FuzzReadCheckpoint", name, got)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encoding changed (%d bytes, golden %d); bump checkpointVersion or run go test -update", name, len(got), len(want))
		}
		back, err := readCheckpoint(bytes.NewReader(want))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(back, ck) {
			t.Errorf("%s: read back %+v; want %+v", name, back, ck)
		}
		// Model and trainer checkpoints stay version 1, readable by older
		// builds; an optimizer's is version 2.
		if v, want := want[8], map[bool]byte{false: 1, true: 2}[kind == "optimizer"]; v != want {
			t.Errorf("%s: version %d; want %d", name, v, want)
		}
	}
	// A version 1 file with optimizer state, and both states, are refused.
	opt := encode(t, goldenCheckpointOf(false, true))
	opt[8] = 1
	if _, err := readCheckpoint(bytes.NewReader(opt)); !errors.Is(err, ErrBadCheckpoint) {
		t.Errorf("optimizer state in a version 1 file: %v", err)
	}
	both := goldenCheckpointOf(true, true)
	var buf bytes.Buffer
	if err := writeCheckpoint(&buf, both); err == nil {
		t.Error("a checkpoint with both states was written")
	}
}

// writeFuzzSeed writes data as a seed of the fuzz target.
func writeFuzzSeed(t *testing.T, target, name string, data []byte) {
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointRejectsDamage(t *testing.T) {
	good := encode(t, goldenCheckpoint(true))
	hdrEnd := 16 + int(uint32(good[12])|uint32(good[13])<<8|uint32(good[14])<<16|uint32(good[15])<<24)
	tests := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"empty", func(b []byte) []byte { return nil }},
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"version", func(b []byte) []byte { b[8] = 2; return b }},
		{"header length", func(b []byte) []byte { b[15] = 0x7f; return b }},
		{"header byte", func(b []byte) []byte { b[20] ^= 0x20; return b }},
		{"data byte", func(b []byte) []byte { b[hdrEnd+5] ^= 1; return b }},
		{"digest byte", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"truncated data", func(b []byte) []byte { return b[:hdrEnd+100] }},
		{"truncated digest", func(b []byte) []byte { return b[:len(b)-1] }},
		{"trailing byte", func(b []byte) []byte { return append(b, 0) }},
	}
	for _, tt := range tests {
		b := tt.edit(bytes.Clone(good))
		if _, err := readCheckpoint(bytes.NewReader(b)); !errors.Is(err, ErrBadCheckpoint) {
			t.Errorf("%s: readCheckpoint = %v; want ErrBadCheckpoint", tt.name, err)
		}
	}
	if _, err := readCheckpoint(bytes.NewReader(good)); err != nil {
		t.Errorf("undamaged: %v", err)
	}
}

func TestWriteCheckpointChecksValues(t *testing.T) {
	ck := goldenCheckpoint(false)
	ck.Values = ck.Values[1:]
	if err := writeCheckpoint(&bytes.Buffer{}, ck); err == nil {
		t.Error("writeCheckpoint accepted a missing tensor")
	}
	ck = goldenCheckpoint(false)
	ck.Values[3] = ck.Values[3][1:]
	if err := writeCheckpoint(&bytes.Buffer{}, ck); err == nil {
		t.Error("writeCheckpoint accepted a tensor of the wrong size")
	}
}

// FuzzReadCheckpoint checks that any bytes either fail with
// ErrBadCheckpoint or decode to a checkpoint that re-encodes and decodes to
// itself; it must never panic or allocate for data it was not given.
func FuzzReadCheckpoint(f *testing.F) {
	f.Add(encode(f, goldenCheckpoint(false)))
	f.Add([]byte(checkpointMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		ck, err := readCheckpoint(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrBadCheckpoint) {
				t.Fatalf("error %v does not wrap ErrBadCheckpoint", err)
			}
			return
		}
		again, err := readCheckpoint(bytes.NewReader(encode(t, ck)))
		if err != nil {
			t.Fatalf("re-encoded checkpoint does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, ck) {
			t.Fatalf("round trip changed the checkpoint")
		}
	})
}

func TestExamplesDigest(t *testing.T) {
	a := []Example{{Prompt: []int{1, 2}, Target: []int{3}}}
	b := []Example{{Prompt: []int{1}, Target: []int{2, 3}}}
	if examplesDigest(a) == examplesDigest(b) {
		t.Error("examples that differ only in the prompt/target split have the same digest")
	}
	if examplesDigest(a) != examplesDigest([]Example{{Prompt: []int{1, 2}, Target: []int{3}}}) {
		t.Error("examplesDigest is not a function of the examples")
	}
}
