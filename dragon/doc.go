// Package dragon is the little dragon: a small decoder-only transformer
// trained from scratch on CPU (or GPU) through gotch and libtorch, with its
// supervised fine-tuning trainer, a batched KV-cache sampler and single-file
// checkpoints.
//
// It knows nothing of stages, HCL files or the cache: the sft and rl stage
// kinds adapt it, and a checkpoint is a byte stream the cache stores as a
// blob. It does not tokenize scripts either; the encode stage supplies a
// Tokenizer, whose Identity a checkpoint records.
//
// # Where to start
//
//   - Config describes a model (layers, width, heads, context, vocabulary,
//     dropout); TrainConfig a training run; SampleOptions a sampling call.
//     All three decode from HCL and JSON and validate with errors that name
//     the field.
//   - NewRuntime starts the torch thread. Every libtorch call of the package
//     runs on that one locked OS thread, because libtorch keeps its error
//     slot, autograd mode and OpenMP thread count per thread. Methods of
//     Model, Trainer and the sampler may be called from any goroutine; they
//     hand their work to the runtime's thread and wait for it.
//   - Runtime.NewModel builds a GPT (token and position embeddings, pre-LN
//     blocks of causal multi-head attention and GELU MLP, tied output head).
//   - NewTrainer and Trainer.Run train it on prompt/target examples with the
//     loss on the target tokens only.
//   - Model.Sample and Model.SampleRows generate with a KV cache: greedy,
//     temperature, top-k, top-p, stop tokens, per-token log-probabilities, a
//     constraint hook, one random stream and MaxNew per row, one prefill per
//     distinct prompt (GRPO groups), failures reported per row.
//   - For policy-gradient training: Model.Score (teacher-forced
//     log-probabilities with gradients; Scores.Backward takes a loss's
//     derivatives) and ScoreNoGrad; NewOptimizer (AdamW, clipping, schedule;
//     the Trainer uses it) with Minimize and its own checkpoints;
//     Model.Clone and Freeze for a frozen reference; SetTraining for dropout.
//   - Model.WriteCheckpoint, Trainer.WriteCheckpoint and Runtime.ReadCheckpoint
//     save and restore models and exact training state (format: checkpoint.go).
//   - Bench measures training and sampling throughput against the machine's
//     sgemm peak measured in the same run.
//
// # Build tags
//
// libtorch is opt-in: the model, trainer, sampler and benchmark are built
// with the torch tag (make build and make test set it). Without it the
// package still compiles, its configuration, tokenizer, schedule, batching,
// sampling-math and checkpoint-format code work, and NewRuntime returns
// ErrNoTorch.
//
// # Memory
//
// gotch v0.7.0 frees nothing by itself: every tensor handle is dropped
// explicitly, per step, through an arena. Together with the leak fixes of
// scripts/gotch-compat.sh this keeps the resident set flat over long runs;
// the tests check it.
package dragon
