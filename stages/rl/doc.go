// Package rl is the `rl` stage kind: GRPO (package dragon/grpo) on the
// sft stage's model with a correctness-gated latency reward, the reward a
// block of the stage (reward.go). docs/pipeline.md (## rl) describes the
// block, the inputs and the outputs.
package rl

import "github.com/hashicorp/hcl/v2"

func diag(summary, detail string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
}
