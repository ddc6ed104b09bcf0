package main

import (
	"context"
	"fmt"
	"maps"

	"github.com/rogpeppe/go-internal/testscript"

	"dragonx/cache"
)

// withCacheCmds adds the commands that damage a cache the way an attacker
// or a bug would to the scripts' commands.
func withCacheCmds(cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	out := maps.Clone(cmds)
	// dropoutput DIR STAGE OUTPUT: rewrite the manifests of STAGE in the
	// cache DIR without OUTPUT (a damaged or crafted entry under the
	// stage's real key).
	out["dropoutput"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 3 || neg {
			ts.Fatalf("usage: dropoutput DIR STAGE OUTPUT")
		}
		ctx := context.Background()
		s, err := cache.Open(ctx, ts.MkAbs(args[0]), cache.Options{LockTimeout: -1})
		ts.Check(err)
		defer s.Close()
		var ms []*cache.Manifest
		ts.Check(s.Manifests(ctx, func(m *cache.Manifest) error {
			if m.Stage == args[1] {
				ms = append(ms, m)
			}
			return nil
		}))
		for _, m := range ms {
			if _, ok := m.Outputs[args[2]]; !ok {
				ts.Fatalf("the manifest of %s has no output %q", args[1], args[2])
			}
			delete(m.Outputs, args[2])
			ts.Check(s.PutManifest(ctx, m))
		}
		if len(ms) == 0 {
			ts.Fatalf("no manifest of %s", args[1])
		}
		ts.Check(s.Close())
		fmt.Fprintf(ts.Stdout(), "dropped %s from %d manifest(s)\n", args[2], len(ms))
	}
	return out
}
