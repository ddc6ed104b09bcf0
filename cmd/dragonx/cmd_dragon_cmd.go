package main

// cmdDragon is the dragon command. In dragonx-torch (built with -tags=torch)
// runDragon runs it (cmd_dragon.go); in dragonx it hands it to dragonx-torch
// (dragon_delegate.go).
var cmdDragon = &command{
	subcommands: true,
	name:        "dragon",
	usage:       "dragon bench [--json] [--quick] [--threads N]",
	short:       "the little dragon language model: benchmarks",
	long: `dragon gives access to the little dragon, the project's transformer on
gotch/libtorch (package dragon).

  dragon bench    measures, in one run and with one thread setting:
                  the fp32 sgemm peak (1024x1024 matrix products);
                  training throughput (fwd+bwd+clip+AdamW steps, 16x256
                  random tokens) of ~1.9M, ~6.5M and ~21.6M parameter
                  models, in tokens/s, GFLOP/s and MFU (GFLOP/s over the
                  sgemm peak of the same run);
                  sampling throughput of the 6.5M model (32-token prompt,
                  256 new tokens, one sequence) with and without the KV
                  cache. It prints OPENBLAS_CORETYPE and the thread count
                  with the figures (on stderr with --json). It takes about
                  2 minutes on a 2-core machine (--quick: about 30 s).

The dragon commands run in dragonx-torch, this program built with libtorch
(make build makes bin/dragonx and bin/dragonx-torch); dragonx hands them
over. Without dragonx-torch they fail with exit status 1.

` + "FLAGS (bench)\n" + `  -json
      print {"sgemm_peak_gflops", "train": [{"params", "tokens_per_s",
      "gflops", "mfu"}], "sample": {"kv_tokens_per_s", "nokv_tokens_per_s"}}
  -quick
      shorter measurements (noisier)
  -threads N
      libtorch intra-op threads (default 2)
`,
	run: runDragon,
}
