//go:build torch

package dragon

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"dragonx/internal/torchrt"
)

// singleThreadRows is the number of positions per decoding step below which
// the step runs on one thread.
const singleThreadRows = 8

// kvCache holds each layer's keys and values, [B, H, slots, hd].
type kvCache struct {
	k, v []*ts.Tensor
}

func (c *kvCache) free() {
	for _, t := range append(c.k, c.v...) {
		t.Drop()
	}
	c.k, c.v = nil, nil
}

// Sample continues each prompt (a batch, decoded together) and returns one
// Sample per prompt. Prompts may differ in length: they are left-padded, and
// the padding is masked out and does not shift positions. By default it
// decodes with a KV cache (keys and values of earlier tokens are kept, so
// each new token costs one position's work); opts.NoCache recomputes the
// whole context instead and gives the same tokens. It runs without dropout
// or autograd. Cancelling ctx stops it between tokens.
func (m *Model) Sample(ctx context.Context, prompts [][]int, opts SampleOptions) ([]Sample, error) {
	if err := opts.Validate(m.cfg.Vocab); err != nil {
		return nil, err
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("dragon: sampling: no prompts")
	}
	p := 0
	for i, pr := range prompts {
		if len(pr) == 0 {
			return nil, fmt.Errorf("dragon: sampling: prompt %d is empty", i)
		}
		for j, t := range pr {
			if t < 0 || t >= m.cfg.Vocab {
				return nil, fmt.Errorf("dragon: sampling: prompt %d has token %d at %d, outside the vocabulary of %d", i, t, j, m.cfg.Vocab)
			}
		}
		p = max(p, len(pr))
	}
	if p > m.cfg.Context {
		return nil, fmt.Errorf("dragon: sampling: a prompt of %d tokens is longer than the context of %d", p, m.cfg.Context)
	}
	// The last generated token is never fed back, so a sequence may end one
	// token past the context (as in training, where the model reads all but
	// the last token).
	maxNew := m.cfg.Context - p + 1
	if opts.MaxNew > 0 {
		maxNew = min(maxNew, opts.MaxNew)
	}
	d := &decoder{m: m, b: len(prompts), p: p, slots: p + maxNew - 1, noCache: opts.NoCache, threads: m.rt.info.Threads}
	d.pads = make([]int, d.b)
	d.seqs = make([][]int64, d.b)
	for i, pr := range prompts {
		d.pads[i] = p - len(pr)
		d.seqs[i] = make([]int64, p, p+maxNew)
		for j, t := range pr {
			d.seqs[i][d.pads[i]+j] = int64(t)
		}
	}
	d.curThreads = d.threads
	defer m.do(func() error { d.setThreads(d.threads); d.cache.free(); d.a.reset(); return nil })

	pk := newPicker(opts, m.cfg.Vocab)
	out := make([]Sample, d.b)
	done := make([]bool, d.b)
	logits, err := d.run(0, p)
	for step := 0; err == nil; step++ {
		if err = ctx.Err(); err != nil {
			break
		}
		all := true
		for i := range out {
			if done[i] {
				d.seqs[i] = append(d.seqs[i], 0)
				continue
			}
			row := logits[i*m.cfg.Vocab : (i+1)*m.cfg.Vocab]
			var tok int
			var lp float32
			if tok, lp, err = pk.pick(i, out[i].Tokens, row); err != nil {
				break
			}
			out[i].Tokens = append(out[i].Tokens, tok)
			out[i].LogProbs = append(out[i].LogProbs, lp)
			d.seqs[i] = append(d.seqs[i], int64(tok))
			if slices.Contains(opts.Stop, tok) {
				out[i].Stopped, done[i] = true, true
			} else {
				all = false
			}
		}
		if err != nil || all || step == maxNew-1 {
			break
		}
		logits, err = d.run(p+step, 1)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decoder is the state of one Sample call.
type decoder struct {
	m       *Model
	b, p    int // batch size, padded prompt length
	slots   int // positions that can ever be fed
	noCache bool
	threads int // the runtime's intra-op threads
	// curThreads is libtorch's intra-op thread count while this decoder
	// runs (see run).
	curThreads int
	pads       []int     // left padding of each row
	seqs       [][]int64 // each row's tokens by slot (padding, prompt, output)
	cache      kvCache
	a          arena
}

// run feeds slots [start, start+n) of every row and returns the next-token
// logits of the last one, [B·V]. Without the cache it feeds [0, start+n).
func (d *decoder) run(start, n int) ([]float32, error) {
	if d.noCache {
		start, n = 0, start+n
	}
	var logits []float32
	err := d.m.do(func() error {
		// Few rows per step make small products, which one thread runs
		// faster than two (their synchronisation costs more than the
		// work: 11 vs 19 µs for a 768x256 matrix-vector product). The
		// setting stays across steps (changing it costs too); Sample
		// restores the runtime's when it ends.
		want := d.threads
		if d.b*n < singleThreadRows {
			want = 1
		}
		d.setThreads(want)
		return noGrad(func() error {
			defer d.a.reset()
			d.a.gemv = d.b*n == 1
			x := d.forward(start, n)
			if d.a.err != nil {
				return d.a.err
			}
			var err error
			logits, err = float32Values(x, d.m.dtype, d.b*d.m.cfg.Vocab)
			return err
		})
	})
	return logits, err
}

// forward runs slots [start, start+n) through the model, reading and
// extending the cache (unless noCache), and returns the logits [B, V] of
// slot start+n-1. Torch thread.
func (d *decoder) forward(start, n int) *ts.Tensor {
	m, a := d.m, &d.a
	b, s, l := int64(d.b), int64(n), int64(start+n)
	tok := make([]int64, 0, d.b*n)
	pos := make([]int64, 0, d.b*n)
	// mask[b, 0, i, j]: query slot start+i may read key slot j when both
	// are real tokens and j is not later; a padding slot reads only itself
	// (so that its values stay finite; nothing real reads it).
	mask := make([]float64, 0, d.b*n*(start+n))
	masked := n > 1 // a single new position reads every real slot
	for r := range d.b {
		masked = masked || d.pads[r] > 0
		for i := start; i < start+n; i++ {
			tok = append(tok, d.seqs[r][i])
			pos = append(pos, int64(max(0, i-d.pads[r])))
			for j := range start + n {
				if j == i || (j >= d.pads[r] && j <= i) {
					mask = append(mask, 0)
				} else {
					mask = append(mask, math.Inf(-1))
				}
			}
		}
	}
	if !d.noCache && d.cache.k == nil {
		d.allocCache()
	}
	x := a.add(a.embedding(m.wte, a.int64Tensor(tok, b, s)), a.embedding(m.wpe, a.int64Tensor(pos, b, s)))
	var maskT *ts.Tensor
	if masked {
		maskT = a.floatTensor(mask, m.dtype, b, 1, s, l)
	}
	var idx *ts.Tensor
	if !d.noCache {
		slot := make([]int64, n)
		for i := range slot {
			slot[i] = int64(start + i)
		}
		idx = a.int64Tensor(slot, s)
	}
	for li := range m.blocks {
		blk := &m.blocks[li]
		h := a.layerNorm(x, blk.ln1W, blk.ln1B, int64(m.cfg.Width))
		q, k, v := m.qkv(a, blk, h, b, s)
		if !d.noCache && a.err == nil {
			a.inplace("index_copy_", d.cache.k[li].IndexCopy_(2, idx, k))
			a.inplace("index_copy_", d.cache.v[li].IndexCopy_(2, idx, v))
			k = a.narrow(d.cache.k[li], 2, 0, l)
			v = a.narrow(d.cache.v[li], 2, 0, l)
		}
		y := a.linear(m.attention(a, q, k, v, maskT, b, s, false), blk.projW, blk.projB)
		x = m.mlp(a, blk, a.add(x, y), false)
	}
	return m.head(a, a.selectAt(x, 1, s-1))
}

// setThreads sets libtorch's intra-op threads to n when they are not
// already. Torch thread.
func (d *decoder) setThreads(n int) {
	if n != d.curThreads {
		torchrt.SetThreads(n)
		d.curThreads = n
	}
}

// allocCache creates the zeroed cache. Torch thread.
func (d *decoder) allocCache() {
	m := d.m
	shape := []int64{int64(d.b), int64(m.cfg.Heads), int64(max(d.slots, d.p)), int64(m.cfg.HeadDim())}
	for range m.blocks {
		for _, dst := range []*[]*ts.Tensor{&d.cache.k, &d.cache.v} {
			t, err := ts.Zeros(shape, m.dtype, gotch.CPU)
			if err != nil {
				d.a.fail("allocating the KV cache", err)
				return
			}
			*dst = append(*dst, t)
		}
	}
}
