# A tiny harvest: seven workloads (five train, two test) of testdata/workloads.jsonl,
# 8 trials each on the H100 model, in two shards. `dragonx run` runs it in seconds.
stage "harvest" {
  kind      = "harvest"
  workloads = "workloads.jsonl"
  target    = "h100-model"
  trials    = 8
  seed      = 1
  shards    = 2
  search {
    cost_model       = "random"
    population       = 64
    trials_per_round = 8
  }
  dataset {
    min_records       = 3
    test_construction = 2
    test_refinement   = 2
  }
}
