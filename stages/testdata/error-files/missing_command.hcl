stage "gen" { # ERROR: Missing required argument
  kind    = "exec"
  outputs = { x = "x" }
}
