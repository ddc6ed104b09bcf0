package dragon

// Checkpoint file format, version 2. A checkpoint is one self-contained byte
// stream (the cache stores it as a blob):
//
//	magic    8 bytes  "DRAGONCK"
//	version  uint32   little-endian, 1 or 2
//	hlen     uint32   little-endian, length of the header
//	header   hlen bytes of JSON: {"config", "tokenizer", "tensors", "train", "optimizer"}
//	data     every tensor of header.tensors in order, float32 little-endian
//	digest   32 bytes, SHA-256 of everything before it
//
// header.tensors lists name and shape of each tensor. The parameters come
// first, in the model's fixed order (paramSpecs); a training checkpoint
// ("train" present) continues with AdamW's first moments ("adam.m.<name>")
// and second moments ("adam.v.<name>") of every parameter. Readers accept
// exactly the list that the config implies, so a truncated, corrupt or
// foreign file is an error, never a half-loaded model. "train" holds what an
// exact resume needs besides the moments: the training config, the step, the
// data cursor, libtorch's RNG state and a digest of the training examples.
//
// Version 2 adds "optimizer" (an Optimizer's checkpoint: its config, step,
// libtorch's RNG state and the caller's own state as JSON), which also
// brings the moments. A checkpoint without it is written as version 1,
// byte for byte as before, so older builds still read model and trainer
// checkpoints and refuse optimizer ones by their version.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"
)

const (
	checkpointMagic   = "DRAGONCK"
	checkpointVersion = 2
	// checkpointVersion1 is written when no version 2 field is present.
	checkpointVersion1 = 1
	// maxHeaderLen bounds the JSON header (a 1024-layer model lists about
	// 12k tensors, well under 1 MiB).
	maxHeaderLen = 16 << 20
)

// ErrBadCheckpoint is wrapped by every error about a checkpoint's bytes.
var ErrBadCheckpoint = errors.New("dragon: bad checkpoint")

// checkpoint is the decoded content of a checkpoint file.
type checkpoint struct {
	Config    Config
	Tokenizer string
	// Train is nil for a model-only checkpoint.
	Train *trainState
	// Optim is an Optimizer's state (nil but for its checkpoints; never
	// with Train).
	Optim *optimState
	// Values holds every tensor's values in checkpointTensors order.
	Values [][]float32
}

// trainState is what an exact resume needs besides the weights and moments.
type trainState struct {
	Config TrainConfig `json:"config"`
	// Step is the number of optimizer steps done.
	Step int `json:"step"`
	// Epoch and Next locate the next micro-batch: index Next of planEpoch's
	// plan for Epoch.
	Epoch int `json:"epoch"`
	Next  int `json:"next"`
	// Tokens counts the input tokens trained on so far.
	Tokens int64 `json:"tokens"`
	// TorchRNG is libtorch's CPU generator state (dropout).
	TorchRNG []byte `json:"torch_rng"`
	// Data is examplesDigest of the training examples.
	Data string `json:"data"`
}

// optimState is what an Optimizer's exact resume needs besides the
// weights and moments.
type optimState struct {
	Config AdamWConfig `json:"config"`
	// Step is the number of optimizer steps done.
	Step int `json:"step"`
	// TorchRNG is libtorch's CPU generator state (dropout).
	TorchRNG []byte `json:"torch_rng"`
	// State is the caller's own state (e.g. a policy-gradient stage's
	// cursor), opaque JSON.
	State json.RawMessage `json:"state,omitempty"`
}

type checkpointHeader struct {
	Config    Config          `json:"config"`
	Tokenizer string          `json:"tokenizer"`
	Tensors   []checkpointTen `json:"tensors"`
	Train     *trainState     `json:"train,omitempty"`
	Optim     *optimState     `json:"optimizer,omitempty"`
}

type checkpointTen struct {
	Name  string  `json:"name"`
	Shape []int64 `json:"shape"`
}

// checkpointTensors lists the tensors a checkpoint of cfg holds: the
// parameters, then AdamW's moments when moments (a trainer's or an
// optimizer's checkpoint).
func checkpointTensors(cfg Config, moments bool) []checkpointTen {
	specs := paramSpecs(cfg)
	var out []checkpointTen
	for _, prefix := range []string{"", "adam.m.", "adam.v."} {
		for _, s := range specs {
			out = append(out, checkpointTen{Name: prefix + s.Name, Shape: s.Shape})
		}
		if !moments {
			break
		}
	}
	return out
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// writeCheckpoint writes ck to w in the format above.
func writeCheckpoint(w io.Writer, ck *checkpoint) error {
	if err := ck.Config.Validate(); err != nil {
		return fmt.Errorf("dragon: writing checkpoint: %w", err)
	}
	if ck.Train != nil && ck.Optim != nil {
		return fmt.Errorf("dragon: writing checkpoint: both a trainer's and an optimizer's state")
	}
	tens := checkpointTensors(ck.Config, ck.Train != nil || ck.Optim != nil)
	if len(ck.Values) != len(tens) {
		return fmt.Errorf("dragon: writing checkpoint: %d tensors, want %d", len(ck.Values), len(tens))
	}
	for i, t := range tens {
		if int64(len(ck.Values[i])) != numel(t.Shape) {
			return fmt.Errorf("dragon: writing checkpoint: tensor %s has %d values, want %d", t.Name, len(ck.Values[i]), numel(t.Shape))
		}
	}
	hdr, err := json.Marshal(checkpointHeader{Config: ck.Config, Tokenizer: ck.Tokenizer, Tensors: tens, Train: ck.Train, Optim: ck.Optim})
	if err != nil {
		return fmt.Errorf("dragon: writing checkpoint: %w", err)
	}
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<16)
	var pre [16]byte
	copy(pre[:], checkpointMagic)
	version := uint32(checkpointVersion1)
	if ck.Optim != nil {
		version = checkpointVersion
	}
	binary.LittleEndian.PutUint32(pre[8:], version)
	binary.LittleEndian.PutUint32(pre[12:], uint32(len(hdr)))
	bw.Write(pre[:])
	bw.Write(hdr)
	var buf [4]byte
	for _, vals := range ck.Values {
		for _, x := range vals {
			binary.LittleEndian.PutUint32(buf[:], math.Float32bits(x))
			bw.Write(buf[:])
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("dragon: writing checkpoint: %w", err)
	}
	if _, err := w.Write(h.Sum(nil)); err != nil {
		return fmt.Errorf("dragon: writing checkpoint: %w", err)
	}
	return nil
}

// hashingReader hashes what it reads.
type hashingReader struct {
	r io.Reader
	h hash.Hash
}

func (hr *hashingReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	hr.h.Write(p[:n])
	return n, err
}

// readCheckpoint decodes a checkpoint, checking its structure against its
// config and its bytes against the trailing digest. Errors wrap
// ErrBadCheckpoint. Memory grows only with the bytes actually read, so a
// header that claims huge tensors fails on the missing data, not on an
// allocation.
func readCheckpoint(r io.Reader) (*checkpoint, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadCheckpoint, fmt.Sprintf(format, args...))
	}
	hr := &hashingReader{r: bufio.NewReaderSize(r, 1<<16), h: sha256.New()}
	var pre [16]byte
	if _, err := io.ReadFull(hr, pre[:]); err != nil {
		return nil, bad("reading the preamble: %v", err)
	}
	if string(pre[:8]) != checkpointMagic {
		return nil, bad("not a dragon checkpoint (magic %q)", pre[:8])
	}
	version := binary.LittleEndian.Uint32(pre[8:])
	if version != checkpointVersion1 && version != checkpointVersion {
		return nil, bad("format version %d, this build reads %d and %d", version, checkpointVersion1, checkpointVersion)
	}
	hlen := binary.LittleEndian.Uint32(pre[12:])
	if hlen > maxHeaderLen {
		return nil, bad("header of %d bytes (limit %d)", hlen, maxHeaderLen)
	}
	hdrBytes := make([]byte, hlen)
	if _, err := io.ReadFull(hr, hdrBytes); err != nil {
		return nil, bad("reading the header: %v", err)
	}
	var hdr checkpointHeader
	dec := json.NewDecoder(bytes.NewReader(hdrBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hdr); err != nil {
		return nil, bad("decoding the header: %v", err)
	}
	if dec.More() {
		return nil, bad("trailing data after the header")
	}
	if err := hdr.Config.Validate(); err != nil {
		return nil, bad("config: %v", err)
	}
	if hdr.Train != nil {
		if err := hdr.Train.Config.Validate(); err != nil {
			return nil, bad("training config: %v", err)
		}
		if hdr.Train.Step < 0 || hdr.Train.Epoch < 0 || hdr.Train.Next < 0 || hdr.Train.Tokens < 0 {
			return nil, bad("negative training cursor")
		}
	}
	if hdr.Optim != nil {
		if version < 2 {
			return nil, bad("optimizer state in a version %d file", version)
		}
		if hdr.Train != nil {
			return nil, bad("both a trainer's and an optimizer's state")
		}
		if err := hdr.Optim.Config.Validate(); err != nil {
			return nil, bad("optimizer config: %v", err)
		}
		if hdr.Optim.Step < 0 {
			return nil, bad("negative optimizer step")
		}
	}
	want := checkpointTensors(hdr.Config, hdr.Train != nil || hdr.Optim != nil)
	if !slices.EqualFunc(hdr.Tensors, want, func(a, b checkpointTen) bool {
		return a.Name == b.Name && slices.Equal(a.Shape, b.Shape)
	}) {
		return nil, bad("tensor list does not match the config (%d tensors, want %d)", len(hdr.Tensors), len(want))
	}
	ck := &checkpoint{Config: hdr.Config, Tokenizer: hdr.Tokenizer, Train: hdr.Train, Optim: hdr.Optim}
	chunk := make([]byte, 1<<16)
	for _, t := range want {
		n := numel(t.Shape)
		vals := make([]float32, 0, min(n, 1<<16))
		for left := n * 4; left > 0; {
			m := min(left, int64(len(chunk)))
			if _, err := io.ReadFull(hr, chunk[:m]); err != nil {
				return nil, bad("reading tensor %s: %v", t.Name, err)
			}
			for i := int64(0); i < m; i += 4 {
				vals = append(vals, math.Float32frombits(binary.LittleEndian.Uint32(chunk[i:])))
			}
			left -= m
		}
		ck.Values = append(ck.Values, vals)
	}
	sum := hr.h.Sum(nil)
	var got [sha256.Size]byte
	if _, err := io.ReadFull(hr.r, got[:]); err != nil {
		return nil, bad("reading the digest: %v", err)
	}
	if !bytes.Equal(got[:], sum) {
		return nil, bad("digest mismatch: the file is corrupt")
	}
	if n, _ := hr.r.Read(chunk[:1]); n != 0 {
		return nil, bad("trailing bytes after the digest")
	}
	return ck, nil
}

// examplesDigest identifies a list of examples (a resumed run must train on
// the same data).
func examplesDigest(exs []Example) string {
	h := sha256.New()
	var b [8]byte
	put := func(x int) {
		binary.LittleEndian.PutUint64(b[:], uint64(x))
		h.Write(b[:])
	}
	put(len(exs))
	for _, ex := range exs {
		for _, part := range [][]int{ex.Prompt, ex.Target} {
			put(len(part))
			for _, t := range part {
				put(t)
			}
		}
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}
