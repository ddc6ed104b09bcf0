# A tiny benchmark on stages/encode's small real dataset (2 held-out
# construction tasks and 4 refinement prompts of SFM, GMM and C1D): encode,
# a tiny sft, then bench with that model as two policies, sampling
# unconstrained and under the script grammar, against the unscheduled,
# random and random_walk baselines. In the
# pipeline the test files are stage.harvest.out.test_*.
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
    steps  = 4
    batch  = 2
    lr     = 3e-3
    warmup = 1
  }
  eval {
    tasks   = 0
    max_new = 4
  }
}

stage "bench" {
  kind               = "bench"
  heldout            = stage.encode.out.heldout
  vocab              = stage.encode.out.vocab
  construction_tasks = "../../encode/testdata/dataset/test_construction.jsonl"
  refinement_prompts = "../../encode/testdata/dataset/test_refinement.jsonl"
  policy "sft" { checkpoint = stage.sft.out.checkpoint }
  policy "again" { checkpoint = stage.sft.out.checkpoint }
  baselines   = ["unscheduled", "random", "random_walk"]
  attempts    = 2
  temperature = 1
  greedy      = true
  max_new     = 300
  decoding    = ["unconstrained", "grammar"]
  tasks       = 1
  numeric     = true
  seed        = 1
  threads     = 2
  batch       = 4
}
