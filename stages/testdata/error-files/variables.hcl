variable "n" {
  type    = number
  default = "many" # ERROR: Invalid default value for variable
}

variable "m" { # ERROR: No value for required variable
  type = number
}

variable "n" { # ERROR: Duplicate variable
  default = 1
}
