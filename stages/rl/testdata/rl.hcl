# A tiny pipeline on stages/encode's small real dataset (3 construction and
# 3 refinement examples of SFM, GMM and C1D, 32-trial searches on the H100
# model; 2 held-out construction tasks and 4 refinement prompts): encode,
# a tiny sft, then rl with the script grammar as the sampler's constraint,
# so that samples finish and the reward has something to rank (and the
# held-out evaluation under the same grammar: eval.constrained). In the
# pipeline the dataset files are stage.harvest.out.*.
stage "encode" {
  kind              = "encode"
  construction      = "../../encode/testdata/dataset/construction.jsonl"
  refinement        = "../../encode/testdata/dataset/refinement.jsonl"
  test_construction = "../../encode/testdata/dataset/test_construction.jsonl"
  test_refinement   = "../../encode/testdata/dataset/test_refinement.jsonl"
}

stage "sft" {
  kind       = "sft"
  train      = stage.encode.out.train
  heldout    = stage.encode.out.heldout
  vocab      = stage.encode.out.vocab
  seed       = 1
  threads    = 1
  validation = 0
  model {
    layers  = 1
    width   = 32
    heads   = 2
    context = 1024
    dropout = 0
  }
  optimizer {
    steps  = 10
    batch  = 2
    lr     = 3e-3
    min_lr = 3e-4
    warmup = 2
  }
  eval {
    tasks   = 0
    max_new = 8
  }
}

stage "rl" {
  kind               = "rl"
  checkpoint         = stage.sft.out.checkpoint
  train              = stage.encode.out.train
  construction       = "../../encode/testdata/dataset/construction.jsonl"
  refinement         = "../../encode/testdata/dataset/refinement.jsonl"
  heldout            = stage.encode.out.heldout
  vocab              = stage.encode.out.vocab
  seed               = 1
  threads            = 1
  constrained        = true
  construction_share = 0.5
  checkpoint_every   = 2
  grpo {
    steps   = 4
    prompts = 2
    group   = 3
    max_new = 360
    lr      = 1e-3
  }
  reward {
    gate     = "static"
    bonus    = "log_speedup"
    baseline = "prompt"
  }
  eval {
    tasks       = 1
    max_new     = 360
    numeric     = false
    constrained = true
  }
}
