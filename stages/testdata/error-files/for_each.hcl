stage "gen" {
  kind    = "exec"
  command = "echo hi > x"
  outputs = { x = "x" }
}

stage "rl" {
  kind     = "exec"
  for_each = 3 # ERROR: Invalid for_each
  command  = "true"
}

stage "sweep" {
  kind     = "exec"
  for_each = toset(["a", "b"])
  command  = "echo ${each.key} > out"
  outputs  = { out = "out" }
}

stage "one" {
  kind    = "exec"
  inputs  = { "x" = stage.sweep.out.out } # ERROR: Missing instance key
  command = "true"
}

stage "two" {
  kind    = "exec"
  inputs  = { "x" = stage.sweep["c"].out.out } # ERROR: Unknown stage instance
  command = "true"
}

stage "three" {
  kind    = "exec"
  command = "echo ${each.key}" # ERROR: Reference to each without for_each
}

stage "four" {
  kind    = "exec"
  inputs  = { "x" = stage.gen["a"].out.x } # ERROR: Unexpected instance key
  command = "true"
}
