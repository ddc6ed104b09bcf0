// Package all imports every stage kind so that they register themselves.
// Import it for its side effect: _ "dragonx/stages/all".
package all

import (
	_ "dragonx/stages/analysis"  // kind "analysis"
	_ "dragonx/stages/bench"     // kind "bench"
	_ "dragonx/stages/encode"    // kind "encode"
	_ "dragonx/stages/exec"      // kind "exec"
	_ "dragonx/stages/harvest"   // kind "harvest"
	_ "dragonx/stages/netbench"  // kind "netbench"
	_ "dragonx/stages/rl"        // kind "rl"
	_ "dragonx/stages/sft"       // kind "sft"
	_ "dragonx/stages/workloads" // kind "workloads"
)
