stage "gen" {
  kind    = "exec"
  command = "seq 1 3 > n.txt"
  outputs = { nums = "n.txt" }
}

stage "square" {
  kind    = "exec"
  inputs  = { "n.txt" = stage.gen.out.numbers } # ERROR: Unknown stage output
  command = "cat n.txt"
}
