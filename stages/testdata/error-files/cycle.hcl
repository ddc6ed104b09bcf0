stage "a" {
  kind    = "exec"
  inputs  = { "in" = stage.c.out.x } # ERROR: Dependency cycle
  command = "cp in x"
  outputs = { x = "x" }
}

stage "b" {
  kind    = "exec"
  inputs  = { "in" = stage.a.out.x }
  command = "cp in x"
  outputs = { x = "x" }
}

stage "c" {
  kind    = "exec"
  inputs  = { "in" = stage.b.out.x }
  command = "cp in x"
  outputs = { x = "x" }
}

# Independent of the cycle, and still reported in the same run:
stage "d" {
  kind    = "exec"
  command = ["true"]
  env     = "x" # ERROR: Invalid env
}
