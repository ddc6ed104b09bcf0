// Package redact removes secrets from text that dragonx prints or writes:
// the password or token in a remote cache's URL. Every printer of a URL
// or of a command line that may hold one (errors, warnings, progress, the
// lock file's record of its holder) goes through it.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "REDACTED"

// URL returns u fit to print: the user information (user and password,
// since a user name alone is often a token) replaced by Mask, every query
// value replaced by Mask, and no fragment. A string that does not parse
// as a URL is never echoed beyond its scheme and host.
func URL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Opaque != "" {
		return unparsable(u)
	}
	return format(p)
}

// format is URL for a parsed URL.
func format(p *url.URL) string {
	c := *p
	if c.User != nil {
		c.User = url.User(Mask)
	}
	if c.RawQuery != "" {
		q := c.Query()
		for k, vs := range q {
			for i := range vs {
				vs[i] = Mask
			}
			q[k] = vs
		}
		c.RawQuery = q.Encode()
		if c.RawQuery == "" {
			// A query that does not parse into values: drop it whole.
			c.RawQuery = Mask
		}
	}
	c.Fragment, c.RawFragment = "", ""
	c.ForceQuery = false
	return c.String()
}

// ParsedURL is URL for a parsed URL.
func ParsedURL(p *url.URL) string {
	if p == nil {
		return ""
	}
	return format(p)
}

// schemeRE matches a URL scheme at the start of a string.
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// unparsable describes a string that is not a valid URL by its scheme and
// host only: "https://host/... (not a valid URL)".
func unparsable(u string) string {
	scheme := schemeRE.FindString(u)
	if scheme == "" {
		return "(not a valid URL)"
	}
	rest := u[len(scheme):]
	if !strings.HasPrefix(rest, "//") {
		return scheme + "... (not a valid URL)"
	}
	rest = rest[2:]
	// The host follows the last "@": a password may hold any of "/?#",
	// so the authority cannot be cut at them first.
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[at+1:]
	}
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	host := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, rest)
	return scheme + "//" + host + "/... (not a valid URL)"
}

// urlRE finds URL-like words in free text: a scheme and "//" then
// everything up to a space or a quote.
var urlRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]*`)

// Text returns s with every URL in it passed through URL.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlRE.ReplaceAllStringFunc(s, URL)
}

// Args returns a command line fit to print or record: every argument with
// a URL in it ("https://u:p@host", "-remote=https://u:p@host") passed
// through Text. The secret-bearing environment is not part of it.
func Args(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = Text(a)
	}
	return out
}
