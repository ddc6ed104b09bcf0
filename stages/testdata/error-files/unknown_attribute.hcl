stage "gen" {
  kind    = "exec"
  command = "true"
  outptus = { x = "x" } # ERROR: Unsupported argument
}
