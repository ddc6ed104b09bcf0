package remote

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strings"

	"dragonx/internal/redact"
	"dragonx/internal/safeio"
)

// Auth says how an HTTP remote authenticates. One kind of credentials is
// used, the first of: a user (and password) in the remote's URL, Token,
// User and Password, the credentials file's entry for the URL. With none,
// requests carry no Authorization header.
type Auth struct {
	// Token is sent as "Authorization: Bearer TOKEN".
	Token string
	// User and Password are sent as HTTP basic authentication.
	User, Password string
	// CredentialsFile names a credentials file (see ParseCredentials). A
	// missing file is not an error; one that others may read is, as with
	// ssh keys.
	CredentialsFile string
}

// Credential is one entry of a credentials file: how to authenticate to
// the remotes whose URL starts with Prefix.
type Credential struct {
	Prefix   string
	Token    string // bearer
	User     string // basic
	Password string
}

// ParseCredentials parses a credentials file: one remote per line, blank
// lines and lines starting with # ignored,
//
//	https://cache.example.com/dragonx  bearer  TOKEN
//	https://cache.internal:8443        basic   USER  PASSWORD
//
// The first field is a URL prefix; a remote's URL matches it if it equals
// the prefix or continues it at a "/"; the longest match wins. Fields are
// separated by spaces or tabs, so a token or password cannot contain them.
// Errors name the line but never echo a secret.
func ParseCredentials(b []byte) ([]Credential, error) {
	var out []Credential
	var errs []error
	seen := map[string]int{}
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("line %d: %s", n, fmt.Sprintf(format, args...)))
		}
		u, err := url.Parse(f[0])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			bad("the first field must be an http:// or https:// URL without credentials in it")
			continue
		}
		prefix := strings.TrimSuffix(f[0], "/")
		if first, dup := seen[prefix]; dup {
			bad("a second entry for %s (the first is on line %d)", redact.URL(prefix), first)
			continue
		}
		if len(f) < 2 {
			bad("missing the kind after the URL: bearer TOKEN or basic USER PASSWORD")
			continue
		}
		c := Credential{Prefix: prefix}
		switch f[1] {
		case "bearer":
			if len(f) != 3 {
				bad("want URL bearer TOKEN (3 fields), got %d fields", len(f))
				continue
			}
			c.Token = f[2]
		case "basic":
			if len(f) != 4 {
				bad("want URL basic USER PASSWORD (4 fields), got %d fields", len(f))
				continue
			}
			c.User, c.Password = f[2], f[3]
		default:
			bad("the second field is not bearer or basic (it is not shown: a secret may be in the wrong place)")
			continue
		}
		seen[prefix] = n
		out = append(out, c)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("remote: credentials: %w", errors.Join(errs...))
	}
	return out, nil
}

// match returns the credential with the longest prefix that u (without a
// trailing slash) equals or continues at a "/".
func match(creds []Credential, u string) (Credential, bool) {
	var best Credential
	found := false
	for _, c := range creds {
		if u == c.Prefix || strings.HasPrefix(u, c.Prefix+"/") {
			if !found || len(c.Prefix) > len(best.Prefix) {
				best, found = c, true
			}
		}
	}
	return best, found
}

// maxCredentials bounds a credentials file; real ones are a few lines.
const maxCredentials = 1 << 20

// loadCredentials reads the credentials file at path (nil if there is none).
func loadCredentials(path string) ([]Credential, error) {
	if path == "" {
		return nil, nil
	}
	f, info, err := safeio.Open(path, safeio.Options{})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remote: credentials file: %w", err)
	}
	defer f.Close()
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("remote: credentials file %s may be read by others (mode %v); chmod 600 %s", path, info.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCredentials+1))
	if err != nil {
		return nil, fmt.Errorf("remote: credentials file: %w", err)
	}
	if len(b) > maxCredentials {
		return nil, fmt.Errorf("remote: credentials file %s is larger than the limit of %s", path, safeio.FormatSize(maxCredentials))
	}
	creds, err := ParseCredentials(b)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return creds, nil
}

// authorizer returns the function that adds credentials to a request for
// the remote at u (u.User already removed into user), or nil for none.
func authorizer(a Auth, user *url.Userinfo, base string) (func(*http.Request), error) {
	if user != nil {
		name := user.Username()
		pass, _ := user.Password()
		return func(r *http.Request) { r.SetBasicAuth(name, pass) }, nil
	}
	if a.Token != "" {
		h := "Bearer " + a.Token
		return func(r *http.Request) { r.Header.Set("Authorization", h) }, nil
	}
	if a.User != "" {
		return func(r *http.Request) { r.SetBasicAuth(a.User, a.Password) }, nil
	}
	creds, err := loadCredentials(a.CredentialsFile)
	if err != nil {
		return nil, err
	}
	if c, ok := match(creds, base); ok {
		if c.Token != "" {
			h := "Bearer " + c.Token
			return func(r *http.Request) { r.Header.Set("Authorization", h) }, nil
		}
		return func(r *http.Request) { r.SetBasicAuth(c.User, c.Password) }, nil
	}
	return nil, nil
}
