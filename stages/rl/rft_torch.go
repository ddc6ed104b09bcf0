//go:build torch

package rl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"dragonx/dragon"
	"dragonx/internal/progress"
	"dragonx/internal/safeio"
	"dragonx/stages/sft"
)

// The rft round's resume state: the fine-tuned model and its figures,
// written once the round is done (an interrupted round starts again).
const (
	stateRFTCheckpoint = "rft.ckpt"
	stateRFTFigures    = "rft.json"
)

// rftSeedSalt separates the round's sampling seeds from GRPO's.
const rftSeedSalt = 0x726674

// runRFT runs the rft round (RFTSpec) from base, which it does not change,
// and returns the fine-tuned model (the caller's to close) and the round's
// figures. With a state directory it keeps the result there and returns it
// on a later call instead of redoing the round.
func runRFT(ctx context.Context, rt *dragon.Runtime, base *dragon.Model, sp Spec, tasks []Task, grammarOf grammarsOf, rw *Rewarder,
	stateDir string, rep progress.Reporter, logf func(string, ...any)) (*dragon.Model, *RFTFigures, error) {
	r := *sp.RFT
	if m, fig, ok := resumeRFT(rt, base, stateDir, logf); ok {
		return m, fig, nil
	}

	// The prompts: the first r.Prompts of the prompt list GRPO would draw
	// from, each under the grammar the block names.
	ps := sp
	ps.GPULimits, ps.GrammarOnlyShare = r.GPULimits, 0
	list, _ := prompts(ps, tasks, grammarOf, base.Config().Context)
	if r.Prompts > 0 && len(list) > r.Prompts {
		list = list[:r.Prompts]
	}
	kindOf := make(map[string]string, len(tasks))
	for _, t := range tasks {
		kindOf[t.ID] = t.Kind
	}
	fig := &RFTFigures{Prompts: len(list), ByKind: map[string]RFTCount{}}
	var kept []dragon.Example
	seen := map[string]bool{}
	S := r.Samples
	for start := 0; start < len(list); start += rftPromptsPerPass {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		pass := list[start:min(start+rftPromptsPerPass, len(list))]
		rows := make([]dragon.SampleRow, 0, len(pass)*S)
		for i, p := range pass {
			for g := range S {
				rows = append(rows, dragon.SampleRow{Prompt: p.Tokens, MaxNew: p.MaxNew, Seed: dragon.RowSeed(dragon.RowSeed(sp.Seed^rftSeedSalt, start+i), g)})
			}
		}
		opts := dragon.SampleOptions{Temperature: r.Temperature, Stop: []int{eosID},
			RowConstraint: func(row int, prompt, generated []int, allow []bool) error {
				c := pass[row/S].Constraint
				if c == nil {
					return nil
				}
				return c(row%S, prompt, generated, allow)
			}}
		samples, err := base.SampleRows(ctx, rows, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("sampling: %w", err)
		}
		for i, p := range pass {
			group := samples[i*S : (i+1)*S]
			toks := make([][]int, S)
			for g, s := range group {
				toks[g] = slices.Clone(s.Tokens)
			}
			logs, err := rw.Judge(ctx, p.ID, toks)
			if err != nil {
				return nil, nil, err
			}
			c := fig.ByKind[kindOf[p.ID]]
			for g, l := range logs {
				c.Samples++
				if !l.Gate || !group[g].Stopped || group[g].Err != nil {
					continue
				}
				c.Passed++
				key := p.ID + "\x00" + fmt.Sprint(group[g].Tokens)
				if seen[key] {
					continue
				}
				seen[key] = true
				kept = append(kept, dragon.Example{Prompt: p.Tokens, Target: slices.Clone(group[g].Tokens)})
			}
			fig.ByKind[kindOf[p.ID]] = c
		}
		done := min(start+rftPromptsPerPass, len(list))
		rep.Report(progress.Event{Done: int64(done), Total: int64(len(list)), Unit: "prompts",
			Note: fmt.Sprintf("rft sampling: %d kept", len(kept))})
	}
	for _, c := range fig.ByKind {
		fig.Samples += c.Samples
		fig.Passed += c.Passed
	}
	fig.Kept = len(kept)
	logf("rft: %d prompts, %d samples, %d passed the gate, %d distinct kept", fig.Prompts, fig.Samples, fig.Passed, fig.Kept)

	m, err := base.Clone()
	if err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	if len(kept) == 0 {
		logf("rft: no sample passed the gate; GRPO starts from the checkpoint as it is")
	} else if err := fineTune(ctx, m, kept, r.TrainConfig(sp.Seed), fig, rep); err != nil {
		return nil, nil, fmt.Errorf("fine-tuning on the kept samples: %w", err)
	}
	m.SetTraining(false)
	if stateDir != "" {
		if err := safeio.WriteAtomic(filepath.Join(stateDir, stateRFTCheckpoint), m.WriteCheckpoint); err != nil {
			return nil, nil, err
		}
		if err := safeio.WriteAtomic(filepath.Join(stateDir, stateRFTFigures), func(w io.Writer) error { return json.NewEncoder(w).Encode(fig) }); err != nil {
			return nil, nil, err
		}
	}
	ok = true
	return m, fig, nil
}

// fineTune trains m on exs as sft does (dropout on), recording the first
// and last steps' loss in fig.
func fineTune(ctx context.Context, m *dragon.Model, exs []dragon.Example, cfg dragon.TrainConfig, fig *RFTFigures, rep progress.Reporter) error {
	m.SetTraining(true)
	tr, err := dragon.NewTrainer(m, cfg, exs, nil)
	if err != nil {
		return err
	}
	defer tr.Close()
	for tr.Step() < cfg.Steps {
		st, err := tr.TrainStep(ctx)
		if err != nil {
			return err
		}
		if st.Step == 1 {
			fig.FirstLoss = st.Loss
		}
		fig.LastLoss, fig.Steps = st.Loss, st.Step
		rep.Report(progress.Event{Done: int64(st.Step), Total: int64(cfg.Steps), Unit: "steps", Note: fmt.Sprintf("rft loss %.4f", st.Loss)})
	}
	return nil
}

// resumeRFT returns the round's result from the state directory, when a
// usable one is there.
func resumeRFT(rt *dragon.Runtime, base *dragon.Model, stateDir string, logf func(string, ...any)) (*dragon.Model, *RFTFigures, bool) {
	if stateDir == "" {
		return nil, nil, false
	}
	b, err := sft.ReadStateFile(filepath.Join(stateDir, stateRFTFigures))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, false
	}
	ignore := func(err error) (*dragon.Model, *RFTFigures, bool) {
		logf("rft: ignoring the saved round (%v); sampling again", err)
		return nil, nil, false
	}
	if err != nil {
		return ignore(err)
	}
	var fig RFTFigures
	if err := json.Unmarshal(b, &fig); err != nil {
		return ignore(fmt.Errorf("%s: %w", stateRFTFigures, err))
	}
	f, err := sft.OpenCheckpoint(filepath.Join(stateDir, stateRFTCheckpoint))
	if err != nil {
		return ignore(err)
	}
	m, err := rt.ReadCheckpoint(f)
	f.Close()
	if err != nil {
		return ignore(err)
	}
	if m.Config() != base.Config() || m.Tokenizer() != base.Tokenizer() {
		m.Close()
		return ignore(errors.New("its model is not the checkpoint's shape or tokenizer"))
	}
	logf("rft: the round is done (%s): %d kept of %d samples", filepath.Join(stateDir, stateRFTCheckpoint), fig.Kept, fig.Samples)
	return m, &fig, true
}
