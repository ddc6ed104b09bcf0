package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"dragonx/dragon"
)

// DecisionFreeFamilies are the workload families whose scripts pass the
// static verdict whatever is decided: their sketches have no
// MultiLevelTiling (no data reuse to tile), only CrossThreadReduction's
// and AutoBind's thread extents (kernels/space: at most 512 and 1024
// threads, within the GPU's limits) and unroll choices, so a random walk
// under the grammar alone is correct on them (TestDecisionFreeFamilies
// checks it). A correctness figure on them says nothing about what a
// policy learned; the analysis shows them apart.
var DecisionFreeFamilies = []string{"LNORM", "NRM", "POOL", "SFM"}

// walkStream is the PCG stream of the walks' random choices (their seed is
// RowSeed's, as a policy's row).
const walkStream = 0x77616c6b // "walk"

// walks runs the random_walk baseline under decoding mode (a grammar mode)
// at the tasks it has none at yet: per task as many walks as a policy's
// attempts, each judged as a policy's sample.
func (r *run) walks(ctx context.Context, mode string) error {
	name := BaselinePrefix + BaselineRandomWalk
	pending := r.pending(name, mode)
	if len(pending) == 0 {
		r.logf("%s (%s): every task done by an earlier attempt", name, mode)
		return nil
	}
	_, gpuLimits := decodingFlags(mode)
	start := time.Now()
	var mu sync.Mutex
	done, tokens := 0, 0
	err := parallel(ctx, len(pending), r.sp.Threads, func(ctx context.Context, i int) error {
		t := pending[i]
		base, err := r.baselineUS(ctx, t)
		if err != nil {
			return err
		}
		lg := r.grammar(t, gpuLimits)
		var atts []*Attempt
		n := 0
		for k := range r.sp.rowsPerTask() {
			toks, stop := walk(r.format.Constraint(lg), r.voc.VocabSize(), r.sp.MaxNew, RowSeed(r.sp.Seed, name, t.Kind, t.Index, k))
			if stop != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			res, err := r.judgeSample(ctx, t, mode, toks)
			if err != nil {
				return fmt.Errorf("%s: %w", t.Name(), err)
			}
			a := r.attempt(name, mode, t, k, false, res, base, len(toks))
			noteStop(a, stop)
			atts = append(atts, a)
			n += len(toks)
		}
		if err := r.st.put(atts); err != nil {
			return err
		}
		mu.Lock()
		done++
		tokens += n
		d := done
		mu.Unlock()
		r.progress(name+" ("+mode+")", d, len(pending), start)
		return nil
	})
	if err != nil {
		return err
	}
	r.logf("%s (%s): %d tasks, %d tokens in %.1f s", name, mode, len(pending), tokens, time.Since(start).Seconds())
	return nil
}

// walk writes one script (or, under sft.DecisionConstraint, one decision
// stream) token by token, each chosen uniformly among the tokens the
// constraint allows (the same constraint a policy samples under), until
// <eos> or maxNew tokens. A decision stream's walk chooses as the
// script's does at each position with more than one token allowed, and
// skips the forced ones, so the scripts it expands into have the script
// walk's distribution. It returns
// the tokens and, when the walk stopped early (the constraint failed or
// allowed nothing), why; the tokens are then judged as a policy's
// sample that stopped early.
func walk(con dragon.RowConstraint, vocab, maxNew int, seed int64) ([]int, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), walkStream))
	allow := make([]bool, vocab)
	cand := make([]int, 0, vocab)
	var gen []int
	for len(gen) < maxNew {
		for i := range allow {
			allow[i] = true
		}
		if err := con(0, nil, gen, allow); err != nil {
			return gen, fmt.Errorf("constraint after %d tokens: %w", len(gen), err)
		}
		cand = cand[:0]
		for i, ok := range allow {
			if ok {
				cand = append(cand, i)
			}
		}
		if len(cand) == 0 {
			return gen, errors.New("the constraint forbids every token after " + fmt.Sprint(len(gen)) + " generated")
		}
		tok := cand[rng.IntN(len(cand))]
		gen = append(gen, tok)
		if tok == eosID {
			break
		}
	}
	return gen, nil
}
