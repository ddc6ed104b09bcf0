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
// Sample per prompt: SampleRows with each row's MaxNew opts.MaxNew and seed
// RowSeed(opts.Seed, i).
func (m *Model) Sample(ctx context.Context, prompts [][]int, opts SampleOptions) ([]Sample, error) {
	rows := make([]SampleRow, len(prompts))
	for i, p := range prompts {
		rows[i] = SampleRow{Prompt: p, MaxNew: opts.MaxNew, Seed: RowSeed(opts.Seed, i)}
	}
	return m.SampleRows(ctx, rows, opts)
}

// SampleRows continues each row's prompt (a batch, decoded together) and
// returns one Sample per row. Each row has its own MaxNew and random
// stream, so a row's samples do not depend on the rest of the batch (up to
// float rounding). Prompts may differ in length: they are left-padded, and
// the padding is masked out and does not shift positions. Rows with the
// same prompt (a GRPO group) share its prefill: the prompt's keys and
// values are computed once and copied to each of its rows.
//
// By default it decodes with a KV cache (keys and values of earlier tokens
// are kept, so each new token costs one position's work); opts.NoCache
// recomputes the whole context instead and gives the same tokens. It runs
// without dropout or autograd. A row that fails (its constraint allows
// nothing or returns an error, its logits are not finite) ends with
// Sample.Err set and the other rows go on; the call itself fails only on
// bad arguments, a torch error or ctx (cancelling it stops it between
// tokens; opts.MaxNew is not used, rows carry their own).
func (m *Model) SampleRows(ctx context.Context, rows []SampleRow, opts SampleOptions) ([]Sample, error) {
	return m.sampleRows(ctx, rows, opts, true)
}

// sampleRows is SampleRows; share=false prefills every row, even when
// prompts repeat (to check and measure the sharing).
func (m *Model) sampleRows(ctx context.Context, rows []SampleRow, opts SampleOptions, share bool) ([]Sample, error) {
	if err := opts.Validate(m.cfg.Vocab); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("dragon: sampling: no prompts")
	}
	p, steps := 0, 0
	maxNew := make([]int, len(rows))
	for i, r := range rows {
		pr := r.Prompt
		if len(pr) == 0 {
			return nil, fmt.Errorf("dragon: sampling: prompt %d is empty", i)
		}
		if len(pr) > m.cfg.Context {
			return nil, fmt.Errorf("dragon: sampling: prompt %d has %d tokens, more than the context of %d", i, len(pr), m.cfg.Context)
		}
		for j, t := range pr {
			if t < 0 || t >= m.cfg.Vocab {
				return nil, fmt.Errorf("dragon: sampling: prompt %d has token %d at %d, outside the vocabulary of %d", i, t, j, m.cfg.Vocab)
			}
		}
		if r.MaxNew < 0 {
			return nil, fmt.Errorf("dragon: sampling: row %d: max_new %d is negative", i, r.MaxNew)
		}
		// The last generated token is never fed back, so a sequence may
		// end one token past the context (as in training, where the
		// model reads all but the last token).
		maxNew[i] = m.cfg.Context - len(pr) + 1
		if r.MaxNew > 0 {
			maxNew[i] = min(maxNew[i], r.MaxNew)
		}
		p = max(p, len(pr))
		steps = max(steps, maxNew[i])
	}
	// Rows whose prompts are equal share one prefill row.
	uniq := make([]int, 0, len(rows)) // first row of each distinct prompt
	of := make([]int, len(rows))      // row -> index into uniq
	seen := map[string]int{}
	for i, r := range rows {
		key := promptKey(r.Prompt)
		u, ok := seen[key]
		if !ok || !share || opts.NoCache {
			u = len(uniq)
			uniq = append(uniq, i)
			seen[key] = u
		}
		of[i] = u
	}
	d := &decoder{m: m, p: p, slots: p + steps - 1, noCache: opts.NoCache, threads: m.rt.info.Threads}
	d.curThreads = d.threads
	defer m.do(func() error { d.setThreads(d.threads); d.cache.free(); d.a.reset(); return nil })
	m.do(func() error { m.lastPrefillRows = len(uniq); return nil })
	// Prefill the distinct prompts.
	layout := func(idx []int) {
		d.b = len(idx)
		d.pads = make([]int, d.b)
		d.seqs = make([][]int64, d.b)
		for k, i := range idx {
			pr := rows[i].Prompt
			d.pads[k] = p - len(pr)
			d.seqs[k] = make([]int64, p, p+steps)
			for j, t := range pr {
				d.seqs[k][d.pads[k]+j] = int64(t)
			}
		}
	}
	layout(uniq)
	logits, err := d.run(0, p)
	if err == nil && len(uniq) < len(rows) {
		// Copy each prompt's cache and logits to its rows.
		err = m.do(func() error { return d.expand(of) })
		v := m.cfg.Vocab
		rowLogits := make([]float32, len(rows)*v)
		for i, u := range of {
			copy(rowLogits[i*v:(i+1)*v], logits[u*v:(u+1)*v])
		}
		logits = rowLogits
		all := make([]int, len(rows))
		for i := range all {
			all[i] = i
		}
		layout(all)
	}
	seeds := make([]int64, len(rows))
	for i, r := range rows {
		seeds[i] = r.Seed
	}
	pk := newPicker(opts, m.cfg.Vocab, seeds)
	out := make([]Sample, d.b)
	done := make([]bool, d.b)
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
			c, perr := pk.pick(i, rows[i].Prompt, out[i].Tokens, row)
			if perr != nil {
				out[i].Err, done[i] = perr, true
				d.seqs[i] = append(d.seqs[i], 0)
				continue
			}
			s := &out[i]
			s.Tokens = append(s.Tokens, c.tok)
			s.LogProbs = append(s.LogProbs, c.lp)
			s.MaskedLogProbs = append(s.MaskedLogProbs, c.mlp)
			s.Entropy = append(s.Entropy, c.ent)
			if c.allow != nil {
				s.Allow = append(s.Allow, c.allow)
			}
			d.seqs[i] = append(d.seqs[i], int64(c.tok))
			switch {
			case slices.Contains(opts.Stop, c.tok):
				s.Stopped, done[i] = true, true
			case len(s.Tokens) >= maxNew[i]:
				done[i] = true
			default:
				all = false
			}
		}
		if all {
			break
		}
		logits, err = d.run(p+step, 1)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// promptKey is a map key of a prompt's tokens.
func promptKey(p []int) string {
	b := make([]byte, 0, 4*len(p))
	for _, t := range p {
		b = append(b, byte(t), byte(t>>8), byte(t>>16), byte(t>>24))
	}
	return string(b)
}

// expand replaces the cache of the distinct prompts by one of the rows:
// row i gets prompt of[i]'s keys and values. Torch thread.
func (d *decoder) expand(of []int) error {
	idx := make([]int64, len(of))
	for i, u := range of {
		idx[i] = int64(u)
	}
	a := &d.a
	defer a.reset()
	it := a.int64Tensor(idx, int64(len(idx)))
	for _, c := range [][]*ts.Tensor{d.cache.k, d.cache.v} {
		for l, t := range c {
			if a.err != nil {
				break
			}
			n, err := t.IndexSelect(0, it, false)
			if err != nil {
				a.fail("expanding the KV cache", err)
				break
			}
			t.Drop()
			c[l] = n
		}
	}
	return a.err
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
			// A finished row is still fed (padding tokens, ignored);
			// its positions may pass the context.
			pos = append(pos, int64(min(max(0, i-d.pads[r]), m.cfg.Context-1)))
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
	// Slots rounded up to a multiple of 64: fewer distinct cache shapes
	// from call to call (glibc's heap reuses its blocks; see padding).
	shape := []int64{int64(d.b), int64(m.cfg.Heads), int64(roundUp(max(d.slots, d.p), 64)), int64(m.cfg.HeadDim())}
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
