package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain makes the test binary double as the dragonx command inside the
// scripts (testscript.Main puts it on PATH as "dragonx").
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"dragonx": func() { os.Exit(mainWithArgs(os.Args[1:])) },
	})
}

// TestScripts runs the end-to-end scripts in testdata/script: real
// experiments run by the real CLI against a real cache in $WORK/cache.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("DRAGONX_UPDATE_SCRIPTS") == "1",
		Setup: func(env *testscript.Env) error {
			env.Setenv("DRAGONX_CACHE", filepath.Join(env.WorkDir, "cache"))
			env.Setenv("HOME", env.WorkDir)
			env.Values[nginxKey{}] = &nginxState{}
			return nil
		},
		Condition: scriptCondition,
		Cmds:      withCacheCmds(scriptCmds()),
	})
}
