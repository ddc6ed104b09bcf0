//go:build torch

package sft

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"dragonx/dragon"
	"dragonx/internal/progress"
	"dragonx/internal/safeio"
	"dragonx/kernels/vocab"
	"dragonx/stages/job"
)

func init() { job.Register("sft", job.Runner{Version: Version, Run: runJob}) }

// The resume state in the job's state directory: the trainer checkpoint and
// the loss curve up to (at least) its step. The curve is written first, so
// that it never lags the checkpoint.
const (
	stateCheckpoint = "trainer.ckpt"
	stateCurve      = "loss.csv"
)

// curveHeader is loss.csv's header. Every column is a result of the
// parameters (no timings), so that two runs, or an interrupted and resumed
// run, write the same bytes.
var curveHeader = []string{"step", "lr", "loss", "eval_loss", "grad_norm", "tokens"}

// peakTrial and peakTrials size the sgemm peak measurement (about 1 s).
const (
	peakTrial  = 300 * time.Millisecond
	peakTrials = 3
)

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
	logf := func(format string, args ...any) { fmt.Fprintf(env.Log, "sft: "+format+"\n", args...) }
	path := func(name string) string { return filepath.Join(j.Dir, filepath.FromSlash(name)) }

	voc, err := loadVocab(path(sp.Vocab))
	if err != nil {
		return err
	}
	if sp.Model.Vocab != voc.VocabSize() {
		return fmt.Errorf("the model's vocabulary size %d is not the vocabulary's %d", sp.Model.Vocab, voc.VocabSize())
	}
	recs, err := readFile(path(sp.Train), func(r io.Reader) ([]TrainRecord, error) { return ReadTrain(r, trainFile, voc.VocabSize()) })
	if err != nil {
		return err
	}
	train, val, fit, err := Split(recs, sp.Validation, sp.Model.Context, dragon.Overlong(sp.Overlong))
	if err != nil {
		return err
	}
	logf("%d training records: %s", len(recs), fit)
	logf("%d training and %d validation examples (validation = %v, by workload hash)", len(train), len(val), sp.Validation)
	if len(train) == 0 {
		return fmt.Errorf("no training example is left (%d records, %d dropped as longer than the context of %d, %d held out for validation)", len(recs), fit.Dropped, sp.Model.Context, len(val))
	}
	held, err := readFile(path(sp.Heldout), func(r io.Reader) ([]HeldoutRecord, error) { return ReadHeldout(r, heldoutFile, voc.VocabSize()) })
	if err != nil {
		return err
	}
	if _, err := CheckFormats(recs, held); err != nil {
		return err
	}

	rt, err := dragon.NewRuntime(dragon.RuntimeOptions{Threads: sp.Threads, Seed: sp.Seed})
	if err != nil {
		return err
	}
	defer rt.Close()
	info := rt.Info()
	logf("libtorch %s, %d threads, OPENBLAS_CORETYPE=%q", info.Libtorch, info.Threads, info.CoreType)

	// MFU's denominator, measured in this process with these threads;
	// before the trainer exists, because it draws from libtorch's generator,
	// which the trainer seeds (or a resume restores) and dropout uses.
	peak, err := rt.SgemmPeak(ctx, peakTrial, peakTrials)
	if err != nil {
		return err
	}

	tr, rows, err := startTrainer(rt, sp, voc, train, val, j.StateDir, logf)
	if err != nil {
		return err
	}
	defer func() {
		m := tr.Model()
		tr.Close()
		m.Close()
	}()
	save := func() error {
		if j.StateDir == "" {
			return nil
		}
		if err := safeio.WriteAtomic(filepath.Join(j.StateDir, stateCurve), func(w io.Writer) error { return writeCurve(w, rows) }); err != nil {
			return err
		}
		return safeio.WriteAtomic(filepath.Join(j.StateDir, stateCheckpoint), tr.WriteCheckpoint)
	}

	meanLen := meanTokens(train)
	flopsPerToken := sp.Model.TrainFLOPsPerToken(int(math.Round(meanLen)))

	steps := sp.Optimizer.Steps
	firstStep := tr.Step()
	var runTokens int64
	var stepTime time.Duration // in TrainStep only: what MFU measures
	start := time.Now()
	for tr.Step() < steps {
		st, err := tr.TrainStep(ctx)
		if err != nil {
			if ctx.Err() != nil {
				if serr := save(); serr != nil {
					return errors.Join(err, fmt.Errorf("saving the resume state: %w", serr))
				}
				logf("interrupted after step %d; saved the resume state", tr.Step())
			}
			return err
		}
		runTokens += int64(st.Tokens)
		stepTime += st.Elapsed
		evalLoss := math.NaN()
		if (sp.Optimizer.EvalEvery > 0 && st.Step%sp.Optimizer.EvalEvery == 0) || st.Step == steps {
			if len(val) > 0 {
				// Not interruptible: the step's row must be whole
				// before the state is saved. The validation set is small.
				if evalLoss, err = tr.Eval(context.WithoutCancel(ctx)); err != nil {
					return err
				}
			}
		}
		rows = append(rows, curveRow(st, evalLoss))
		el := time.Since(start).Seconds()
		tps := float64(runTokens) / max(el, 1e-9)
		note := fmt.Sprintf("loss %.4f", st.Loss)
		if !math.IsNaN(evalLoss) {
			note += fmt.Sprintf(" val %.4f", evalLoss)
		}
		note += fmt.Sprintf(" %.0f tok/s %.2f steps/s", tps, float64(st.Step-firstStep)/max(el, 1e-9))
		env.Progress.Report(progress.Event{Done: int64(st.Step), Total: int64(steps), Unit: "steps", Note: note})
		if st.Step%sp.CheckpointEvery == 0 || st.Step == steps {
			if err := save(); err != nil {
				return fmt.Errorf("saving the resume state at step %d: %w", st.Step, err)
			}
		}
	}
	wallSeconds := time.Since(start).Seconds()
	trainSeconds := stepTime.Seconds()

	// Outputs: the model (weights only) and the loss curve.
	if err := safeio.WriteAtomic(filepath.Join(j.Dir, "model.ckpt"), tr.Model().WriteCheckpoint); err != nil {
		return err
	}
	if err := safeio.WriteAtomic(filepath.Join(j.Dir, "loss.csv"), func(w io.Writer) error { return writeCurve(w, rows) }); err != nil {
		return err
	}

	m := &Metrics{
		Examples: ExampleCounts{Records: len(recs), Train: len(train), Validation: len(val), DroppedOverlong: fit.Dropped, Longest: fit.Longest},
		Training: TrainingFigures{
			Steps:         tr.Step(),
			Tokens:        totalTokens(rows),
			Params:        sp.Model.NumParams(),
			MeanTokens:    meanLen,
			FLOPsPerToken: flopsPerToken,
			FinalLoss:     lastLoss(rows),
		},
		Validation: ValidationFigures{Examples: len(val), Loss: nullable(lastEval(rows))},
		Speed: Speed{
			Threads: info.Threads, CoreType: info.CoreType, SgemmPeakGFLOPS: peak,
			Steps: tr.Step() - firstStep, Tokens: runTokens, StepSeconds: trainSeconds, WallSeconds: wallSeconds,
		},
	}
	if trainSeconds > 0 && runTokens > 0 {
		m.Speed.TokensPerS = float64(runTokens) / trainSeconds
		m.Speed.StepsPerS = float64(m.Speed.Steps) / trainSeconds
		m.Speed.MFU = m.Speed.TokensPerS * flopsPerToken / 1e9 / peak
	}
	logf("trained %d steps (%d this run) in %.1f s (%.1f s in steps): %.0f tokens/s, %.3f GFLOP/token, MFU %.1f%% of a %.1f GFLOP/s sgemm peak",
		m.Training.Steps, m.Speed.Steps, wallSeconds, trainSeconds, m.Speed.TokensPerS, flopsPerToken/1e9, 100*m.Speed.MFU, peak)

	samples, phases, sampleTime, sampled, err := evaluate(ctx, tr.Model(), voc, held, sp, env, logf)
	if err != nil {
		return err
	}
	m.Speed.SampleSeconds, m.Speed.SampledTokens = sampleTime.Seconds(), sampled
	m.Heldout = summarize(samples, phases)
	m.Heldout.Constrained = sp.Eval.Constrained
	m.Heldout.GPULimits = sp.Eval.GPULimits
	if err := safeio.WriteAtomic(filepath.Join(j.Dir, "samples.jsonl"), func(w io.Writer) error {
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

// startTrainer resumes from the state directory's checkpoint when it is
// usable, else starts from scratch. A checkpoint that cannot be read, does
// not match the spec or lacks its loss curve is ignored, with a log line.
func startTrainer(rt *dragon.Runtime, sp Spec, voc *vocab.Vocab, train, val []dragon.Example, stateDir string, logf func(string, ...any)) (*dragon.Trainer, [][]string, error) {
	if stateDir != "" {
		tr, rows, err := resume(rt, sp, voc, train, val, stateDir)
		switch {
		case err == nil:
			logf("resuming from step %d of %d (%s)", tr.Step(), sp.Optimizer.Steps, filepath.Join(stateDir, stateCheckpoint))
			return tr, rows, nil
		case errors.Is(err, os.ErrNotExist):
		default:
			logf("ignoring the resume state (%v); training from step 0", err)
		}
	}
	m, err := rt.NewModel(sp.Model, sp.Seed)
	if err != nil {
		return nil, nil, err
	}
	m.SetTokenizer(voc.Identity())
	tr, err := dragon.NewTrainer(m, sp.Optimizer, train, val)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return tr, nil, nil
}

func resume(rt *dragon.Runtime, sp Spec, voc *vocab.Vocab, train, val []dragon.Example, stateDir string) (*dragon.Trainer, [][]string, error) {
	f, err := OpenCheckpoint(filepath.Join(stateDir, stateCheckpoint))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	tr, err := rt.ResumeTrainer(f, train, val)
	if err != nil {
		return nil, nil, err
	}
	fail := func(format string, args ...any) (*dragon.Trainer, [][]string, error) {
		m := tr.Model()
		tr.Close()
		m.Close()
		return nil, nil, fmt.Errorf(format, args...)
	}
	if got := tr.Model().Config(); got != sp.Model {
		return fail("its model %+v is not the stage's %+v", got, sp.Model)
	}
	if got := tr.Model().Tokenizer(); got != voc.Identity() {
		return fail("its tokenizer %s is not the vocabulary's %s", got, voc.Identity())
	}
	if tr.Step() > sp.Optimizer.Steps {
		return fail("its step %d is past the run's %d steps", tr.Step(), sp.Optimizer.Steps)
	}
	rows, err := readCurve(filepath.Join(stateDir, stateCurve), tr.Step())
	if err != nil {
		return fail("the loss curve: %v", err)
	}
	return tr, rows, nil
}

func readFile[T any](path string, read func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return read(f)
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func curveRow(st dragon.StepStats, evalLoss float64) []string {
	e := ""
	if !math.IsNaN(evalLoss) {
		e = fmtFloat(evalLoss)
	}
	return []string{strconv.Itoa(st.Step), fmtFloat(st.LR), fmtFloat(st.Loss), e, fmtFloat(st.GradNorm), strconv.Itoa(st.Tokens)}
}

func writeCurve(w io.Writer, rows [][]string) error {
	cw := csv.NewWriter(w)
	cw.Write(curveHeader)
	cw.WriteAll(rows)
	return cw.Error()
}

// readCurve reads a saved loss curve and returns its first steps rows, which
// must be steps 1 to steps.
func readCurve(path string, steps int) ([][]string, error) {
	b, err := ReadStateFile(path)
	if err != nil {
		return nil, err
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 || len(recs[0]) != len(curveHeader) {
		return nil, errors.New("no header")
	}
	rows := recs[1:]
	if len(rows) < steps {
		return nil, fmt.Errorf("%d rows, fewer than the checkpoint's %d steps", len(rows), steps)
	}
	rows = rows[:steps]
	for i, r := range rows {
		if len(r) != len(curveHeader) || r[0] != strconv.Itoa(i+1) {
			return nil, fmt.Errorf("row %d is not step %d", i+1, i+1)
		}
	}
	return rows, nil
}

func meanTokens(exs []dragon.Example) float64 {
	var n int
	for _, ex := range exs {
		n += dragon.ExampleTokens(ex)
	}
	return float64(n) / float64(len(exs))
}

func totalTokens(rows [][]string) int64 {
	var n int64
	for _, r := range rows {
		t, _ := strconv.ParseInt(r[5], 10, 64)
		n += t
	}
	return n
}

func lastLoss(rows [][]string) float64 {
	if len(rows) == 0 {
		return math.NaN()
	}
	x, _ := strconv.ParseFloat(rows[len(rows)-1][2], 64)
	return x
}

func lastEval(rows [][]string) float64 {
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i][3] != "" {
			x, _ := strconv.ParseFloat(rows[i][3], 64)
			return x
		}
	}
	return math.NaN()
}
