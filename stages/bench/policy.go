package bench

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"time"

	"dragonx/dragon"
	"dragonx/kernels/judge"
)

// RowSeed is the seed of one attempt's random stream: a hash of the stage's
// seed, the policy (or baseline) name, the task and the attempt, so that an
// attempt's sample depends on nothing else (not the batch it is drawn in).
func RowSeed(seed int64, policy, kind string, index, attempt int) int64 {
	h := sha256.Sum256(fmt.Appendf(nil, "dragonx bench\x00%d\x00%s\x00%s\x00%d\x00%d", seed, policy, kind, index, attempt))
	return int64(binary.BigEndian.Uint64(h[:8]))
}

// rowsPerTask is the number of attempts of a policy at a task: the greedy
// one (attempt 0, with greedy) and attempts at the temperature.
func (sp Spec) rowsPerTask() int {
	n := sp.Attempts
	if sp.Greedy {
		n++
	}
	return n
}

// policyRow is one attempt to sample.
type policyRow struct {
	task    *Task
	attempt int
	greedy  bool
	row     dragon.SampleRow
	sample  dragon.Sample
}

// policy samples and judges policy p's attempts under decoding mode at the
// tasks it has none at yet, a chunk of tasks at a time (at most spec.batch
// rows a call), and records each task's attempts in the state.
func (r *run) policy(ctx context.Context, ld Loader, p Policy, mode string) error {
	pending := r.pending(p.Name, mode)
	if len(pending) == 0 {
		r.logf("policy %s (%s): every task done by an earlier attempt", p.Name, mode)
		return nil
	}
	m, err := ld.Load(filepath.Join(r.dir, filepath.FromSlash(p.Checkpoint)), r.voc)
	if err != nil {
		return err
	}
	defer m.Close()
	start := time.Now()
	perTask := r.sp.rowsPerTask()
	// A chunk of tasks: their attempts at the temperature fill a batch,
	// their greedy attempts another (the two differ in their options).
	chunk := max(1, r.sp.Batch/max(1, r.sp.Attempts))
	var sampleTime time.Duration
	tokens, rows := 0, 0
	for c := 0; c < len(pending); c += chunk {
		tasks := pending[c:min(c+chunk, len(pending))]
		bases := make([]*float64, len(tasks))
		if err := parallel(ctx, len(tasks), r.sp.Threads, func(ctx context.Context, i int) error {
			var err error
			bases[i], err = r.baselineUS(ctx, tasks[i])
			return err
		}); err != nil {
			return err
		}
		var greedy, warm []*policyRow
		skipped := map[*Task]string{}
		for _, t := range tasks {
			if len(t.Prompt) >= m.Context() {
				skipped[t] = fmt.Sprintf("not sampled: the prompt of %d tokens leaves no room in the context of %d", len(t.Prompt), m.Context())
				continue
			}
			for i := range perTask {
				pr := &policyRow{task: t, attempt: i, greedy: r.sp.Greedy && i == 0}
				pr.row = dragon.SampleRow{Prompt: t.Prompt, MaxNew: r.sp.MaxNew, Seed: RowSeed(r.sp.Seed, p.Name, t.Kind, t.Index, i)}
				if pr.greedy {
					greedy = append(greedy, pr)
				} else {
					warm = append(warm, pr)
				}
			}
		}
		t0 := time.Now()
		for _, set := range []struct {
			rows []*policyRow
			opts dragon.SampleOptions
		}{
			{greedy, dragon.SampleOptions{Stop: []int{eosID}}},
			{warm, dragon.SampleOptions{Temperature: r.sp.Temperature, TopK: r.sp.TopK, Stop: []int{eosID}}},
		} {
			for b := 0; b < len(set.rows); b += r.sp.Batch {
				batch := set.rows[b:min(b+r.sp.Batch, len(set.rows))]
				if err := r.sampleBatch(ctx, m, batch, mode, set.opts); err != nil {
					return err
				}
			}
		}
		sampleTime += time.Since(t0)

		// Judge every row, then record each task's attempts.
		all := append(greedy, warm...)
		results := make([]*judge.Result, len(all))
		if err := parallel(ctx, len(all), r.sp.Threads, func(ctx context.Context, i int) error {
			var err error
			results[i], err = r.judgeSample(ctx, all[i].task, mode, all[i].sample.Tokens)
			return err
		}); err != nil {
			return err
		}
		byTask := map[*Task][]*Attempt{}
		for i, pr := range all {
			a := r.attempt(p.Name, mode, pr.task, pr.attempt, pr.greedy, results[i], bases[indexOf(tasks, pr.task)], len(pr.sample.Tokens))
			noteStop(a, pr.sample.Err)
			byTask[pr.task] = append(byTask[pr.task], a)
			tokens += len(pr.sample.Tokens)
			rows++
		}
		for k, t := range tasks {
			atts := byTask[t]
			if why, ok := skipped[t]; ok {
				for i := range perTask {
					atts = append(atts, r.failed(p.Name, mode, t, i, r.sp.Greedy && i == 0, why, bases[k]))
				}
			}
			sortAttempts(atts)
			if err := r.st.put(atts); err != nil {
				return err
			}
			r.progress(p.Name, c+k+1, len(pending), start)
		}
	}
	if rows > 0 {
		r.logf("policy %s (%s): %d attempts at %d tasks, %d tokens in %.1f s of sampling (%.2f s per attempt, %.0f tokens/s); %.1f s in all",
			p.Name, mode, rows, len(pending), tokens, sampleTime.Seconds(), sampleTime.Seconds()/float64(rows), float64(tokens)/max(sampleTime.Seconds(), 1e-9), time.Since(start).Seconds())
	}
	return nil
}

func indexOf(tasks []*Task, t *Task) int {
	for i, u := range tasks {
		if u == t {
			return i
		}
	}
	return -1
}

// noteStop adds to a failed attempt's error why its sampling stopped
// early (err: the sample's Err), if it did.
func noteStop(a *Attempt, err error) {
	if err != nil && !a.OK {
		a.Error = fmt.Sprintf("%s (sampling stopped early: %v)", a.Error, err)
	}
}

// sampleBatch samples one batch of rows with opts under decoding mode (the
// workloads' script grammars, as the constraint of the run's format,
// unless unconstrained; every mode is bounded by the rows' MaxNew) and
// keeps each row's sample.
func (r *run) sampleBatch(ctx context.Context, m Model, batch []*policyRow, mode string, opts dragon.SampleOptions) error {
	rows := make([]dragon.SampleRow, len(batch))
	for k, pr := range batch {
		rows[k] = pr.row
	}
	if constrained, gpuLimits := decodingFlags(mode); constrained {
		cons := make([]dragon.RowConstraint, len(batch))
		for k, pr := range batch {
			cons[k] = r.format.Constraint(r.grammar(pr.task, gpuLimits))
		}
		opts.RowConstraint = func(row int, prompt, generated []int, allow []bool) error {
			return cons[row](row, prompt, generated, allow)
		}
	}
	got, err := m.SampleRows(ctx, rows, opts)
	if err != nil {
		return fmt.Errorf("sampling: %w", err)
	}
	for k, pr := range batch {
		pr.sample = got[k]
	}
	return nil
}

// sortAttempts orders one group's attempts by attempt number.
func sortAttempts(atts []*Attempt) {
	for i := 1; i < len(atts); i++ {
		for j := i; j > 0 && atts[j].Attempt < atts[j-1].Attempt; j-- {
			atts[j], atts[j-1] = atts[j-1], atts[j]
		}
	}
}
