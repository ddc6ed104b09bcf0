package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"dragonx/cache"
	"dragonx/cache/remote"
	"dragonx/internal/humanize"
	"dragonx/internal/progress"
	"dragonx/internal/redact"
	"dragonx/stages"
)

// remoteHelp documents the remote settings; run, plan and cache include it.
const remoteHelp = `REMOTE CACHE
  A remote cache shares stage results within a team: a server speaking the Bazel
  HTTP remote-cache protocol (http:// or https://: bazel-remote, nginx with WebDAV)
  or a directory on a shared file system (file:///path). The remote is the first
  of:
    -remote URL                     the flag (-remote off: no remote)
    $DRAGONX_REMOTE                 the environment (off: no remote)
    cache { remote = "URL" }        the experiment file
  Pushing is -push, else $DRAGONX_REMOTE_PUSH=1. Other settings, from the environment:
    DRAGONX_REMOTE_TOKEN            bearer token
    DRAGONX_REMOTE_USER, DRAGONX_REMOTE_PASSWORD
                                    basic authentication
    DRAGONX_REMOTE_CREDENTIALS      credentials file (default
                                    ~/.config/dragonx/credentials): lines
                                    "URL bearer TOKEN" or "URL basic USER PASSWORD"
    DRAGONX_REMOTE_CA               PEM file of a certificate authority to trust
    DRAGONX_REMOTE_TIMEOUT          how long a request may make no progress (30s)
    DRAGONX_REMOTE_RETRIES          retries of transient failures (2)
    DRAGONX_REMOTE_JOBS             transfers at once (8)
  A user and password in the URL (https://user:pass@host/) win over the rest.
  docs/remote-cache.md describes the protocol and the layout.
`

// remoteFlags are the flags of the commands that use a remote cache.
type remoteFlags struct {
	url  string
	push optBool
}

func (f *remoteFlags) register(fs *flag.FlagSet, withPush bool) {
	fs.StringVar(&f.url, "remote", "", "remote cache `URL`: http://, https:// or file:///path; off for none (default $DRAGONX_REMOTE, else the experiment's cache block)")
	if withPush {
		fs.Var(&f.push, "push", "write every stage's result through to the remote cache (default $DRAGONX_REMOTE_PUSH)")
	}
}

// optBool is a boolean flag that knows whether it was given.
type optBool struct {
	set, v bool
}

func (b *optBool) String() string { return strconv.FormatBool(b.v) }
func (b *optBool) IsBoolFlag() bool {
	return true
}
func (b *optBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.set, b.v = true, v
	return nil
}

// remoteURL resolves the remote for an experiment (cfg may be nil): the
// flag, else $DRAGONX_REMOTE, else the experiment's cache block; "" for
// none. It also says where the setting came from.
func remoteURL(e *env, f *remoteFlags, cfg *stages.Config) (url, from string) {
	switch {
	case f.url != "":
		url, from = f.url, "-remote"
	case e.getenv("DRAGONX_REMOTE") != "":
		url, from = e.getenv("DRAGONX_REMOTE"), "$DRAGONX_REMOTE"
	case cfg != nil && cfg.Cache != nil && cfg.Cache.Remote != "":
		url, from = cfg.Cache.Remote, "the cache block at "+cfg.Cache.DeclRange.String()
	}
	if off := strings.ToLower(strings.TrimSpace(url)); off == "off" || off == "none" {
		return "", from
	}
	return url, from
}

// pushWanted resolves -push, else $DRAGONX_REMOTE_PUSH.
func pushWanted(e *env, f *remoteFlags) (bool, error) {
	if f.push.set {
		return f.push.v, nil
	}
	v := e.getenv("DRAGONX_REMOTE_PUSH")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("DRAGONX_REMOTE_PUSH=%q: want 1 or 0", v)
	}
	return b, nil
}

// remoteOptions reads the remote settings from the environment.
func remoteOptions(e *env) (remote.Options, remote.ClientOptions, error) {
	var o remote.Options
	var co remote.ClientOptions
	o.Auth = remote.Auth{
		Token:           e.getenv("DRAGONX_REMOTE_TOKEN"),
		User:            e.getenv("DRAGONX_REMOTE_USER"),
		Password:        e.getenv("DRAGONX_REMOTE_PASSWORD"),
		CredentialsFile: e.getenv("DRAGONX_REMOTE_CREDENTIALS"),
	}
	if o.Auth.CredentialsFile == "" {
		o.Auth.CredentialsFile = defaultCredentials(e)
	}
	o.CAFile = e.getenv("DRAGONX_REMOTE_CA")
	if v := e.getenv("DRAGONX_REMOTE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, co, fmt.Errorf("DRAGONX_REMOTE_TIMEOUT=%q: want a duration such as 30s", v)
		}
		o.Timeout = d
	}
	if v := e.getenv("DRAGONX_REMOTE_RETRIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return o, co, fmt.Errorf("DRAGONX_REMOTE_RETRIES=%q: want a count such as 2", v)
		}
		o.Retries = n
		if n == 0 {
			o.Retries = -1
		}
	}
	if v := e.getenv("DRAGONX_REMOTE_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return o, co, fmt.Errorf("DRAGONX_REMOTE_JOBS=%q: want a count such as 8", v)
		}
		co.Jobs = n
	}
	return o, co, nil
}

// defaultCredentials is $XDG_CONFIG_HOME/dragonx/credentials, else
// ~/.config/dragonx/credentials.
func defaultCredentials(e *env) string {
	if d := e.getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "dragonx", "credentials")
	}
	home := e.getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		home = h
	}
	return filepath.Join(home, ".config", "dragonx", "credentials")
}

// openRemote opens the client for the remote at url over store. Opening
// contacts nothing; an error is a mistake in the settings.
func openRemote(e *env, url string, store cache.Store, p progress.Reporter) (*remote.Client, error) {
	o, co, err := remoteOptions(e)
	if err != nil {
		return nil, err
	}
	r, err := remote.Open(url, o)
	if err != nil {
		return nil, err
	}
	co.Progress = p
	return remote.NewClient(r, store, co), nil
}

// warner returns where the engine's warnings go: the text UI, or standard
// error under -json.
func warner(e *env, ui *textUI) func(string) {
	if ui != nil {
		return ui.Warn
	}
	return func(msg string) { fmt.Fprintf(e.stderr, "dragonx: warning: %s\n", redact.Text(msg)) }
}

// remoteSummary is the line that says what a run moved.
func remoteSummary(c *remote.Client, push bool) string {
	s := c.Stats()
	line := fmt.Sprintf("dragonx: remote %s: pulled %d stage run%s (%s)", c, s.Pulled, plural(s.Pulled), humanize.Bytes(s.BytesDown))
	if push {
		line += fmt.Sprintf(", pushed %d (%s)", s.Pushed, humanize.Bytes(s.BytesUp))
	}
	return line
}
