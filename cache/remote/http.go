package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dragonx/internal/redact"
	"dragonx/internal/safeio"
)

// HTTP is a Remote that speaks the Bazel HTTP remote-cache protocol: GET,
// HEAD and PUT of BASE/cas/<hex> and BASE/ac/<hex>. A hit is 200, a miss
// 404; a PUT is accepted with 200, 201 or 204. Bodies stream in both
// directions. Requests carry the credentials of Options.Auth, and https
// URLs use TLS with the system's certificates (plus Options.CAFile).
type HTTP struct {
	base    string // scheme://host[:port][/path], no credentials, no trailing slash
	client  *http.Client
	auth    func(*http.Request)
	timeout time.Duration
	retries int
	// sleep waits between retries; tests make it instant.
	sleep func(context.Context, time.Duration) error
}

func newHTTP(u *url.URL, opts Options) (*HTTP, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("remote: bad URL %s: no host", redact.ParsedURL(u))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("remote: bad URL %s: a remote URL has no query or fragment", redact.ParsedURL(u))
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	retries := opts.Retries
	switch {
	case retries == 0:
		retries = DefaultRetries
	case retries < 0:
		retries = 0
	}
	base := stripUser(u)
	auth, err := authorizer(opts.Auth, u.User, base)
	if err != nil {
		return nil, err
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if opts.CAFile != "" {
		pem, err := safeio.ReadFile(opts.CAFile, maxCredentials, safeio.Options{})
		if err != nil {
			return nil, fmt.Errorf("remote: certificate authority file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("remote: certificate authority file %s holds no PEM certificate", opts.CAFile)
		}
		tlsConf.RootCAs = pool
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: timeout,
		TLSClientConfig:     tlsConf,
		// The bytes must arrive as stored, to be checked against their
		// digest; and Content-Length must be theirs.
		DisableCompression: true,
	}
	return &HTTP{
		base:    base,
		client:  &http.Client{Transport: tr},
		auth:    auth,
		timeout: timeout,
		retries: retries,
		sleep:   sleepCtx,
	}, nil
}

// String implements Remote.
func (h *HTTP) String() string { return h.base }

// Get implements Remote.
func (h *HTTP) Get(ctx context.Context, a Area, name string) (io.ReadCloser, int64, error) {
	if err := checkEntry(a, name); err != nil {
		return nil, 0, err
	}
	resp, rs, err := h.do(ctx, http.MethodGet, a, name, 0, nil)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		defer rs.done()
		return nil, 0, h.statusError(http.MethodGet, a, name, resp)
	}
	return &respBody{rc: resp.Body, rs: rs, timeout: h.timeout, target: h.target(a, name)}, resp.ContentLength, nil
}

// Stat implements Remote with a HEAD request.
func (h *HTTP) Stat(ctx context.Context, a Area, name string) (int64, error) {
	if err := checkEntry(a, name); err != nil {
		return 0, err
	}
	resp, rs, err := h.do(ctx, http.MethodHead, a, name, 0, nil)
	if err != nil {
		return 0, err
	}
	defer rs.done()
	if resp.StatusCode != http.StatusOK {
		return 0, h.statusError(http.MethodHead, a, name, resp)
	}
	return resp.ContentLength, nil
}

// Put implements Remote.
func (h *HTTP) Put(ctx context.Context, a Area, name string, size int64, body Body) error {
	if err := checkEntry(a, name); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("remote: PUT %s: negative size %d", h.target(a, name), size)
	}
	resp, rs, err := h.do(ctx, http.MethodPut, a, name, size, body)
	if err != nil {
		return err
	}
	defer rs.done()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated, http.StatusNoContent:
		return nil
	}
	return h.statusError(http.MethodPut, a, name, resp)
}

func (h *HTTP) target(a Area, name string) string { return h.base + "/" + string(a) + "/" + name }

// reqState is a request in flight: its watchdog, and what ends it.
type reqState struct {
	wd   *watchdog
	resp *http.Response
	stop func()
}

// done closes the response body and stops the watchdog.
func (r *reqState) done() {
	if r.resp != nil {
		r.resp.Body.Close()
	}
	r.stop()
}

// do sends one request, retrying what may be transient. On success the
// response's body is open, and the caller must call the state's done.
func (h *HTTP) do(ctx context.Context, method string, a Area, name string, size int64, body Body) (*http.Response, *reqState, error) {
	target := h.target(a, name)
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := h.sleep(ctx, backoff(attempt)); err != nil {
				return nil, nil, err
			}
		}
		rctx, cancel := context.WithCancel(ctx)
		wd := newWatchdog(h.timeout, cancel)
		stop := func() {
			wd.stop()
			cancel()
		}
		var up *uploadReader
		var rd io.Reader
		if body != nil && size > 0 {
			b, err := body()
			if err != nil {
				stop()
				return nil, nil, &Error{Op: method, Target: target, Err: err}
			}
			// The server gets the last byte only after the body ended
			// cleanly at exactly size bytes: a body that fails, even at
			// its very end, is never completed on the server.
			up = &uploadReader{ctx: rctx, r: &holdback{r: &exactReader{r: b, size: size}}, c: b, wd: wd}
			rd = up
		}
		req, err := http.NewRequestWithContext(rctx, method, target, rd)
		if err != nil {
			stop()
			if up != nil {
				up.Close()
			}
			return nil, nil, &Error{Op: method, Target: target, Err: err}
		}
		if body != nil {
			req.ContentLength = size
			if size == 0 {
				req.Body = http.NoBody
			}
		}
		if h.auth != nil {
			h.auth(req)
		}
		resp, err := h.client.Do(req)
		if up != nil {
			// The transport closes the body; what matters is whether
			// reading it failed (a corrupt local blob, a disk error).
			if uerr := up.failure(); uerr != nil {
				if resp != nil {
					resp.Body.Close()
				}
				stop()
				return nil, nil, &Error{Op: method, Target: target, Err: uerr}
			}
		}
		if err != nil {
			stop()
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			if wd.fired() {
				return nil, nil, &Error{Op: method, Target: target, Err: fmt.Errorf("no progress for %s (timeout)", h.timeout), Kind: ErrUnavailable}
			}
			if attempt < h.retries {
				continue
			}
			return nil, nil, &Error{Op: method, Target: target, Err: unwrapURLError(err), Kind: ErrUnavailable}
		}
		if retryStatus(resp.StatusCode) && attempt < h.retries {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			stop()
			continue
		}
		return resp, &reqState{wd: wd, resp: resp, stop: stop}, nil
	}
}

// retryStatus reports whether an HTTP status may be transient.
func retryStatus(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return true
	case code >= 500 && code != http.StatusNotImplemented && code != http.StatusHTTPVersionNotSupported:
		return true
	}
	return false
}

// backoff is the wait before retry n (1, 2, ...): 100 ms, 400 ms, 1.6 s.
func backoff(n int) time.Duration {
	d := 100 * time.Millisecond
	for i := 1; i < n && d < 5*time.Second; i++ {
		d *= 4
	}
	return d
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// statusError turns an unexpected HTTP status into an error of the right
// kind, with the first line of the server's explanation and a hint where
// the cause is known.
func (h *HTTP) statusError(method string, a Area, name string, resp *http.Response) error {
	target := h.target(a, name)
	e := &Error{Op: method, Target: target}
	msg := resp.Status
	if method != http.MethodHead {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n"); line != "" && !strings.HasPrefix(line, "<") {
			msg += ": " + line
		}
	}
	code := resp.StatusCode
	switch {
	case code == http.StatusNotFound:
		e.Kind = ErrNotFound
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		e.Kind = ErrDenied
		msg += " (the server refused the credentials)"
	case retryStatus(code):
		e.Kind = ErrUnavailable
	case code == http.StatusRequestEntityTooLarge:
		msg += " (the server limits upload sizes; for nginx set client_max_body_size 0)"
	case code == http.StatusBadRequest && method == http.MethodPut && a == AC:
		msg += " (a bazel-remote server refuses dragonx manifests unless started with --disable_http_ac_validation)"
	case code == http.StatusMethodNotAllowed && method == http.MethodPut:
		msg += " (the server does not accept uploads; for nginx enable dav_methods PUT)"
	}
	e.Err = errors.New(msg)
	return e
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the
// method and URL that Error already gives.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// watchdog cancels a request that makes no progress for a while: it fires
// unless kicked within d of its start or of the last kick.
type watchdog struct {
	d    time.Duration
	t    *time.Timer
	fire atomic.Bool
}

func newWatchdog(d time.Duration, cancel func()) *watchdog {
	w := &watchdog{d: d}
	w.t = time.AfterFunc(d, func() {
		w.fire.Store(true)
		cancel()
	})
	return w
}

func (w *watchdog) kick()       { w.t.Reset(w.d) }
func (w *watchdog) stop()       { w.t.Stop() }
func (w *watchdog) fired() bool { return w.fire.Load() }

// uploadReader is a request body that kicks the watchdog as the transport
// reads it and remembers whether reading it failed.
type uploadReader struct {
	// ctx is the request's: once it is done (cancelled, or the watchdog
	// fired) no more bytes go out, so that the server never gets the whole
	// body of a request the caller gave up on. The transport notices a
	// cancellation only between writes; on a busy machine it could send
	// the rest of the body first, and the server would store it.
	ctx context.Context
	r   io.Reader
	c   io.Closer
	wd  *watchdog

	mu  sync.Mutex
	err error
}

func (u *uploadReader) Read(p []byte) (int, error) {
	if err := u.ctx.Err(); err != nil {
		return 0, err // not a failure of the body: Put reports the context's error
	}
	n, err := u.r.Read(p)
	if n > 0 {
		u.wd.kick()
	}
	if err != nil && err != io.EOF {
		u.mu.Lock()
		u.err = err
		u.mu.Unlock()
	}
	return n, err
}

func (u *uploadReader) Close() error { return u.c.Close() }

func (u *uploadReader) failure() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// respBody is a response body that kicks the watchdog as bytes arrive and
// reports a stall or a broken connection as ErrUnavailable.
type respBody struct {
	rc      io.ReadCloser
	rs      *reqState
	timeout time.Duration
	target  string
	once    sync.Once
}

func (r *respBody) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if n > 0 {
		r.rs.wd.kick()
	}
	if err != nil && err != io.EOF {
		fired := r.rs.wd.fired()
		if errors.Is(err, context.Canceled) && !fired {
			return n, err // the caller cancelled
		}
		cause := err
		if fired {
			cause = fmt.Errorf("no progress for %s (timeout)", r.timeout)
		}
		return n, &Error{Op: http.MethodGet, Target: r.target, Err: cause, Kind: ErrUnavailable}
	}
	return n, err
}

func (r *respBody) Close() error {
	r.once.Do(r.rs.done)
	return nil
}
