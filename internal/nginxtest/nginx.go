// Package nginxtest runs a real nginx on 127.0.0.1 as a remote cache for
// tests: a WebDAV server that stores PUT bodies as files under a data
// directory, as a team's nginx would.
//
// Each server is its own nginx process with a configuration written here
// (under the directory the test gives), started in the foreground
// (-g 'daemon off;') on a free port and stopped by its PID. Nothing depends
// on, or touches, a system nginx. The tests that use it skip when nginx is
// not installed; `make setup` installs Debian's package, whose nginx
// includes the WebDAV module.
package nginxtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Binary returns the path of the nginx executable, or "" if there is none.
func Binary() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"} {
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// SkipMessage is what tests say when they skip for want of nginx.
const SkipMessage = "nginx is not installed: the remote-cache tests need it (make setup installs Debian's nginx)"

// Server is a running nginx.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT; the remote cache
	// lives at URL itself (URL/cas/..., URL/ac/...).
	URL string
	// Root is the directory that holds what clients PUT: Root/cas/<hex>,
	// Root/ac/<hex>.
	Root string
	// Dir holds the configuration, logs and nginx's temporary files.
	Dir  string
	Port int

	bin  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // the process's exit, once done is closed
}

// Start starts nginx with its files under dir (created if need be): the
// configuration dir/nginx.conf, the logs dir/error.log and dir/access.log,
// the data dir/data. It returns once the server accepts connections.
func Start(dir string) (*Server, error) {
	bin := Binary()
	if bin == "" {
		return nil, errors.New("nginxtest: " + SkipMessage)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("nginxtest: %w", err)
	}
	s := &Server{Dir: abs, Root: filepath.Join(abs, "data"), bin: bin}
	for _, d := range []string{s.Root, filepath.Join(s.Root, ".tmp"), filepath.Join(abs, "temp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("nginxtest: %w", err)
		}
	}
	// The port is free when asked for, but another process may take it
	// before nginx binds it; then try another.
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.Port = port
		s.URL = "http://127.0.0.1:" + strconv.Itoa(port)
		if err := s.start(); err != nil {
			lastErr = err
			if strings.Contains(err.Error(), "Address already in use") {
				continue
			}
			return nil, err
		}
		return s, nil
	}
	return nil, lastErr
}

// StartT starts a server under a temporary directory of t and stops it
// when t ends; it skips t if nginx is not installed.
func StartT(t testing.TB) *Server {
	t.Helper()
	if Binary() == "" {
		t.Skip(SkipMessage)
	}
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// config is the server's configuration. nginx runs as one process
// (master_process off), so that the PID the test holds is the whole server:
// killing it leaves no orphaned worker behind. `user root` keeps workers
// root when the test runs as root (else nginx would switch them to a user
// that cannot write the test's directory, and PUT would fail with 500);
// client_max_body_size 0 lifts the 1 MB default that refuses blobs with
// 413; the client body temporary files live beside the data, so a PUT ends
// in an atomic rename.
func (s *Server) config() string {
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n"
	}
	return fmt.Sprintf(`# written by dragonx/internal/nginxtest
%smaster_process off;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events {
    worker_connections 512;
}
http {
    access_log %[2]s/access.log;
    client_body_temp_path %[3]s/.tmp;
    proxy_temp_path %[2]s/temp/proxy;
    fastcgi_temp_path %[2]s/temp/fastcgi;
    uwsgi_temp_path %[2]s/temp/uwsgi;
    scgi_temp_path %[2]s/temp/scgi;
    sendfile on;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:%[4]d;
        root %[3]s;
        location / {
            dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
            client_max_body_size 0;
        }
    }
}
`, user, s.Dir, s.Root, s.Port)
}

func (s *Server) start() error {
	conf := filepath.Join(s.Dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(s.config()), 0o644); err != nil {
		return fmt.Errorf("nginxtest: %w", err)
	}
	errLog := filepath.Join(s.Dir, "error.log")
	os.Remove(errLog)
	cmd := exec.Command(s.bin, "-p", s.Dir, "-c", conf, "-e", errLog, "-g", "daemon off;")
	cmd.Stdout, cmd.Stderr = nil, nil
	// Its own process group, so that a signal to the test's group (Ctrl-C)
	// does not reach it before the test stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("nginxtest: starting %s: %w", s.bin, err)
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(errLog)
			return fmt.Errorf("nginxtest: nginx exited (%v): %s", s.err, strings.TrimSpace(string(log)))
		default:
		}
		if time.Now().After(deadline) {
			s.Kill()
			log, _ := os.ReadFile(errLog)
			return fmt.Errorf("nginxtest: nginx did not accept connections within 10 s: %s", strings.TrimSpace(string(log)))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PID returns the master process's PID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop stops nginx by its PID: SIGQUIT (a graceful stop), then SIGKILL if
// it has not exited within 5 s. Stopping a stopped server does nothing.
func (s *Server) Stop() error {
	return s.signal(syscall.SIGQUIT, 5*time.Second)
}

// Kill kills nginx at once (SIGKILL), as a crash or a pulled plug would.
func (s *Server) Kill() error {
	return s.signal(syscall.SIGKILL, 5*time.Second)
}

func (s *Server) signal(sig syscall.Signal, wait time.Duration) error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	pid := s.cmd.Process.Pid
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("nginxtest: signalling %d: %w", pid, err)
	}
	select {
	case <-s.done:
		if sig == syscall.SIGKILL {
			s.waitPort()
		}
		return nil
	case <-time.After(wait):
	}
	syscall.Kill(pid, syscall.SIGKILL)
	<-s.done
	s.waitPort()
	return nil
}

// waitPort waits until nothing accepts connections on the port any more.
func (s *Server) waitPort() {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), 100*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
}

// Restart starts a stopped server again, on the same port and data.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// Path returns the file that holds an entry: Root/area/name.
func (s *Server) Path(area, name string) string {
	return filepath.Join(s.Root, area, name)
}

// freePort returns a TCP port on 127.0.0.1 that is free now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("nginxtest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
