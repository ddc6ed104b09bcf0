stage "gen" {
  kind    = "exec"
  command = "true"
}

stage "gen" { # ERROR: Duplicate stage name
  kind    = "exec"
  command = "false"
}
