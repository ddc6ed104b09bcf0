stage "gen" {
  kind    = "exec"
  command = "seq 1 3 > n.txt"
  outputs = { nums = "n.txt" }
}

stage "square" {
  kind    = "exec"
  inputs  = { "n.txt" = stage.gne.out.nums } # ERROR: Reference to undeclared stage
  command = "cat n.txt"
}
