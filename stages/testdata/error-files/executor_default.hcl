variable "part" {
  default = "gpu"
}

executor "slurm" {
  partition = var.part
  time      = "2 hours" # ERROR: Invalid executor setting
}

executor "local" {} # ERROR: Duplicate executor block

# The default's errors stop decoding here (stages come after variables,
# locals, cache and executor).
stage "ok" {
  kind    = "exec"
  command = "seq 3 > n"
  outputs = { n = "n" }
}
