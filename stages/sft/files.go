package sft

import (
	"fmt"
	"io"
	"os"

	"dragonx/internal/safeio"
	"dragonx/kernels/vocab"
)

func loadVocab(path string) (*vocab.Vocab, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v, err := vocab.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("the vocabulary file: %w", err)
	}
	def, err := vocab.Default()
	if err != nil {
		return nil, err
	}
	if v.Identity() != def.Identity() {
		return nil, fmt.Errorf("the vocabulary file (%d tokens, %s) is not this program's tokenizer vocabulary (%d tokens, %s): the encode stage and this binary come from different versions; rebuild and rerun encode", v.VocabSize(), v.Identity(), def.VocabSize(), def.Identity())
	}
	return def, nil
}

// MaxCheckpoint bounds a checkpoint read back from a stage's state
// directory (a model of the paper's size with its optimizer state is a few
// hundred MB).
const MaxCheckpoint = 16 << 30

// maxStateFile bounds the other files of a state directory (a loss curve, a
// sample log).
const maxStateFile = 1 << 30

// OpenCheckpoint opens a checkpoint that a stage left in its state
// directory (trainer.ckpt) for reading, through safeio: a regular file only,
// never a symbolic link (O_NOFOLLOW), a named pipe refused without waiting
// for a writer, read through MaxCheckpoint. Checkpoints are written with
// safeio.WriteAtomic, which replaces whatever is at the path. rl resumes
// through it too.
func OpenCheckpoint(path string) (io.ReadCloser, error) {
	return safeio.OpenLimited(path, MaxCheckpoint, safeio.Options{NoFollow: true})
}

// ReadStateFile reads a small file of a state directory (a loss curve, a
// sample log) as OpenCheckpoint opens a checkpoint, through a limit of 1 GiB.
func ReadStateFile(path string) ([]byte, error) {
	return safeio.ReadFile(path, maxStateFile, safeio.Options{NoFollow: true})
}
