package sft

import (
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/judge"
	"dragonx/kernels/numeric"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
)

// judgeOptions are the judge's options for the eval block: up to the
// numerical gate (eval.numeric) or the static verdict, then the latency on
// eval.target's model. The gate's compiled programs go to cacheDir.
func judgeOptions(ev EvalSpec, voc *vocab.Vocab, seed int64, cacheDir string) (judge.Options, error) {
	lat, err := gpumodel.New(ev.Target, gpumodel.Options{})
	if err != nil {
		return judge.Options{}, err
	}
	opts := judge.Options{Until: verdict.PhaseVerify, Latency: lat, Vocab: voc}
	if ev.Numeric {
		opts.Until = verdict.PhaseNumeric
		if opts.Gate, err = numeric.New(numeric.Options{CacheDir: cacheDir, Seed: uint64(seed)}); err != nil {
			return judge.Options{}, err
		}
	}
	return opts, nil
}

// JudgeOptions are the judge's options for an eval block (up to the
// numerical gate or the static verdict, then the latency on its target's
// model; the gate's programs go to cacheDir), for the other stage kinds
// that judge samples as sft's held-out evaluation does (bench).
func JudgeOptions(ev EvalSpec, voc *vocab.Vocab, seed int64, cacheDir string) (judge.Options, error) {
	return judgeOptions(ev, voc, seed, cacheDir)
}
