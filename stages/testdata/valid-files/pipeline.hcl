variable "n" {
  type        = number
  default     = 5
  description = "how many numbers"
}

variable "seeds" {
  type    = list(string)
  default = ["a", "b"]
}

locals {
  cmd  = "seq 1 ${var.n} > nums.txt"
  both = concat(var.seeds, ["c"])
}

stage "gen" {
  kind    = "exec"
  command = ["sh", "-c", local.cmd]
  outputs = { nums = "nums.txt" }
}

stage "sweep" {
  kind     = "exec"
  for_each = toset(local.both)
  inputs   = { "in/nums.txt" = stage.gen.out.nums }
  command  = "echo ${each.key} >> out.txt; cat in/nums.txt >> out.txt"
  outputs  = { out = "out.txt" }
  env      = { SEED = each.value, J = jsonencode({ n = var.n }) }
}

stage "collect" {
  kind    = "exec"
  inputs  = { for k, s in stage.sweep : "in/${k}.txt" => s.out.out }
  command = "cat in/*.txt > all.txt"
  outputs = { all = "all.txt" }
}

stage "pick" {
  kind    = "exec"
  inputs  = { "b.txt" = stage.sweep["b"].out.out }
  command = "cp b.txt picked.txt"
  outputs = { picked = "picked.txt" }
}
