stage "gen" { # ERROR: Missing required argument
  command = "true"
}
