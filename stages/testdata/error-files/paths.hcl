stage "abs" {
  kind    = "exec"
  command = "true"
  outputs = { x = "/tmp/x" } # ERROR: Invalid path
}

stage "up" {
  kind    = "exec"
  inputs  = { "../x" = "data.txt" } # ERROR: Invalid path
  command = "true"
}

stage "overlap" {
  kind    = "exec"
  inputs  = { "d" = "data" }
  command = "true"
  outputs = { x = "d/x" } # ERROR: Overlapping paths
}

stage "badname" {
  kind    = "exec"
  command = "true"
  outputs = { "my-out" = "x" } # ERROR: Invalid output name
}
