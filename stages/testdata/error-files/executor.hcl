stage "a" {
  kind    = "exec"
  command = "seq 3 > n"
  outputs = { n = "n" }
  executor "slrum" {} # ERROR: Unknown executor
}

stage "b" {
  kind    = "exec"
  command = "seq 3 > n"
  outputs = { n = "n" }
  executor "local" {
    partition = "gpu" # ERROR: Unsupported argument
  }
}

stage "c" {
  kind    = "exec"
  command = "seq 3 > n"
  outputs = { n = "n" }
  shards  = 0 # ERROR: Invalid shards
  executor "slurm" {
    cpus_per_task     = 0                            # ERROR: Invalid executor setting
    array_parallelism = 1.5                          # ERROR: Invalid executor setting
    extra_args        = ["--account=abc", "--array=0-3"] # ERROR: Invalid executor setting
  }
}

stage "d" {
  kind    = "exec"
  command = "seq 3 > n"
  outputs = { n = "n" }
  executor "slurm" {
    partition = stage.a.out.n # ERROR: Invalid executor setting
  }
}

stage "e" {
  kind    = "exec"
  command = "seq 3 > n"
  outputs = { n = "n" }
  executor "local" {}
  executor "slurm" {} # ERROR: Duplicate executor block
}

stage "f" {
  kind    = "exec"
  command = "seq 3 > n"
  outputs = { n = "n" }
  shards  = "many" # ERROR: Invalid shards
  executor "slurm" {
    extra_args = "--account=abc" # ERROR: Invalid executor setting
    retries    = 11               # ERROR: Invalid executor setting
  }
}
