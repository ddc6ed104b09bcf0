// Package all imports every stage kind so that they register themselves.
// Import it for its side effect: _ "dragonx/stages/all".
package all

import (
	_ "dragonx/stages/exec" // kind "exec"
	_ "dragonx/stages/sft"  // kind "sft"
)
