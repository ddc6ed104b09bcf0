package sft

import (
	"github.com/hashicorp/hcl/v2"

	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
)

// DecodeBlock decodes a block into target (holding the defaults) as the
// sft stage decodes its blocks: forbidden attributes reported with their
// reasons, validate's *dragon.FieldError diagnostics on the attribute. For
// the other stage kinds that train the model (rl).
func DecodeBlock(b *hcl.Block, ctx *hcl.EvalContext, target any, forbidden map[string]string, validate func() error) hcl.Diagnostics {
	return decodeBlock(b, ctx, target, forbidden, validate)
}

// Summarize counts held-out samples per task kind (metrics.json's heldout).
func Summarize(samples []SampleRecord, phases []verdict.Phase) HeldoutFigures {
	return summarize(samples, phases)
}

// DefaultEval is the eval block's defaults.
func DefaultEval() EvalSpec {
	return EvalSpec{Tasks: defaultTasks, MaxNew: defaultMaxNew, Numeric: true, Target: defaultTarget}
}

// Validate checks an eval block.
func (e EvalSpec) Validate() error { return e.validate() }

// LoadVocab reads a vocabulary file and checks that it is this program's.
func LoadVocab(path string) (*vocab.Vocab, error) { return loadVocab(path) }
