package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the dragonx release; the build's VCS revision is added when known.
const version = "0.1.0-dev"

var cmdVersion = &command{
	name:  "version",
	usage: "version",
	short: "print the dragonx version, Go version and build settings",
	run:   runVersion,
}

func runVersion(ctx context.Context, e *env, args []string) error {
	rest, err := parseFlags(newFlagSet("version"), args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("version takes no arguments")
	}
	fmt.Fprintf(e.stdout, "dragonx %s (%s, %s/%s)\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, f := range buildFeatures() {
		fmt.Fprintf(e.stdout, "  %s\n", f)
	}
	return nil
}

// versionString is the release plus the VCS revision when the binary knows it.
func versionString() string {
	v := version
	if info, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			v += "+" + rev
			if dirty {
				v += "-dirty"
			}
		}
	}
	return v
}
