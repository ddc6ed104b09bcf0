stage "gen" {
  kind = "exec"
  command = "true" "false" # ERROR: Missing newline after argument
}
