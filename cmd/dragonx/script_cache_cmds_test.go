package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"

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
		n := editManifests(ts, args[0], args[1], func(m *cache.Manifest) {
			if _, ok := m.Outputs[args[2]]; !ok {
				ts.Fatalf("the manifest of %s has no output %q", args[1], args[2])
			}
			delete(m.Outputs, args[2])
		})
		fmt.Fprintf(ts.Stdout(), "dropped %s from %d manifest(s)\n", args[2], n)
	}
	// renamestage DIR STAGE NAME: rewrite the manifests of STAGE in the
	// cache DIR under the stage name NAME, a Go string literal (so that a
	// script can write escape sequences: "stage.x\x1b[2J").
	out["renamestage"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 3 || neg {
			ts.Fatalf("usage: renamestage DIR STAGE NAME")
		}
		name, err := strconv.Unquote(args[2])
		ts.Check(err)
		n := editManifests(ts, args[0], args[1], func(m *cache.Manifest) { m.Stage = name })
		fmt.Fprintf(ts.Stdout(), "renamed %d manifest(s)\n", n)
	}
	// truncatefile FILE N: cut FILE to its first N bytes.
	out["truncatefile"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 || neg {
			ts.Fatalf("usage: truncatefile FILE N")
		}
		n, err := strconv.ParseInt(args[1], 10, 64)
		ts.Check(err)
		ts.Check(os.Truncate(ts.MkAbs(args[0]), n))
	}
	return out
}

// editManifests applies edit to every manifest of stage in the cache dir
// and stores it again; it returns how many it edited (at least one).
func editManifests(ts *testscript.TestScript, dir, stage string, edit func(m *cache.Manifest)) int {
	ctx := context.Background()
	s, err := cache.Open(ctx, ts.MkAbs(dir), cache.Options{LockTimeout: -1})
	ts.Check(err)
	defer s.Close()
	var ms []*cache.Manifest
	ts.Check(s.Manifests(ctx, func(m *cache.Manifest) error {
		if m.Stage == stage {
			ms = append(ms, m)
		}
		return nil
	}))
	if len(ms) == 0 {
		ts.Fatalf("no manifest of %s", stage)
	}
	for _, m := range ms {
		edit(m)
		ts.Check(s.PutManifest(ctx, m))
	}
	ts.Check(s.Close())
	return len(ms)
}
