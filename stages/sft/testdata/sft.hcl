# A tiny sft stage on real encoded examples (testdata/train.jsonl: random
# draws of the benchmark shapes' design spaces, encoded as the encode stage
# does; regenerate with `go test ./stages/sft -run TestGenerate -update`).
# In the pipeline the inputs are stage.encode.out.train, .heldout and .vocab.
stage "sft" {
  kind    = "sft"
  train   = "train.jsonl"
  heldout = "heldout.jsonl"
  vocab   = "vocab.txt"

  seed             = 1
  threads          = 1
  validation       = 0.2
  overlong         = "drop"
  checkpoint_every = 10

  model {
    layers  = 1
    width   = 32
    heads   = 2
    context = 512
    dropout = 0.1
  }
  optimizer {
    steps      = 30
    batch      = 4
    lr         = 3e-3
    min_lr     = 3e-4
    warmup     = 5
    eval_every = 10
  }
  eval {
    tasks   = 2
    max_new = 40
    numeric = true
    target  = "h100-model"
  }
}
