package dragon

import (
	"errors"
	"fmt"
	"math"
)

// Config describes a model. The zero value is not valid; start from
// DefaultConfig and override fields (HCL decoding into a filled Config keeps
// the defaults of omitted attributes).
type Config struct {
	// Layers is the number of transformer blocks.
	Layers int `hcl:"layers,optional" json:"layers"`
	// Width is the model (embedding) dimension.
	Width int `hcl:"width,optional" json:"width"`
	// Heads is the number of attention heads; it divides Width.
	Heads int `hcl:"heads,optional" json:"heads"`
	// Context is the longest sequence the model reads (prompt plus output).
	Context int `hcl:"context,optional" json:"context"`
	// Vocab is the vocabulary size, the tokenizer's VocabSize.
	Vocab int `hcl:"vocab,optional" json:"vocab"`
	// Dropout is the dropout probability used while training (attention
	// weights, residual branches and embeddings); 0 turns it off.
	Dropout float64 `hcl:"dropout,optional" json:"dropout"`
}

// DefaultConfig is the default little dragon: about 2.5M parameters with a
// 512-token vocabulary (the size shared/design/lm-rl.md §4.1 recommends for a
// 2-core CPU). Vocab is normally replaced by the tokenizer's size.
func DefaultConfig() Config {
	return Config{Layers: 4, Width: 256, Heads: 8, Context: 512, Vocab: 512, Dropout: 0.1}
}

// Limits that keep a configuration's arithmetic (and a corrupt checkpoint's)
// far from overflow; every real configuration is well inside them.
const (
	maxLayers  = 1024
	maxWidth   = 1 << 16
	maxContext = 1 << 13 // the causal mask is a [context, context] tensor
	maxVocab   = 1 << 24
)

// FieldError is a problem with one field of a configuration; Field is the
// HCL attribute name, so a stage kind can point at the attribute.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return fmt.Sprintf("dragon: %s: %s", e.Field, e.Problem) }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Validate reports every problem of c, each as a *FieldError, joined.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, field, format string, args ...any) {
		if !ok {
			errs = append(errs, fieldErr(field, format, args...))
		}
	}
	check(c.Layers >= 1 && c.Layers <= maxLayers, "layers", "%d is not in [1, %d]", c.Layers, maxLayers)
	check(c.Width >= 1 && c.Width <= maxWidth, "width", "%d is not in [1, %d]", c.Width, maxWidth)
	check(c.Heads >= 1, "heads", "%d is not positive", c.Heads)
	if c.Heads >= 1 && c.Width >= 1 {
		check(c.Width%c.Heads == 0, "heads", "%d does not divide width %d", c.Heads, c.Width)
	}
	check(c.Context >= 1 && c.Context <= maxContext, "context", "%d is not in [1, %d]", c.Context, maxContext)
	check(c.Vocab >= 2 && c.Vocab <= maxVocab, "vocab", "%d is not in [2, %d]", c.Vocab, maxVocab)
	check(c.Dropout >= 0 && c.Dropout < 1 && !math.IsNaN(c.Dropout), "dropout", "%v is not in [0, 1)", c.Dropout)
	return errors.Join(errs...)
}

// HeadDim is the width of one attention head.
func (c Config) HeadDim() int { return c.Width / c.Heads }

// NumParams is the number of parameters: embeddings (token and position),
// per block two LayerNorms, the fused QKV and output projections of
// attention and the two MLP projections (with biases), and the final
// LayerNorm. The output head is tied to the token embedding.
func (c Config) NumParams() int64 {
	d := int64(c.Width)
	return int64(c.Vocab)*d + int64(c.Context)*d + int64(c.Layers)*c.blockParams() + 2*d
}

// blockParams is the parameter count of one transformer block:
// LN (2D) + QKV (3D²+3D) + proj (D²+D) + LN (2D) + fc (4D²+4D) + proj (4D²+D).
func (c Config) blockParams() int64 {
	d := int64(c.Width)
	return 12*d*d + 13*d
}

// TrainFLOPsPerToken is the arithmetic of one training token (forward and
// backward, 3x the forward's) at sequence length t: 6 per weight of the
// non-embedding matrices and of the tied output head, plus the attention
// score and value products over the full t×t square (the causal mask does not
// shrink the matrix products): 12·L·t·D. Biases, norms and the optimizer are
// left out, as is usual for MFU.
func (c Config) TrainFLOPsPerToken(t int) float64 {
	d := float64(c.Width)
	matrices := float64(c.Layers)*12*d*d + float64(c.Vocab)*d
	return 6*matrices + 12*float64(c.Layers)*float64(t)*d
}
