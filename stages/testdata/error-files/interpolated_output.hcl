stage "gen" {
  kind    = "exec"
  command = "seq 1 3 > n.txt"
  outputs = { nums = "n.txt" }
}

stage "use" {
  kind    = "exec"
  command = "cat ${stage.gen.out.nums}" # ERROR: Invalid template interpolation value
}
