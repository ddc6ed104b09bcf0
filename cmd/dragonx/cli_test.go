package main

import (
	"bytes"
	"context"
)

// runCLI runs dragonx in-process with args and returns its exit code and
// output.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code = dispatch(context.Background(), e, args)
	return code, out.String(), errb.String()
}
