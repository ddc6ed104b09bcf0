stage "gen" {
  kind    = "exce" # ERROR: Unknown stage kind
  command = "true"
}
