stage "a" {
  kind    = "exec"
  inputs  = { "in" = stage.a.out.x } # ERROR: Self-referencing stage
  command = "cp in x"
  outputs = { x = "x" }
}
