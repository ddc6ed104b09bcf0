package sft

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

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

// writeAtomic writes a file through a temporary file renamed into place, so
// that an interruption leaves the old file or the new one, never half of one.
func writeAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	werr := write(tmp)
	if werr == nil {
		werr = tmp.Sync()
	}
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
