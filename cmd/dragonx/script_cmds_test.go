package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"dragonx/internal/nginxtest"
	"dragonx/stages/cluster/slurmtest"
)

// scriptCondition answers the scripts' custom conditions: [nginx] holds
// when nginx is installed (the remote-cache scripts need it), [slurm] when
// a test Slurm cluster can run (packages installed, root).
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "nginx":
		return nginxtest.Binary() != "", nil
	case "slurm":
		return slurmtest.SkipReason() == "", nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// nginxKey keys a script's nginxState in its testscript values.
type nginxKey struct{}

// nginxState is the nginx a script started.
type nginxState struct {
	s *nginxtest.Server
}

// scriptCmds are the custom commands of the end-to-end scripts.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		// nginx start|stop|kill|restart: a real nginx serving a remote cache
		// (WebDAV) on 127.0.0.1, in $WORK/nginx, under its own PID. start
		// sets $NGINX_URL, $NGINX_ROOT (where the entries are: cas/, ac/)
		// and $NGINX_PID; the script's end stops it.
		"nginx": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 1 || neg {
				ts.Fatalf("usage: nginx start|stop|kill|restart")
			}
			st := ts.Value(nginxKey{}).(*nginxState)
			switch args[0] {
			case "start":
				if st.s != nil {
					ts.Fatalf("nginx is already started")
				}
				s, err := nginxtest.Start(ts.MkAbs("nginx"))
				ts.Check(err)
				st.s = s
				ts.Defer(func() { s.Stop() })
			case "stop", "kill", "restart":
				if st.s == nil {
					ts.Fatalf("nginx is not started")
				}
				switch args[0] {
				case "stop":
					ts.Check(st.s.Stop())
				case "kill":
					ts.Check(st.s.Kill())
				case "restart":
					ts.Check(st.s.Restart())
				}
			default:
				ts.Fatalf("usage: nginx start|stop|kill|restart")
			}
			ts.Setenv("NGINX_URL", st.s.URL)
			ts.Setenv("NGINX_ROOT", st.s.Root)
			ts.Setenv("NGINX_PID", strconv.Itoa(st.s.PID()))
		},
		// waitfile FILE [SECONDS]: wait until FILE exists (a stage started).
		// slurm start|empty: start sets SLURM_CONF to a real one-node Slurm
		// cluster of the script's own (stopped by its PIDs at the script's
		// end) and DRAGONX_SHARD_TASK_BIN to the dragonx on PATH (the test
		// binary under that name); empty checks that squeue lists no job.
		"slurm": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 1 || neg {
				ts.Fatalf("usage: slurm start|empty")
			}
			switch args[0] {
			case "start":
				// A short directory: munge's socket path must stay under
				// 108 bytes.
				dir, err := os.MkdirTemp("", "slurmtest-")
				ts.Check(err)
				c, err := slurmtest.Start(dir, slurmtest.Options{OverSubscribe: 4})
				if err != nil {
					os.RemoveAll(dir)
					ts.Fatalf("%v", err)
				}
				ts.Defer(func() {
					if err := c.Stop(); err != nil {
						ts.Logf("stopping Slurm: %v", err)
					}
					os.RemoveAll(dir)
				})
				ts.Setenv("SLURM_CONF", c.Conf)
				bin, err := lookPathIn("dragonx", ts.Getenv("PATH"))
				ts.Check(err)
				ts.Setenv("DRAGONX_SHARD_TASK_BIN", bin)
			case "empty":
				cmd := exec.Command("squeue", "-h", "-r", "-o", "%i %T")
				cmd.Env = append(os.Environ(), "SLURM_CONF="+ts.Getenv("SLURM_CONF"))
				out, err := cmd.CombinedOutput()
				if err != nil || strings.TrimSpace(string(out)) != "" {
					ts.Fatalf("squeue: %v: %s", err, out)
				}
			default:
				ts.Fatalf("usage: slurm start|empty")
			}
		},
		"procs": procsCmd,
		"waitfile": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) < 1 || len(args) > 2 {
				ts.Fatalf("usage: waitfile FILE [SECONDS]")
			}
			limit := 60 * time.Second
			if len(args) == 2 {
				n, err := strconv.Atoi(args[1])
				ts.Check(err)
				limit = time.Duration(n) * time.Second
			}
			p := ts.MkAbs(args[0])
			deadline := time.Now().Add(limit)
			for {
				_, err := os.Stat(p)
				if err == nil {
					if neg {
						ts.Fatalf("%s exists", args[0])
					}
					return
				}
				if time.Now().After(deadline) {
					if neg {
						return
					}
					ts.Fatalf("%s did not appear within %s", args[0], limit)
				}
				time.Sleep(20 * time.Millisecond)
			}
		},
		// corruptfile FILE: flip one byte in the middle of FILE.
		"corruptfile": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 1 {
				ts.Fatalf("usage: corruptfile FILE")
			}
			p := ts.MkAbs(args[0])
			b, err := os.ReadFile(p)
			ts.Check(err)
			if len(b) == 0 {
				ts.Fatalf("%s is empty", args[0])
			}
			b[len(b)/2] ^= 0xff
			ts.Check(os.WriteFile(p, b, 0o644))
		},
		// corruptblob DIR TEXT: flip one byte just after every occurrence of
		// TEXT in the files under DIR (a cache directory): the bytes of a
		// stored blob change on disk, as a failing disk would change them.
		"corruptblob": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: corruptblob DIR TEXT")
			}
			pat := []byte(args[1])
			hits := 0
			err := filepath.Walk(ts.MkAbs(args[0]), func(p string, info os.FileInfo, err error) error {
				if err != nil || !info.Mode().IsRegular() {
					return err
				}
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				changed := false
				for i := 0; ; {
					j := bytes.Index(b[i:], pat)
					if j < 0 {
						break
					}
					k := i + j + len(pat)
					if k < len(b) {
						b[k] ^= 0x01
						changed = true
						hits++
					}
					i = k
				}
				if changed {
					return os.WriteFile(p, b, info.Mode().Perm())
				}
				return nil
			})
			ts.Check(err)
			if hits == 0 {
				ts.Fatalf("%q not found under %s", args[1], args[0])
			}
		},
		// countfiles DIR PATTERN N: DIR holds N files matching PATTERN.
		"countfiles": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 3 {
				ts.Fatalf("usage: countfiles DIR PATTERN N")
			}
			m, err := filepath.Glob(filepath.Join(ts.MkAbs(args[0]), args[1]))
			ts.Check(err)
			if got := strconv.Itoa(len(m)); (got == args[2]) == neg {
				ts.Fatalf("%s/%s: %d files; want %s%s", args[0], args[1], len(m), map[bool]string{true: "not ", false: ""}[neg], args[2])
			}
			fmt.Fprintf(ts.Stdout(), "%d\n", len(m))
		},
	}
}

// lookPathIn finds an executable in the directories of path (a PATH value).
func lookPathIn(name, path string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on PATH", name)
}
