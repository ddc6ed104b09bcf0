package dragon

// BenchOptions configure Bench.
type BenchOptions struct {
	// Threads is libtorch's intra-op thread count (0: DefaultThreads); the
	// sgemm peak is measured with the same count.
	Threads int
	// Quick shortens every measurement (a smoke run; noisier figures).
	Quick bool
}

// BenchReport is what Bench measured. Its JSON form is the one
// `dragonx dragon bench --json` prints; the fields marked "-" are for the
// human-readable table.
type BenchReport struct {
	// SgemmPeakGFLOPS is the best fp32 matrix-product rate (n=1024) of the
	// run, with the same threads: the denominator of MFU.
	SgemmPeakGFLOPS float64      `json:"sgemm_peak_gflops"`
	Train           []BenchTrain `json:"train"`
	Sample          BenchSample  `json:"sample"`
	Runtime         RuntimeInfo  `json:"-"`
}

// BenchTrain is the training throughput of one model size.
type BenchTrain struct {
	Params int64 `json:"params"`
	// TokensPerS counts input tokens per second of fwd+bwd+AdamW steps.
	TokensPerS float64 `json:"tokens_per_s"`
	// GFLOPS is TokensPerS × Config.TrainFLOPsPerToken(SeqLen).
	GFLOPS float64 `json:"gflops"`
	// MFU is GFLOPS over the run's sgemm peak.
	MFU     float64 `json:"mfu"`
	Config  Config  `json:"-"`
	SeqLen  int     `json:"-"`
	Batch   int     `json:"-"`
	Steps   int     `json:"-"`
	Seconds float64 `json:"-"`
}

// BenchSample is the sampling throughput (generated tokens per second) of
// one model with and without the KV cache.
type BenchSample struct {
	KVTokensPerS   float64 `json:"kv_tokens_per_s"`
	NoKVTokensPerS float64 `json:"nokv_tokens_per_s"`
	Params         int64   `json:"-"`
	Config         Config  `json:"-"`
	Batch          int     `json:"-"`
	Prompt         int     `json:"-"`
	New            int     `json:"-"`
	// KVBatch16TokensPerS is the KV-cache rate of a batch of 16 sequences
	// (a GRPO group); 0 when not measured (Quick).
	KVBatch16TokensPerS float64 `json:"-"`
}

// benchConfigs are the three model sizes of the benchmark (about 2M, 6.5M
// and 21.6M parameters, the rows of shared/design/lm-rl.md §2), trained at
// sequence length 256 with 16 sequences per step (4k tokens, the best
// setting measured there), dropout off.
func benchConfigs() []Config {
	return []Config{
		{Layers: 4, Width: 192, Heads: 6, Context: 256, Vocab: 512},
		{Layers: 8, Width: 256, Heads: 8, Context: 256, Vocab: 512},
		{Layers: 12, Width: 384, Heads: 6, Context: 256, Vocab: 512},
	}
}

// benchSampleConfig is the sampling benchmark's model: the 6.5M model with a
// 512-token context (room for a 32-token prompt and 256 new tokens).
func benchSampleConfig() Config {
	return Config{Layers: 8, Width: 256, Heads: 8, Context: 512, Vocab: 512}
}
