# A small corpus: the 52 benchmark shapes and 148 workloads of the layer
# tables, BERT-tiny's rows held out (test), a tenth of the others in test too.
stage "workloads" {
  kind             = "workloads"
  count            = 200
  seed             = 1
  test_fraction    = 0.1
  hold_out_network = "bert-tiny"
  benchmarks       = true
}
