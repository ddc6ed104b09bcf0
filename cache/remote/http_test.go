package remote_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/cache/remote"
	"dragonx/cache/remote/remotetest"
)

// fakeServer is a minimal Bazel HTTP remote cache in memory, with hooks
// for faults.
type fakeServer struct {
	mu      sync.Mutex
	entries map[string][]byte
	// before, when set, may answer a request itself (returning true).
	before   func(w http.ResponseWriter, r *http.Request) bool
	requests atomic.Int64
	inFlight atomic.Int64
	maxInFl  atomic.Int64
	delay    time.Duration
}

func newFakeServer() *fakeServer { return &fakeServer{entries: map[string][]byte{}} }

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxInFl.Load()
		if n <= m || f.maxInFl.CompareAndSwap(m, n) {
			break
		}
	}
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if f.before != nil && f.before(w, r) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		b, ok := f.entries[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if r.Method == http.MethodGet {
			w.Write(b)
		}
	case http.MethodPut:
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.entries[r.URL.Path] = b
		w.WriteHeader(http.StatusCreated)
	default:
		http.Error(w, "no", http.StatusMethodNotAllowed)
	}
}

var name0 = remotetest.Name([]byte("x"))

func TestHTTPRetries(t *testing.T) {
	f := newFakeServer()
	failures := atomic.Int64{}
	failures.Store(2)
	f.before = func(w http.ResponseWriter, r *http.Request) bool {
		if failures.Add(-1) >= 0 {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := remote.Open(srv.URL, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Put(ctx, remote.CAS, name0, 1, remote.BytesBody([]byte("x"))); err != nil {
		t.Fatalf("Put after two 503s = %v, want success on the third try", err)
	}
	if n := f.requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	// Always failing: three tries, then ErrUnavailable.
	failures.Store(100)
	f.requests.Store(0)
	_, err = r.Stat(ctx, remote.CAS, name0)
	if !errors.Is(err, remote.ErrUnavailable) || !strings.Contains(err.Error(), "503") {
		t.Errorf("Stat against a failing server = %v, want ErrUnavailable naming the status", err)
	}
	if n := f.requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (DefaultRetries 2)", n)
	}
	// Retries -1: one try.
	r1, _ := remote.Open(srv.URL, remote.Options{Retries: -1})
	f.requests.Store(0)
	r1.Stat(ctx, remote.CAS, name0)
	if n := f.requests.Load(); n != 1 {
		t.Errorf("Retries -1: %d requests, want 1", n)
	}
	// A refused connection is retried too, and is unavailable.
	srv.Close()
	start := time.Now()
	_, err = r.Stat(ctx, remote.CAS, name0)
	if !errors.Is(err, remote.ErrUnavailable) {
		t.Errorf("Stat of a closed server = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 5*time.Second {
		t.Errorf("two retries with backoff took %v, want about 0.5 s", d)
	}
}

func TestHTTPStatuses(t *testing.T) {
	f := newFakeServer()
	var status atomic.Int64
	f.before = func(w http.ResponseWriter, r *http.Request) bool {
		if s := int(status.Load()); s != 0 {
			http.Error(w, "some explanation\nsecond line", s)
			return true
		}
		return false
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, _ := remote.Open(srv.URL+"/team/", remote.Options{Retries: -1})
	ctx := context.Background()
	for _, c := range []struct {
		status int
		area   remote.Area
		kind   error
		says   string
	}{
		{http.StatusUnauthorized, remote.CAS, remote.ErrDenied, "refused the credentials"},
		{http.StatusForbidden, remote.CAS, remote.ErrDenied, "403"},
		{http.StatusRequestEntityTooLarge, remote.CAS, nil, "client_max_body_size 0"},
		{http.StatusBadRequest, remote.AC, nil, "--disable_http_ac_validation"},
		{http.StatusMethodNotAllowed, remote.CAS, nil, "dav_methods PUT"},
		{http.StatusInternalServerError, remote.CAS, remote.ErrUnavailable, "some explanation"},
	} {
		status.Store(int64(c.status))
		err := r.Put(ctx, c.area, name0, 1, remote.BytesBody([]byte("x")))
		if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "/team/"+string(c.area)+"/"+name0) {
			t.Errorf("PUT answered %d: %v; want it to say %q and name the URL", c.status, err, c.says)
		}
		if c.kind != nil && !errors.Is(err, c.kind) {
			t.Errorf("PUT answered %d: %v; want it to match %v", c.status, err, c.kind)
		}
		if c.kind == nil && (errors.Is(err, remote.ErrUnavailable) || errors.Is(err, remote.ErrNotFound)) {
			t.Errorf("PUT answered %d: %v is of the wrong kind", c.status, err)
		}
	}
}

func TestHTTPAuth(t *testing.T) {
	f := newFakeServer()
	var mu sync.Mutex
	var got []string
	f.before = func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		return false
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	os.WriteFile(creds, []byte("# team caches\n"+srv.URL+"/a bearer filetoken\n"+srv.URL+"/a/b basic fuser fpass\n"), 0o600)
	basic := func(u, p string) string {
		r, _ := http.NewRequest("GET", "/", nil)
		r.SetBasicAuth(u, p)
		return r.Header.Get("Authorization")
	}
	cases := []struct {
		name string
		url  string
		auth remote.Auth
		want string
	}{
		{"none", srv.URL, remote.Auth{}, ""},
		{"token", srv.URL, remote.Auth{Token: "tok", User: "u", CredentialsFile: creds}, "Bearer tok"},
		{"basic", srv.URL, remote.Auth{User: "u", Password: "p"}, basic("u", "p")},
		{"url wins", strings.Replace(srv.URL, "http://", "http://uu:pp@", 1), remote.Auth{Token: "tok"}, basic("uu", "pp")},
		{"file", srv.URL + "/a", remote.Auth{CredentialsFile: creds}, "Bearer filetoken"},
		{"file longest prefix", srv.URL + "/a/b/c", remote.Auth{CredentialsFile: creds}, basic("fuser", "fpass")},
		{"file no match", srv.URL + "/ab", remote.Auth{CredentialsFile: creds}, ""},
		{"file missing", srv.URL, remote.Auth{CredentialsFile: filepath.Join(dir, "none")}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := remote.Open(c.url, remote.Options{Auth: c.auth})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			got = nil
			mu.Unlock()
			r.Stat(context.Background(), remote.CAS, name0)
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 || got[0] != c.want {
				t.Errorf("Authorization = %q, want %q", got, c.want)
			}
			if strings.Contains(r.String(), "pp@") {
				t.Errorf("String() = %q shows the password", r.String())
			}
		})
	}
	os.Chmod(creds, 0o644)
	if _, err := remote.Open(srv.URL, remote.Options{Auth: remote.Auth{CredentialsFile: creds}}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a credentials file others may read: %v, want an error that says chmod 600", err)
	}
}

func TestParseCredentials(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    []remote.Credential
		wantErr string
	}{
		{"", nil, ""},
		{"# only a comment\n\n", nil, ""},
		{"https://c.example/x/ bearer T\n  http://h:8080 basic u p  \n", []remote.Credential{{Prefix: "https://c.example/x", Token: "T"}, {Prefix: "http://h:8080", User: "u", Password: "p"}}, ""},
		{"ftp://x bearer T", nil, "line 1: the first field must be an http"},
		{"https://u:p@x bearer T", nil, "without credentials"},
		{"https://x bearer", nil, "want URL bearer TOKEN"},
		{"https://x basic u", nil, "want URL basic USER PASSWORD"},
		{"https://x", nil, "missing the kind"},
		{"https://x token SECRETSECRETSECRET", nil, "line 1: the second field is not bearer or basic"},
		// A short secret in the wrong place is not echoed either.
		{"https://x s3cr3t", nil, "line 1: the second field is not bearer or basic"},
		{"https://x\ns3cr3t bearer T", nil, "line 2: the first field must be an http"},
		{"https://x/?k=s3cr3t bearer a\nhttps://x/?k=s3cr3t bearer b", nil, "line 2: a second entry for https://x/?k=REDACTED"},
		{"https://x bearer a\nhttps://x/ bearer b", nil, "line 2: a second entry for https://x (the first is on line 1)"},
	} {
		got, err := remote.ParseCredentials([]byte(c.in))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseCredentials(%q) = %v, want an error containing %q", c.in, err, c.wantErr)
			}
			if err != nil && (strings.Contains(err.Error(), "SECRETSECRET") || strings.Contains(err.Error(), "s3cr3t")) {
				t.Errorf("ParseCredentials(%q) echoes a secret: %v", c.in, err)
			}
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Errorf("ParseCredentials(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("ParseCredentials(%q)[%d] = %+v, want %+v", c.in, i, got[i], c.want[i])
			}
		}
	}
}

func FuzzParseCredentials(f *testing.F) {
	f.Add([]byte("https://c.example/x bearer T\nhttp://h:8080 basic u p\n"))
	f.Add([]byte("# c\n\nhttps://x bearer"))
	f.Add([]byte("https://x\tbasic\tu\tp\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		creds, err := remote.ParseCredentials(b)
		if err != nil {
			return
		}
		for _, c := range creds {
			if (c.Token == "") == (c.User == "") {
				t.Fatalf("entry %+v has neither or both kinds of credentials", c)
			}
			if !strings.HasPrefix(c.Prefix, "http://") && !strings.HasPrefix(c.Prefix, "https://") {
				t.Fatalf("entry %+v has a prefix that is not an http URL", c)
			}
		}
	})
}

func TestHTTPTLS(t *testing.T) {
	f := newFakeServer()
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	os.WriteFile(ca, pemBytes, 0o644)
	ctx := context.Background()

	r, err := remote.Open(srv.URL, remote.Options{Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Put(ctx, remote.CAS, name0, 1, remote.BytesBody([]byte("x"))); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Put to a server whose certificate is not trusted = %v, want a certificate error", err)
	}
	r, err = remote.Open(srv.URL, remote.Options{CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Put(ctx, remote.CAS, name0, 1, remote.BytesBody([]byte("x"))); err != nil {
		t.Fatalf("Put over TLS with the server's CA = %v", err)
	}
	rc, _, err := r.Get(ctx, remote.CAS, name0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "x" {
		t.Errorf("Get over TLS = %q", b)
	}
	os.WriteFile(ca, []byte("not pem"), 0o644)
	if _, err := remote.Open(srv.URL, remote.Options{CAFile: ca}); err == nil {
		t.Errorf("Open with a CA file that holds no certificate succeeded")
	}
}

// TestHTTPStall: a server that stops sending in the middle of a body, or
// never answers, fails within the timeout as unavailable, without retries.
func TestHTTPStall(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Length", "1000000")
			w.Write(bytes.Repeat([]byte("x"), 1000))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	r, _ := remote.Open(srv.URL, remote.Options{Timeout: 200 * time.Millisecond})
	ctx := context.Background()

	start := time.Now()
	rc, _, err := r.Get(ctx, remote.CAS, name0)
	if err != nil {
		t.Fatalf("Get: %v (the headers came at once)", err)
	}
	_, err = io.Copy(io.Discard, rc)
	rc.Close()
	if !errors.Is(err, remote.ErrUnavailable) || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("reading a stalled body = %v, want ErrUnavailable for a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the stall was noticed after %v, want about 200ms", d)
	}

	requests.Store(0)
	start = time.Now()
	_, err = r.Stat(ctx, remote.CAS, name0)
	if !errors.Is(err, remote.ErrUnavailable) || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("Stat of a server that never answers = %v, want ErrUnavailable for a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the silence was noticed after %v, want about 200ms", d)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1: a timeout is not retried", n)
	}

	// A long transfer that keeps moving is not a stall.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		for range 10 {
			w.Write([]byte("x"))
			w.(http.Flusher).Flush()
			time.Sleep(60 * time.Millisecond)
		}
	}))
	defer slow.Close()
	rs, _ := remote.Open(slow.URL, remote.Options{Timeout: 200 * time.Millisecond})
	rc, _, err = rs.Get(ctx, remote.CAS, name0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || len(b) != 10 {
		t.Errorf("a body that trickles for 600ms with a 200ms timeout: %d bytes, %v", len(b), err)
	}
}

// TestClientParallelLimit: the client keeps at most Jobs requests in
// flight, and uses more than one.
func TestClientParallelLimit(t *testing.T) {
	f := newFakeServer()
	f.delay = 20 * time.Millisecond
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, _ := remote.Open(srv.URL, remote.Options{})
	ctx := context.Background()
	a := cache.NewMem()
	m := &cache.Manifest{Version: cache.ManifestVersion, Key: cache.Key(cache.DigestBytes([]byte("k"))), Stage: "stage.many", Outputs: map[string]cache.Output{}}
	for i := range 24 {
		b := []byte("output " + strconv.Itoa(i))
		d, n, err := a.PutBlob(ctx, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		m.Outputs["o"+strconv.Itoa(i)] = cache.Output{Digest: d, Size: n}
	}
	if err := a.PutManifest(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.NewClient(r, a, remote.ClientOptions{Jobs: 3}).Push(ctx, m.Key); err != nil {
		t.Fatal(err)
	}
	if got := f.maxInFl.Load(); got > 3 || got < 2 {
		t.Errorf("at most %d requests in flight during a push with Jobs 3, want 2 or 3", got)
	}
	f.maxInFl.Store(0)
	if _, err := remote.NewClient(r, cache.NewMem(), remote.ClientOptions{Jobs: 4}).Fetch(ctx, m.Key); err != nil {
		t.Fatal(err)
	}
	if got := f.maxInFl.Load(); got > 4 || got < 2 {
		t.Errorf("at most %d requests in flight during a fetch with Jobs 4, want 2 to 4", got)
	}
}

func TestOpen(t *testing.T) {
	for _, c := range []struct {
		url, want string
	}{
		{"https://cache.example.com/dragonx/", "https://cache.example.com/dragonx"},
		{"http://u:secret@h:8080", "http://h:8080"},
		{"file:///mnt/team/cache", "file:///mnt/team/cache"},
	} {
		r, err := remote.Open(c.url, remote.Options{})
		if err != nil || r.String() != c.want {
			t.Errorf("Open(%q) = %v, %v; want %s", c.url, r, err, c.want)
		}
	}
	for _, bad := range []string{"", "cache.example.com", "ftp://x/y", "file://host/x", "file:relative", "https:///nohost", "https://h/x?q=1", "http://[::1"} {
		if r, err := remote.Open(bad, remote.Options{}); err == nil {
			t.Errorf("Open(%q) = %v, want an error", bad, r)
		}
	}
}

// TestDirMissingRoot: a shared directory that is not there (a share not
// mounted) is unavailable, and a Put does not create it.
func TestDirMissingRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "share")
	r := remote.NewDir(root)
	ctx := context.Background()
	if err := r.Put(ctx, remote.CAS, name0, 1, remote.BytesBody([]byte("x"))); !errors.Is(err, remote.ErrUnavailable) {
		t.Errorf("Put under a missing root = %v, want ErrUnavailable", err)
	}
	if _, err := os.Stat(root); err == nil {
		t.Errorf("Put created the missing root")
	}
	if _, _, err := r.Get(ctx, remote.AC, name0); !errors.Is(err, remote.ErrUnavailable) || !strings.Contains(err.Error(), "mounted") {
		t.Errorf("Get under a missing root = %v, want ErrUnavailable asking whether it is mounted", err)
	}
	if err := remote.NewClient(r, cache.NewMem(), remote.ClientOptions{}).Ping(ctx); !errors.Is(err, remote.ErrUnavailable) {
		t.Errorf("Ping of a missing root = %v, want ErrUnavailable", err)
	}
	os.Mkdir(root, 0o755)
	if err := remote.NewClient(r, cache.NewMem(), remote.ClientOptions{}).Ping(ctx); err != nil {
		t.Errorf("Ping of an empty root = %v", err)
	}
}

// TestOpenErrorsRedact checks that no error for a bad remote URL echoes a
// password or token from it.
func TestOpenErrorsRedact(t *testing.T) {
	for _, bad := range []string{
		"https://alice:s3cr3t@h:port/x",
		"https://alice:s3/cr3t@h/x",
		"https://alice:s3cr3t@h/%zz",
		"https://alice:s3cr3t@h/x?token=s3cr3t",
		"https://h/x?token=s3cr3t",
		"https://alice:s3cr3t@/x",
		"ftp://alice:s3cr3t@h/x",
		"file://alice:s3cr3t@h/x",
		"alice:s3cr3t@h",
		"https://alice:s3cr3t\x7f@h/x",
	} {
		_, err := remote.Open(bad, remote.Options{})
		if err == nil {
			t.Errorf("Open(%q) succeeded, want an error", bad)
			continue
		}
		if strings.Contains(err.Error(), "s3") || strings.Contains(err.Error(), "cr3t") {
			t.Errorf("Open(%q) = %v: the error echoes the secret", bad, err)
		}
	}
	if got := remote.Redact("https://alice:s3cr3t@h/x"); got != "https://REDACTED@h/x" {
		t.Errorf("Redact = %q", got)
	}
}
