locals {
  a = local.b # ERROR: Dependency cycle between local values
  b = local.a
  c = local.nope # ERROR: Reference to undeclared local value
}
