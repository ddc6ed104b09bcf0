//go:build torch

package rl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"dragonx/dragon"
	"dragonx/dragon/grpo"
	"dragonx/internal/progress"
	"dragonx/internal/safeio"
	"dragonx/kernels/numeric"
	"dragonx/stages/job"
	"dragonx/stages/sft"
)

func init() { job.Register("rl", job.Runner{Version: Version, Run: runJob}) }

// The resume state in the job's state directory: the trainer checkpoint,
// and the curve and the sample log up to (at least) its step. The curve
// and the log are written first, so that they never lag the checkpoint.
const (
	stateCheckpoint = "trainer.ckpt"
	stateCurve      = "curves.csv"
	stateSamples    = "samples.jsonl"
)

// curveColumns is curves.csv's header; every column follows from the
// parameters and inputs (no timings), so that an interrupted and resumed
// run writes the same bytes. With grpo's mask_mass, an allowed_mass
// column ends it (grpo.StepStats.AllowedMass).
var curveColumns = []string{"step", "reward_mean", "reward_std", "correct_rate", "mean_log_speedup", "kl", "entropy",
	"clip_frac", "loss", "grad_norm", "lr", "skipped_groups", "failed_samples"}

// curveHeader is the header of a run with (maskMass) or without the
// mask-mass term.
func curveHeader(maskMass bool) []string {
	if maskMass {
		return append(slices.Clone(curveColumns), "allowed_mass")
	}
	return curveColumns
}

// Metrics is metrics.json. Everything in it follows from the parameters
// and inputs, except Speed.
type Metrics struct {
	Training TrainingFigures `json:"training"`
	// RFT describes the rft round, when the stage has one.
	RFT     *RFTFigures        `json:"rft,omitempty"`
	Heldout sft.HeldoutFigures `json:"heldout"`
	// Correct lists the latencies of the held-out samples that passed
	// every phase, per task (for comparing with SFT's later).
	Correct []CorrectAttempt `json:"correct"`
	Speed   RunSpeed         `json:"speed"`
}

// TrainingFigures describe the RL run.
type TrainingFigures struct {
	Steps int `json:"steps"`
	// Tasks are the training tasks read, Prompts the entries of the
	// prompt list (MixTasks), DroppedLongPrompts the tasks whose prompt
	// leaves no room in the context.
	Tasks              int `json:"tasks"`
	Prompts            int `json:"prompts"`
	DroppedLongPrompts int `json:"dropped_long_prompts"`
	// Baselines counts the tasks with a baseline latency, NoBaseline those
	// without (the reason is in samples.jsonl's baseline_error).
	Baselines  int `json:"baselines"`
	NoBaseline int `json:"no_baseline"`
	Samples    int `json:"samples"`
	// CorrectRate is the share of all samples that passed the gate.
	CorrectRate float64 `json:"correct_rate"`
	// FirstRewardMean and LastRewardMean are the first and last steps'.
	FirstRewardMean float64 `json:"first_reward_mean"`
	LastRewardMean  float64 `json:"last_reward_mean"`
}

// CorrectAttempt is a held-out sample that passed every phase.
type CorrectAttempt struct {
	Task          string  `json:"task"`
	Index         int     `json:"index"`
	Hash          string  `json:"hash"`
	LatencyS      float64 `json:"latency_s"`
	LatencySource string  `json:"latency_source"`
}

// RunSpeed is measured: it differs between runs.
type RunSpeed struct {
	Threads     int     `json:"threads"`
	CoreType    string  `json:"openblas_coretype"`
	Steps       int     `json:"steps"`
	StepSeconds float64 `json:"step_seconds"`
	// The steps' time by phase (grpo.StepStats): sampling, judging and
	// rewarding, scoring with the old policy and the reference, updates.
	SampleSeconds float64 `json:"step_sample_seconds"`
	RewardSeconds float64 `json:"step_reward_seconds"`
	ScoreSeconds  float64 `json:"step_score_seconds"`
	UpdateSeconds float64 `json:"step_update_seconds"`
	WallSeconds   float64 `json:"wall_seconds"`
	// RFTSeconds is the rft round's time (sampling, judging, fine-tuning).
	RFTSeconds  float64 `json:"rft_seconds,omitempty"`
	EvalSeconds float64 `json:"eval_sample_seconds"`
}

func runJob(ctx context.Context, j *job.Job, env *job.Env) error {
	var sp Spec
	dec := json.NewDecoder(bytes.NewReader(j.Spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		return fmt.Errorf("decoding the spec: %w", err)
	}
	if err := sp.Validate(); err != nil {
		return fmt.Errorf("invalid spec: %w", err)
	}
	logf := func(format string, args ...any) { fmt.Fprintf(env.Log, "rl: "+format+"\n", args...) }
	path := func(name string) string { return filepath.Join(j.Dir, filepath.FromSlash(sp.Files[name])) }
	start := time.Now()

	voc, err := sft.LoadVocab(path("vocab"))
	if err != nil {
		return err
	}
	tasks, err := ReadTasks(path("train"), path("construction"), path("refinement"), voc.VocabSize())
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return errors.New("train.jsonl has no training task")
	}
	hf, err := os.Open(path("heldout"))
	if err != nil {
		return err
	}
	held, err := sft.ReadHeldout(hf, "heldout.jsonl", voc.VocabSize())
	hf.Close()
	if err != nil {
		return err
	}
	format, err := sft.HeldoutFormat(held)
	if err != nil {
		return err
	}
	if err := sft.SameFormat(tasks[0].Format, format); err != nil {
		return err
	}

	rt, err := dragon.NewRuntime(dragon.RuntimeOptions{Threads: sp.Threads, Seed: sp.Seed})
	if err != nil {
		return err
	}
	defer rt.Close()
	info := rt.Info()
	logf("libtorch %s, %d threads, OPENBLAS_CORETYPE=%q", info.Libtorch, info.Threads, info.CoreType)

	// The SFT model: the policy's start and, frozen, the KL reference.
	cf, err := os.Open(path("checkpoint"))
	if err != nil {
		return err
	}
	sftModel, err := rt.ReadCheckpoint(cf)
	cf.Close()
	if err != nil {
		return fmt.Errorf("the sft checkpoint: %w", err)
	}
	defer sftModel.Close()
	if got := sftModel.Tokenizer(); got != voc.Identity() {
		return fmt.Errorf("the sft checkpoint's tokenizer %s is not the vocabulary's %s", got, voc.Identity())
	}
	mcfg := sftModel.Config()
	grammarOf := grammars(ctx, sp, voc)
	ps, dropped := prompts(sp, tasks, grammarOf, mcfg.Context)
	if len(ps) == 0 {
		return fmt.Errorf("no training prompt fits the context of %d tokens (%d tasks)", mcfg.Context, len(tasks))
	}
	logf("%d training tasks, %d prompts (construction share %v), %d tasks dropped: their prompt fills the context of %d", len(tasks), len(ps), sp.ConstructionShare, dropped, mcfg.Context)

	gateDir, err := os.MkdirTemp("", "dragonx-rl-gate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(gateDir)
	rw, err := NewRewarder(ctx, sp.Reward, tasks, RewarderOptions{Vocab: voc, Numeric: numeric.Options{CacheDir: gateDir, Seed: uint64(sp.Seed)}, Grammar: func(t Task) *sft.LazyGrammar { return grammarOf(t, sp.GPULimits) }})
	if err != nil {
		return err
	}
	var tf TrainingFigures
	tf.Tasks, tf.Prompts, tf.DroppedLongPrompts = len(tasks), len(ps), dropped
	rj, _ := json.Marshal(sp.Reward)
	logf("reward %s", rj)

	// The model GRPO starts from and keeps near: the sft model, or what
	// the rft round made of it.
	base := sftModel
	var rftFig *RFTFigures
	var rftTime time.Duration
	if sp.RFT != nil {
		t0 := time.Now()
		m, fig, err := runRFT(ctx, rt, sftModel, sp, tasks, grammarOf, rw, j.StateDir, env.Progress, logf)
		if err != nil {
			return fmt.Errorf("rft: %w", err)
		}
		defer m.Close()
		base, rftFig, rftTime = m, fig, time.Since(t0)
	}

	cfg := sp.GRPO.Config(sp.Seed)
	tr, rows, logs, err := resume(rt, j.StateDir, base, ps, rw, cfg, logf)
	if err != nil {
		return err
	}
	if tr == nil {
		policy, err := base.Clone()
		if err != nil {
			return err
		}
		policy.SetTraining(false) // no dropout: the samples' distribution is the one scored
		var ref *dragon.Model
		if cfg.Beta > 0 {
			// The KL reference is the starting model, frozen.
			if err := base.Freeze(); err != nil {
				policy.Close()
				return err
			}
			ref = base
		}
		if tr, err = grpo.NewTrainer(policy, ref, cfg, ps, rw); err != nil {
			policy.Close()
			return err
		}
	}
	defer func() {
		m := tr.Policy()
		tr.Close()
		m.Close()
	}()
	save := func() error {
		if j.StateDir == "" {
			return nil
		}
		if err := safeio.WriteAtomic(filepath.Join(j.StateDir, stateCurve), func(w io.Writer) error { return writeCurve(w, curveHeader(cfg.MaskMass > 0), rows) }); err != nil {
			return err
		}
		if err := safeio.WriteAtomic(filepath.Join(j.StateDir, stateSamples), func(w io.Writer) error { return writeSamples(w, logs) }); err != nil {
			return err
		}
		return safeio.WriteAtomic(filepath.Join(j.StateDir, stateCheckpoint), tr.WriteCheckpoint)
	}

	firstStep := tr.Steps()
	var stepTime time.Duration
	var byPhase RunSpeed
	for !tr.Done() {
		t0 := time.Now()
		// A step is not cut short: its samples, rewards and updates
		// belong together. An interruption is seen between steps.
		st, err := tr.Step(context.WithoutCancel(ctx))
		if err != nil {
			return fmt.Errorf("step %d: %w", tr.Steps()+1, err)
		}
		stepTime += time.Since(t0)
		byPhase.SampleSeconds += st.SampleSeconds
		byPhase.RewardSeconds += st.RewardSeconds
		byPhase.ScoreSeconds += st.ScoreSeconds
		byPhase.UpdateSeconds += st.UpdateSeconds
		step := rw.TakeLogs()
		for i := range step {
			step[i].Step = st.Step
		}
		logs = append(logs, step...)
		row := curveRow(st, step, cfg.MaskMass > 0)
		rows = append(rows, row)
		env.Progress.Report(progress.Event{Done: int64(st.Step), Total: int64(cfg.Steps), Unit: "steps",
			Note: fmt.Sprintf("reward %.3f±%.3f correct %s kl %.4f", st.RewardMean, st.RewardStd, row[3], st.KL)})
		if ctx.Err() != nil {
			if err := save(); err != nil {
				return errors.Join(ctx.Err(), fmt.Errorf("saving the resume state: %w", err))
			}
			logf("interrupted after step %d; saved the resume state", st.Step)
			return ctx.Err()
		}
		if st.Step%sp.CheckpointEvery == 0 || tr.Done() {
			if err := save(); err != nil {
				return fmt.Errorf("saving the resume state at step %d: %w", st.Step, err)
			}
		}
	}
	logf("trained %d steps (%d this run) in %.1f s of steps", tr.Steps(), tr.Steps()-firstStep, stepTime.Seconds())

	if err := safeio.WriteAtomic(filepath.Join(j.Dir, "model.ckpt"), tr.Policy().WriteCheckpoint); err != nil {
		return err
	}
	if err := safeio.WriteAtomic(filepath.Join(j.Dir, "curves.csv"), func(w io.Writer) error { return writeCurve(w, curveHeader(cfg.MaskMass > 0), rows) }); err != nil {
		return err
	}
	if err := safeio.WriteAtomic(filepath.Join(j.Dir, "samples.jsonl"), func(w io.Writer) error { return writeSamples(w, logs) }); err != nil {
		return err
	}

	tf.Steps, tf.Samples = tr.Steps(), len(logs)
	// The baselines of the tasks drawn (judged on first use).
	if sp.Reward.Bonus != BonusNone {
		drawn := map[string]bool{}
		for _, l := range logs {
			if drawn[l.Task] {
				continue
			}
			drawn[l.Task] = true
			b, _, err := rw.Baseline(ctx, l.Task)
			if err != nil {
				return err
			}
			if b != nil {
				tf.Baselines++
			} else {
				tf.NoBaseline++
			}
		}
	}
	gates := 0
	for _, l := range logs {
		if l.Gate {
			gates++
		}
	}
	if len(logs) > 0 {
		tf.CorrectRate = float64(gates) / float64(len(logs))
	}
	if len(rows) > 0 {
		tf.FirstRewardMean, _ = strconv.ParseFloat(rows[0][1], 64)
		tf.LastRewardMean, _ = strconv.ParseFloat(rows[len(rows)-1][1], 64)
	}

	samples, phases, sampleTime, _, err := sft.Evaluate(ctx, tr.Policy(), voc, held, sp.Eval, sp.Seed, mcfg.Context, env, logf)
	if err != nil {
		return err
	}
	m := &Metrics{Training: tf, RFT: rftFig, Heldout: sft.Summarize(samples, phases), Correct: []CorrectAttempt{},
		Speed: RunSpeed{Threads: info.Threads, CoreType: info.CoreType, Steps: tr.Steps() - firstStep,
			StepSeconds: stepTime.Seconds(), WallSeconds: time.Since(start).Seconds(), EvalSeconds: sampleTime.Seconds(),
			RFTSeconds: rftTime.Seconds(), SampleSeconds: byPhase.SampleSeconds, RewardSeconds: byPhase.RewardSeconds, ScoreSeconds: byPhase.ScoreSeconds, UpdateSeconds: byPhase.UpdateSeconds}}
	m.Heldout.Constrained = sp.Eval.Constrained
	m.Heldout.GPULimits = sp.Eval.GPULimits
	for _, s := range samples {
		if r := s.Judgement; r != nil && r.Verdict != nil && r.OK && r.LatencyS != nil {
			m.Correct = append(m.Correct, CorrectAttempt{Task: s.Task, Index: s.Index, Hash: s.Hash, LatencyS: *r.LatencyS, LatencySource: r.LatencySource})
		}
	}
	if err := safeio.WriteAtomic(filepath.Join(j.Dir, "eval_samples.jsonl"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, s := range samples {
			if err := enc.Encode(s); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return safeio.WriteAtomic(filepath.Join(j.Dir, "metrics.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	})
}

// resume restores the trainer from the state directory when it holds a
// usable state (nil, without error, when it holds none or one that cannot
// be used: said in the log). The reference is base (the starting model),
// frozen, when beta > 0.
func resume(rt *dragon.Runtime, stateDir string, base *dragon.Model, ps []grpo.Prompt, rw grpo.Rewarder, cfg grpo.Config, logf func(string, ...any)) (*grpo.Trainer, [][]string, []SampleLog, error) {
	if stateDir == "" {
		return nil, nil, nil, nil
	}
	f, err := sft.OpenCheckpoint(filepath.Join(stateDir, stateCheckpoint))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, nil
	}
	ignore := func(err error) (*grpo.Trainer, [][]string, []SampleLog, error) {
		logf("ignoring the resume state (%v); training from step 0", err)
		return nil, nil, nil, nil
	}
	if err != nil {
		return ignore(err)
	}
	defer f.Close()
	var ref *dragon.Model
	if cfg.Beta > 0 {
		if !base.Frozen() {
			if err := base.Freeze(); err != nil {
				return nil, nil, nil, err
			}
		}
		ref = base
	}
	tr, err := grpo.ResumeTrainer(rt, f, ref, ps, rw)
	if err != nil {
		return ignore(err)
	}
	fail := func(err error) (*grpo.Trainer, [][]string, []SampleLog, error) {
		m := tr.Policy()
		tr.Close()
		m.Close()
		return ignore(err)
	}
	if got := tr.Config(); fmt.Sprint(got) != fmt.Sprint(cfg) {
		return fail(fmt.Errorf("its configuration %+v is not the stage's %+v", got, cfg))
	}
	rows, err := readCurve(filepath.Join(stateDir, stateCurve), curveHeader(cfg.MaskMass > 0), tr.Steps())
	if err != nil {
		return fail(fmt.Errorf("the curve: %w", err))
	}
	logs, err := readSamples(filepath.Join(stateDir, stateSamples), tr.Steps())
	if err != nil {
		return fail(fmt.Errorf("the sample log: %w", err))
	}
	logf("resuming from step %d of %d (%s)", tr.Steps(), cfg.Steps, filepath.Join(stateDir, stateCheckpoint))
	return tr, rows, logs, nil
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// curveRow is a step's row: the trainer's figures, and from the step's
// samples the share that passed the gate and the mean log speedup of
// those with one ("" when none has).
func curveRow(st grpo.StepStats, logs []SampleLog, maskMass bool) []string {
	var gates, n int
	var ls float64
	for _, l := range logs {
		if l.Gate {
			gates++
			if l.LogSpeedup != nil {
				ls += *l.LogSpeedup
				n++
			}
		}
	}
	rate, mean := "", ""
	if len(logs) > 0 {
		rate = fmtFloat(float64(gates) / float64(len(logs)))
	}
	if n > 0 {
		mean = fmtFloat(ls / float64(n))
	}
	row := []string{strconv.Itoa(st.Step), fmtFloat(st.RewardMean), fmtFloat(st.RewardStd), rate, mean, fmtFloat(st.KL),
		fmtFloat(st.Entropy), fmtFloat(st.ClipFrac), fmtFloat(st.Loss), fmtFloat(st.GradNorm), fmtFloat(st.LR),
		strconv.Itoa(st.SkippedGroups), strconv.Itoa(st.FailedSamples)}
	if maskMass {
		mass := "" // a step without an update (every group skipped) has none
		if st.Updates > 0 {
			mass = fmtFloat(st.AllowedMass)
		}
		row = append(row, mass)
	}
	return row
}

func writeCurve(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}

// readCurve reads a saved curve, keeping the rows of steps up to steps
// (the curve may be ahead of the checkpoint, never behind).
func readCurve(path string, header []string, steps int) ([][]string, error) {
	b, err := sft.ReadStateFile(path)
	if err != nil {
		return nil, err
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || fmt.Sprint(rows[0]) != fmt.Sprint(header) {
		return nil, errors.New("not a curve of this version (header)")
	}
	rows = rows[1:]
	if len(rows) < steps {
		return nil, fmt.Errorf("%d rows for %d steps", len(rows), steps)
	}
	for i, r := range rows[:steps] {
		if r[0] != strconv.Itoa(i+1) {
			return nil, fmt.Errorf("row %d is of step %s", i+1, r[0])
		}
	}
	return rows[:steps], nil
}

func writeSamples(w io.Writer, logs []SampleLog) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, l := range logs {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return nil
}

// readSamples reads a saved sample log, keeping the samples of steps up
// to steps.
func readSamples(path string, steps int) ([]SampleLog, error) {
	b, err := sft.ReadStateFile(path)
	if err != nil {
		return nil, err
	}
	var out []SampleLog
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var l SampleLog
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if l.Step <= steps {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) > 0 && out[len(out)-1].Step != steps {
		return nil, fmt.Errorf("the log ends at step %d, the checkpoint at %d", out[len(out)-1].Step, steps)
	}
	return out, nil
}
