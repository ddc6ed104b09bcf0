stage "gen" {
  kind    = "exec"
  command = 42 # ERROR: Invalid command
  outputs = "x.txt" # ERROR: Invalid outputs
}
