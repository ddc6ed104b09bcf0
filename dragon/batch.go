package dragon

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Example is one supervised example: the model reads Prompt and learns to
// continue it with Target. The loss covers the Target tokens only (including
// a final end token, if the tokenizer has one: the encode stage appends it).
type Example struct {
	Prompt []int `json:"prompt"`
	Target []int `json:"target"`
}

// ignoreLabel marks a position whose next token is not trained on (prompt
// and padding); it is libtorch's default ignore index for cross-entropy.
const ignoreLabel = -100

// checkExamples reports the first example that cannot be trained on with
// cfg: an empty prompt, an empty target, a token outside the vocabulary, or
// a sequence longer than the context (the model reads
// len(prompt)+len(target)-1 tokens).
//
// An empty prompt is refused: position 0 would have to predict the first
// target token from nothing, and a causal LM has no position before the
// first, so that token would silently never be trained. There is no BOS
// token; prompts start with a marker of their own (the encoder's @kernel
// line), which plays its role (docs/dragon.md, "Token conventions").
func checkExamples(cfg Config, what string, exs []Example) error {
	for i, ex := range exs {
		if len(ex.Prompt) == 0 {
			return fmt.Errorf("dragon: %s example %d has an empty prompt (its first target token could never be trained; prompts must start with a marker token)", what, i)
		}
		if len(ex.Target) == 0 {
			return fmt.Errorf("dragon: %s example %d has an empty target", what, i)
		}
		if n := len(ex.Prompt) + len(ex.Target) - 1; n > cfg.Context {
			return fmt.Errorf("dragon: %s example %d reads %d tokens, more than the context of %d", what, i, n, cfg.Context)
		}
		for _, part := range [][]int{ex.Prompt, ex.Target} {
			for _, t := range part {
				if t < 0 || t >= cfg.Vocab {
					return fmt.Errorf("dragon: %s example %d has token %d, outside the vocabulary of %d", what, i, t, cfg.Vocab)
				}
			}
		}
	}
	return nil
}

// exampleLen is the number of tokens the model reads for ex.
func exampleLen(ex Example) int { return len(ex.Prompt) + len(ex.Target) - 1 }

// planEpoch returns the micro-batches (lists of example indices) of one
// epoch: the examples in a seeded random order, sorted by length within
// windows of bucket×batch examples, cut into micro-batches, and the
// micro-batches shuffled. It depends only on its arguments, so a resumed run
// replans the same epoch exactly.
func planEpoch(exs []Example, batch, bucket int, seed int64, epoch int) [][]int {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(epoch)^0x6472616730))
	order := rng.Perm(len(exs))
	window := batch * bucket
	var batches [][]int
	for lo := 0; lo < len(order); lo += window {
		w := order[lo:min(lo+window, len(order))]
		if bucket > 1 {
			slices.SortStableFunc(w, func(a, b int) int { return exampleLen(exs[a]) - exampleLen(exs[b]) })
		}
		for b := 0; b < len(w); b += batch {
			batches = append(batches, w[b:min(b+batch, len(w))])
		}
	}
	rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
	return batches
}

// planEval returns the micro-batches of a held-out set: sorted by length, in
// a fixed order.
func planEval(exs []Example, batch int) [][]int {
	order := make([]int, len(exs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return exampleLen(exs[a]) - exampleLen(exs[b]) })
	var batches [][]int
	for b := 0; b < len(order); b += batch {
		batches = append(batches, order[b:min(b+batch, len(order))])
	}
	return batches
}

// microBatch is a padded micro-batch ready for the model: Rows sequences of
// Len tokens (row-major), the label of each position (the next token, or
// ignoreLabel on prompt and padding), and the positions that carry a label.
type microBatch struct {
	Rows, Len int
	Inputs    []int64
	Labels    []int64
	// Targets lists the flat positions (row*Len+col) whose label is
	// trained on, in order.
	Targets []int64
	// PadTargets is how many ignored rows the loss adds after Targets, so
	// that the output head sees a quantized number of rows (see padding).
	PadTargets int
	// Tokens counts the real (unpadded) input tokens.
	Tokens int
}

// padding quantizes micro-batch shapes. libtorch's CPU tensors come from
// malloc, and a trainer whose every step has new tensor sizes (one length
// per micro-batch, one number of target rows) fragments glibc's heap: on a
// 1,000-step soak of variable-length examples the heap in use stayed flat
// while the memory glibc held, and so the resident set, grew by ~90 MB.
// Rounding the length up to a multiple of Len (at most MaxLen) and the target
// rows up to a multiple of Targets leaves a few dozen shapes, whose blocks
// the allocator reuses. The padding is masked out of the results: rows
// end with ignored positions under the causal mask, and padded target rows
// carry ignoreLabel. Zero fields pad nothing.
type padding struct {
	Len, MaxLen, Targets int
}

// trainPadding is the padding of training and held-out micro-batches for a
// model of context ctx: lengths by 16 tokens (at most ~5% more attention
// and MLP work on typical lengths) and target rows by 128 (a few percent
// of the output head's work).
func trainPadding(ctx int) padding { return padding{Len: 16, MaxLen: ctx, Targets: 128} }

func roundUp(n, q int) int {
	if q <= 1 {
		return n
	}
	return (n + q - 1) / q * q
}

// makeMicroBatch pads the examples idx of exs to a common length, quantized
// by pad. Padding goes at the end of each row, where the causal mask keeps
// it from influencing real positions; its input id is 0 and its label is
// ignored.
func makeMicroBatch(exs []Example, idx []int, pad padding) microBatch {
	n := 0
	for _, i := range idx {
		n = max(n, exampleLen(exs[i]))
	}
	if q := roundUp(n, pad.Len); pad.MaxLen <= 0 || q <= pad.MaxLen {
		n = q
	} else {
		n = max(n, pad.MaxLen)
	}
	mb := microBatch{Rows: len(idx), Len: n}
	mb.Inputs = make([]int64, len(idx)*n)
	mb.Labels = make([]int64, len(idx)*n)
	for r, i := range idx {
		ex := exs[i]
		seq := make([]int, 0, len(ex.Prompt)+len(ex.Target))
		seq = append(append(seq, ex.Prompt...), ex.Target...)
		row := mb.Inputs[r*n : (r+1)*n]
		lab := mb.Labels[r*n : (r+1)*n]
		for c := range n {
			lab[c] = ignoreLabel
			if c < len(seq)-1 {
				row[c] = int64(seq[c])
				mb.Tokens++
				// Position c predicts seq[c+1]; train on it when that token
				// belongs to the target.
				if c+1 >= len(ex.Prompt) {
					lab[c] = int64(seq[c+1])
					mb.Targets = append(mb.Targets, int64(r*n+c))
				}
			}
		}
	}
	mb.PadTargets = roundUp(len(mb.Targets), pad.Targets) - len(mb.Targets)
	return mb
}
