//go:build torch

package dragon

import (
	"fmt"
	"io"
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Model is a GPT: token and position embeddings, pre-LayerNorm blocks of
// causal multi-head self-attention and a GELU MLP, a final LayerNorm and an
// output head tied to the token embedding. Its tensors live on the
// runtime's torch thread; its methods may be called from any goroutine and
// run one at a time. Close it to free its tensors, once nothing else uses it.
type Model struct {
	rt     *Runtime
	cfg    Config
	dtype  gotch.DType
	specs  []paramSpec
	params []*ts.Tensor // paramSpecs order; leaves that require grad
	blocks []block
	// wte, wpe, lnfW, lnfB alias entries of params.
	wte, wpe, lnfW, lnfB *ts.Tensor
	// causal is the additive causal mask [Context, Context]: 0 on and
	// below the diagonal, -inf above.
	causal *ts.Tensor
	scale  *ts.Scalar // 1/sqrt(head dim)
	tok    string
	closed bool
	// training says whether training forwards (Trainer steps, Score with
	// gradients) apply dropout; SetTraining switches it.
	training bool
	// frozen models have no gradients and refuse optimizers (Freeze).
	frozen bool
	// lastPrefillRows is the number of rows the last SampleRows prefilled
	// (for tests of prompt sharing).
	lastPrefillRows int
}

// block aliases one transformer block's entries of Model.params.
type block struct {
	ln1W, ln1B, qkvW, qkvB, projW, projB *ts.Tensor
	ln2W, ln2B, fcW, fcB, mprojW, mprojB *ts.Tensor
}

// NewModel builds a model of cfg with weights drawn from seed (N(0, 0.02),
// residual projections N(0, 0.02/sqrt(2·Layers)), zero biases, unit
// LayerNorm gains). The weights are computed in Go, so a seed gives the same
// model whatever libtorch's thread count.
func (r *Runtime) NewModel(cfg Config, seed int64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	vals := initValues(cfg, seed)
	return r.newModel(cfg, gotch.Float, func(i int, s paramSpec) (*ts.Tensor, error) {
		return floatTensor(vals[i], gotch.Float, s.Shape)
	})
}

// newModel builds a model of cfg and float type dtype (Float, or Double for
// gradient checks) whose parameter i (paramSpecs order) is param(i, spec).
func (r *Runtime) newModel(cfg Config, dtype gotch.DType, param func(int, paramSpec) (*ts.Tensor, error)) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Model{rt: r, cfg: cfg, dtype: dtype, specs: paramSpecs(cfg), training: true}
	err := r.do(func() error {
		if err := m.build(param); err != nil {
			m.free()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// build creates the tensors on the torch thread.
func (m *Model) build(param func(int, paramSpec) (*ts.Tensor, error)) error {
	for i, s := range m.specs {
		t, err := param(i, s)
		if err != nil {
			return fmt.Errorf("dragon: creating %s: %w", s.Name, err)
		}
		m.params = append(m.params, t)
		if err := t.RequiresGrad_(true); err != nil {
			return fmt.Errorf("dragon: creating %s: %w", s.Name, err)
		}
	}
	m.alias()
	c := m.cfg.Context
	mask := make([]float64, c*c)
	for i := range c {
		for j := i + 1; j < c; j++ {
			mask[i*c+j] = math.Inf(-1)
		}
	}
	var err error
	if m.causal, err = floatTensor(mask, m.dtype, []int64{int64(c), int64(c)}); err != nil {
		return fmt.Errorf("dragon: creating the causal mask: %w", err)
	}
	m.scale = ts.FloatScalar(1 / math.Sqrt(float64(m.cfg.HeadDim())))
	return nil
}

// alias points the named fields at their entries of params.
func (m *Model) alias() {
	p := m.params
	m.wte, m.wpe = p[0], p[1]
	m.blocks = make([]block, m.cfg.Layers)
	for l := range m.blocks {
		q := p[2+12*l:]
		m.blocks[l] = block{q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9], q[10], q[11]}
	}
	m.lnfW, m.lnfB = p[len(p)-2], p[len(p)-1]
}

// free drops every tensor (on the torch thread).
func (m *Model) free() {
	for _, t := range m.params {
		t.Drop()
	}
	m.params = nil
	if m.causal != nil {
		m.causal.Drop()
		m.causal = nil
	}
	if m.scale != nil {
		m.scale.Drop()
		m.scale = nil
	}
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Tokenizer returns the identity of the tokenizer the model reads ("" when
// not set).
func (m *Model) Tokenizer() string { return m.tok }

// SetTokenizer records the identity of the tokenizer the model reads
// (Tokenizer.Identity); checkpoints carry it.
func (m *Model) SetTokenizer(identity string) { m.tok = identity }

// Close frees the model's tensors. Later calls return ErrClosed.
func (m *Model) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	return m.rt.do(func() error { m.free(); return nil })
}

// do runs fn on the torch thread unless the model is closed.
func (m *Model) do(fn func() error) error {
	if m.closed {
		return ErrClosed
	}
	return m.rt.do(fn)
}

// attention mixes q, k, v ([B, H, S, hd], [B, H, L, hd], [B, H, L, hd]) with
// the additive mask (broadcastable to [B, H, S, L]; nil for none) and
// returns [B, S, D].
func (m *Model) attention(a *arena, q, k, v, mask *ts.Tensor, b, s int64, train bool) *ts.Tensor {
	att := a.matmul(a.mulScalar(q, m.scale), a.transpose(k, -2, -1))
	if a.err == nil && mask != nil {
		a.inplace("add_", att.Add_(mask))
	}
	att = a.dropout(a.softmax(att, m.dtype), m.cfg.Dropout, train)
	y := a.transpose(a.matmul(att, v), 1, 2) // [B, S, H, hd]
	return a.reshape(y, b, s, int64(m.cfg.Width))
}

// qkv projects h ([B, S, D]) and splits it into q, k, v of [B, H, S, hd].
func (m *Model) qkv(a *arena, blk *block, h *ts.Tensor, b, s int64) (q, k, v *ts.Tensor) {
	heads, hd := int64(m.cfg.Heads), int64(m.cfg.HeadDim())
	x := a.permute(a.view(a.linear(h, blk.qkvW, blk.qkvB), b, s, 3, heads, hd), 2, 0, 3, 1, 4)
	return a.selectAt(x, 0, 0), a.selectAt(x, 0, 1), a.selectAt(x, 0, 2)
}

// mlp is the residual MLP branch of a block.
func (m *Model) mlp(a *arena, blk *block, x *ts.Tensor, train bool) *ts.Tensor {
	h := a.layerNorm(x, blk.ln2W, blk.ln2B, int64(m.cfg.Width))
	h = a.linear(a.gelu(a.linear(h, blk.fcW, blk.fcB)), blk.mprojW, blk.mprojB)
	return a.add(x, a.dropout(h, m.cfg.Dropout, train))
}

// hidden runs the embeddings and blocks over inputs ([B, T] int64, right
// padded) and returns the residual stream [B, T, D] before the final
// LayerNorm.
func (m *Model) hidden(a *arena, inputs *ts.Tensor, b, t int64, train bool) *ts.Tensor {
	d := int64(m.cfg.Width)
	x := a.add(a.embedding(m.wte, inputs), a.narrow(m.wpe, 0, 0, t))
	x = a.dropout(x, m.cfg.Dropout, train)
	mask := a.narrow(a.narrow(m.causal, 0, 0, t), 1, 0, t)
	for i := range m.blocks {
		blk := &m.blocks[i]
		h := a.layerNorm(x, blk.ln1W, blk.ln1B, d)
		q, k, v := m.qkv(a, blk, h, b, t)
		y := a.linear(m.attention(a, q, k, v, mask, b, t, train), blk.projW, blk.projB)
		x = a.add(x, a.dropout(y, m.cfg.Dropout, train))
		x = m.mlp(a, blk, x, train)
	}
	return x
}

// head applies the final LayerNorm and the tied output head to rows of
// [N, D] and returns logits [N, V].
func (m *Model) head(a *arena, x *ts.Tensor) *ts.Tensor {
	return a.linear(a.layerNorm(x, m.lnfW, m.lnfB, int64(m.cfg.Width)), m.wte, ts.None)
}

// lossSum is the summed cross-entropy of mb's target positions, with the
// graph for backward when train. Only the target rows go through the
// output head, so prompt and padding cost no head work.
func (m *Model) lossSum(a *arena, mb *microBatch, train bool) *ts.Tensor {
	b, t := int64(mb.Rows), int64(mb.Len)
	inputs := a.int64Tensor(mb.Inputs, b, t)
	x := a.view(m.hidden(a, inputs, b, t, train), b*t, int64(m.cfg.Width))
	// Padded target rows read position 0 and are ignored by the loss.
	n := len(mb.Targets) + mb.PadTargets
	labels := make([]int64, n)
	pos := make([]int64, n)
	copy(pos, mb.Targets)
	for i := range labels {
		labels[i] = ignoreLabel
		if i < len(mb.Targets) {
			labels[i] = mb.Labels[mb.Targets[i]]
		}
	}
	idx := a.int64Tensor(pos, int64(n))
	logits := m.head(a, a.indexSelect(x, 0, idx))
	return a.crossEntropySum(logits, a.int64Tensor(labels, int64(len(labels))))
}

// Logits returns the model's next-token logits at every position of tokens
// (one sequence, at most Context long): out[i][v] scores token v after
// tokens[:i+1]. It runs in eval mode (no dropout) without autograd.
func (m *Model) Logits(tokens []int) ([][]float32, error) {
	if len(tokens) == 0 || len(tokens) > m.cfg.Context {
		return nil, fmt.Errorf("dragon: logits of %d tokens (context %d)", len(tokens), m.cfg.Context)
	}
	in := make([]int64, len(tokens))
	for i, t := range tokens {
		if t < 0 || t >= m.cfg.Vocab {
			return nil, fmt.Errorf("dragon: token %d at position %d is outside the vocabulary of %d", t, i, m.cfg.Vocab)
		}
		in[i] = int64(t)
	}
	var flat []float32
	err := m.do(func() error {
		return noGrad(func() error {
			var a arena
			defer a.free()
			t := int64(len(in))
			x := a.view(m.hidden(&a, a.int64Tensor(in, 1, t), 1, t, false), t, int64(m.cfg.Width))
			logits := m.head(&a, x)
			if a.err != nil {
				return a.err
			}
			var err error
			flat, err = float32Values(logits, m.dtype, len(in)*m.cfg.Vocab)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(in))
	for i := range out {
		out[i] = flat[i*m.cfg.Vocab : (i+1)*m.cfg.Vocab]
	}
	return out, nil
}

// paramValues copies every parameter out (torch thread).
func (m *Model) paramValues() ([][]float32, error) {
	out := make([][]float32, len(m.params))
	for i, t := range m.params {
		v, err := float32Values(t, m.dtype, int(m.specs[i].numel()))
		if err != nil {
			return nil, fmt.Errorf("dragon: reading %s: %w", m.specs[i].Name, err)
		}
		out[i] = v
	}
	return out, nil
}

// WriteCheckpoint writes the model (config, tokenizer identity, weights) to
// w as a single checkpoint file (format in checkpoint.go).
func (m *Model) WriteCheckpoint(w io.Writer) error {
	var vals [][]float32
	err := m.do(func() error {
		var err error
		vals, err = m.paramValues()
		return err
	})
	if err != nil {
		return err
	}
	return writeCheckpoint(w, &checkpoint{Config: m.cfg, Tokenizer: m.tok, Values: vals})
}

// ReadCheckpoint reads a model from a checkpoint written by
// Model.WriteCheckpoint or Trainer.WriteCheckpoint (whose training state it
// ignores). The model's Tokenizer is the identity the checkpoint recorded;
// callers check it against the tokenizer they use.
func (r *Runtime) ReadCheckpoint(rd io.Reader) (*Model, error) {
	ck, err := readCheckpoint(rd)
	if err != nil {
		return nil, err
	}
	return r.modelFrom(ck)
}

// modelFrom builds the model of a decoded checkpoint.
func (r *Runtime) modelFrom(ck *checkpoint) (*Model, error) {
	m, err := r.newModel(ck.Config, gotch.Float, func(i int, s paramSpec) (*ts.Tensor, error) {
		return float32Tensor(ck.Values[i], s.Shape)
	})
	if err != nil {
		return nil, err
	}
	m.tok = ck.Tokenizer
	return m, nil
}
