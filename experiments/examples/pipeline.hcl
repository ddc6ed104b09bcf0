# The example experiment: seven exec stages that check Nicomachus's theorem
# (the sum of the first n cubes is the square of the sum of the first n
# numbers). It shows the parts of an experiment file: variables, locals,
# stages of a kind, references between stages (the only source of edges),
# local inputs, for_each, and functions.
#
#   dragonx run experiments/examples/pipeline.hcl            # first run: every stage runs
#   dragonx run experiments/examples/pipeline.hcl            # again: every stage is cached
#   dragonx plan -var n=200 experiments/examples/pipeline.hcl  # what would rerun, and why
#
# Outputs land in out/<stage>/ at the repository root.

variable "n" {
  type        = number
  default     = 100
  description = "how many natural numbers to sum"
}

variable "powers" {
  type        = map(number)
  default     = { squares = 2, cubes = 3 }
  description = "the powers to sum, by name"
}

locals {
  awk = "LC_ALL=C awk"
}

stage "gen" {
  kind    = "exec"
  command = ["sh", "-c", "seq 1 ${var.n} > nums.txt"]
  outputs = { nums = "nums.txt" }
}

# One instance per power: stage.power["squares"], stage.power["cubes"].
stage "power" {
  kind     = "exec"
  for_each = var.powers
  inputs   = { "in/nums.txt" = stage.gen.out.nums }
  command  = "${local.awk} '{ print $1 ^ ${each.value} }' in/nums.txt > out.txt"
  outputs  = { values = "out.txt" }
}

stage "sum" {
  kind    = "exec"
  inputs  = { "nums.txt" = stage.gen.out.nums }
  command = "${local.awk} '{ s += $1 } END { print s }' nums.txt > sum.txt"
  outputs = { sum = "sum.txt" }
}

# All instances of a for_each stage at once: one input per instance.
stage "totals" {
  kind    = "exec"
  inputs  = { for name, p in stage.power : "in/${name}.txt" => p.out.values }
  command = "for f in in/*.txt; do printf '%s\\t' \"$(basename \"$f\" .txt)\"; ${local.awk} '{ s += $1 } END { printf \"%.0f\\n\", s }' \"$f\"; done > totals.tsv"
  outputs = { totals = "totals.tsv" }
}

stage "check" {
  kind   = "exec"
  inputs = {
    "sum.txt"    = stage.sum.out.sum
    "totals.tsv" = stage.totals.out.totals
  }
  command = <<-SH
    s=$(cat sum.txt)
    c=$(${local.awk} '$1 == "cubes" { print $2 }' totals.tsv)
    sq=$(${local.awk} -v s="$s" 'BEGIN { printf "%.0f", s * s }')
    if [ "$c" = "$sq" ]; then echo "ok: sum of cubes $c = (sum $s)^2" > check.txt
    else echo "FAILED: sum of cubes $c != (sum $s)^2 = $sq" > check.txt; exit 1; fi
  SH
  outputs = { verdict = "check.txt" }
}

stage "report" {
  kind   = "exec"
  inputs = {
    "labels.tsv" = "data/labels.txt"
    "totals.tsv" = stage.totals.out.totals
    "sum.txt"    = stage.sum.out.sum
    "check.txt"  = stage.check.out.verdict
  }
  command = <<-SH
    {
      echo "# Nicomachus's theorem for n = ${var.n}"
      echo
      echo "| quantity | value | meaning |"
      echo "| --- | --- | --- |"
      printf '| sum | %s | %s |\n' "$(cat sum.txt)" "$(${local.awk} -F'\t' '$1 == "sum" { print $2 }' labels.tsv)"
      while IFS="$(printf '\t')" read -r name value; do
        printf '| %s | %s | %s |\n' "$name" "$value" "$(${local.awk} -F'\t' -v k="$name" '$1 == k { print $2 }' labels.tsv)"
      done < totals.tsv
      echo
      cat check.txt
    } > report.md
  SH
  outputs = { report = "report.md" }
}
