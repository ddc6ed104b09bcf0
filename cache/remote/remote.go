package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"dragonx/internal/redact"
)

// Area is one of the two namespaces of the remote cache protocol.
type Area string

// The areas. Their names are the first element of an entry's path on the
// wire (/cas/<hex>, /ac/<hex>) and the directory that holds it in a Dir.
const (
	// CAS holds blobs under the SHA-256 of their bytes.
	CAS Area = "cas"
	// AC holds stage manifests under the stage key (what Bazel calls the
	// action cache).
	AC Area = "ac"
)

// Remote is a remote cache: entries named by 64 lowercase hex digits in
// two areas. It moves bytes only; Client gives them meaning (digests,
// manifests) and verifies them. Implementations are safe for concurrent
// use, and a Put is atomic: a concurrent or later Get sees the whole entry
// or none of it, whatever other writers do at the same time.
type Remote interface {
	// Get opens entry name of area a and returns a reader of its bytes and
	// their size (-1 when the server does not say). An absent entry is an
	// error matching ErrNotFound. The caller closes the reader.
	Get(ctx context.Context, a Area, name string) (io.ReadCloser, int64, error)
	// Stat returns the size of an entry (-1 when the server does not say),
	// or an error matching ErrNotFound.
	Stat(ctx context.Context, a Area, name string) (int64, error)
	// Put stores the size bytes that body returns under name. It stores
	// nothing unless the reader yields exactly size bytes and then io.EOF:
	// a reader that fails, even at its very end (a local blob that fails
	// verification), leaves no entry. Put may call body more than once (to
	// retry); each reader must return the same bytes. Replacing an entry is
	// allowed (the bytes are the same, or the old ones were bad).
	Put(ctx context.Context, a Area, name string, size int64, body Body) error
	// String returns the remote's location for messages, without
	// credentials.
	String() string
}

// Body opens the bytes of an upload.
type Body func() (io.ReadCloser, error)

// BytesBody is a Body of b.
func BytesBody(b []byte) Body {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

// ErrNotFound is matched by the error of Get or Stat for an absent entry.
var ErrNotFound = errors.New("remote: not found")

// ErrUnavailable is matched by errors that mean the remote cannot be used
// now: it is unreachable, too slow (no progress within the timeout), or
// failing (5xx after retries), or a shared directory is not there.
var ErrUnavailable = errors.New("remote: unavailable")

// ErrDenied is matched by errors that mean the remote refused the
// credentials (HTTP 401 or 403), or the directory refused access.
var ErrDenied = errors.New("remote: access denied")

// Error is a failed remote operation.
type Error struct {
	Op     string // "GET", "PUT", "HEAD", "open", ...
	Target string // the entry's location, without credentials
	Err    error
	// Kind is ErrNotFound, ErrUnavailable, ErrDenied or nil (another
	// failure: the server refused the request, a local I/O error).
	Kind error
}

func (e *Error) Error() string {
	return fmt.Sprintf("remote: %s %s: %v", e.Op, e.Target, e.Err)
}

// Unwrap returns the cause and the kind, for errors.Is.
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// Options configure a remote opened by Open. The zero value is usable.
type Options struct {
	// Timeout is how long a request may make no progress (connecting,
	// waiting for an answer, or moving no byte) before it fails with
	// ErrUnavailable. 0 means DefaultTimeout. A timeout is not retried: a
	// slow server would only be waited for again.
	Timeout time.Duration
	// Retries is how many times a request that failed in a way that may be
	// transient (connection refused or reset, HTTP 5xx, 429) is tried again,
	// after 100 ms, then 4 times as long each time. 0 means DefaultRetries;
	// negative means none.
	Retries int
	// Auth holds HTTP credentials; see Auth.
	Auth Auth
	// CAFile names a PEM file of certificates to trust for https, besides
	// the system's (a team's private certificate authority).
	CAFile string
}

// DefaultTimeout is the default Options.Timeout: long enough for a server
// under load to answer, short enough that a dead one costs a run little.
const DefaultTimeout = 30 * time.Second

// DefaultRetries is the default Options.Retries: three tries in all, over
// about half a second, ride out a restarting server or a dropped connection.
const DefaultRetries = 2

// Open returns the remote at the URL u: http:// or https:// for a server
// speaking the Bazel HTTP remote-cache protocol (entries at u/cas/<hex> and
// u/ac/<hex>), file:///path for a directory on a shared file system.
// Opening contacts nothing; the first request does.
func Open(u string, opts Options) (Remote, error) {
	p, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("remote: bad URL %s: %s", Redact(u), parseProblem(err))
	}
	switch p.Scheme {
	case "http", "https":
		return newHTTP(p, opts)
	case "file":
		if p.Host != "" && p.Host != "localhost" {
			return nil, fmt.Errorf("remote: bad URL %s: a file URL names a local path, file:///path (three slashes)", Redact(u))
		}
		if p.Path == "" || !filepath.IsAbs(filepath.FromSlash(p.Path)) {
			return nil, fmt.Errorf("remote: bad URL %s: a file URL needs an absolute path, file:///path", Redact(u))
		}
		return NewDir(filepath.FromSlash(p.Path)), nil
	case "":
		return nil, fmt.Errorf("remote: bad URL %s: want http://, https:// or file:///", Redact(u))
	}
	return nil, fmt.Errorf("remote: unsupported URL scheme %q in %s: want http, https or file", p.Scheme, Redact(u))
}

// validName reports whether name is 64 lowercase hex digits, the only
// names the protocol has.
func validName(name string) bool {
	if len(name) != 64 {
		return false
	}
	for _, c := range name {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func checkEntry(a Area, name string) error {
	if a != CAS && a != AC {
		return fmt.Errorf("remote: unknown area %q", a)
	}
	if !validName(name) {
		return fmt.Errorf("remote: bad entry name %q: want 64 lowercase hex digits", name)
	}
	return nil
}

// Redact returns the URL u fit to print: no user, password or query
// values, and nothing but the scheme and host of a string that does not
// parse. Every message that names a remote goes through it (or through
// Remote.String, which never holds credentials).
func Redact(u string) string { return redact.URL(u) }

// quotedRE matches a quoted part of an error message.
var quotedRE = regexp.MustCompile(`\s*"[^"]*"`)

// parseProblem says what is wrong with a URL that does not parse, without
// the parts of it that net/url quotes (they may be a piece of a password).
func parseProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return quotedRE.ReplaceAllString(err.Error(), "")
}

// stripUser returns u without credentials: the base of requests.
func stripUser(u *url.URL) string {
	c := *u
	c.User = nil
	return strings.TrimSuffix(c.String(), "/")
}
