# Encode a small dataset (kernels/dataset's four files, made by
# `go test ./stages/encode -run TestExampleData -update`: a 32-trial search
# of SFM/0, GMM/0, C1D/0 and NRM/0 on the H100 model, NRM/0 and TBG/0 held
# out). In the pipeline the inputs are stage.harvest.out.*.
stage "encode" {
  kind              = "encode"
  construction      = "dataset/construction.jsonl"
  refinement        = "dataset/refinement.jsonl"
  test_construction = "dataset/test_construction.jsonl"
  test_refinement   = "dataset/test_refinement.jsonl"
}
