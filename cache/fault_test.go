package cache_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dragonx/cache"
	"dragonx/cache/cachetest"
)

// Fault tests run a child process (this test binary, re-executed with
// -test.run=^TestFaultChild$ and DRAGONX_FAULT_CHILD naming its role) that
// works on a cache directory, and kill it with SIGKILL at a chosen moment.

const childEnv = "DRAGONX_FAULT_CHILD"

// child is a running helper process.
type child struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr bytes.Buffer
}

// startChild starts the helper in role on dir.
func startChild(t *testing.T, role, dir string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFaultChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), childEnv+"="+role, "DRAGONX_FAULT_DIR="+dir)
	c := &child{cmd: cmd, lines: make(chan string, 1000)}
	cmd.Stderr = &c.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return c
}

// waitFor returns the first line the child prints that starts with prefix.
func (c *child) waitFor(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("child exited before printing %q; stderr:\n%s", prefix, c.stderr.String())
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("child did not print %q within a minute", prefix)
		}
	}
}

// kill9 kills the child with SIGKILL and reaps it.
func (c *child) kill9(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
}

// TestFaultChild is the helper process; it does nothing in a normal run.
func TestFaultChild(t *testing.T) {
	role := os.Getenv(childEnv)
	if role == "" {
		t.Skip("helper process for the fault tests")
	}
	ctx := context.Background()
	dir := os.Getenv("DRAGONX_FAULT_DIR")
	s, err := cache.Open(ctx, dir, cache.Options{})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	switch role {
	case "put-blob":
		// A committed entry first, then a large blob that is killed mid-way.
		m := cachetest.NewManifest(t, s, 1, "a")
		if err := s.PutManifest(ctx, m); err != nil {
			panic(err)
		}
		fmt.Println("STORED", m.Key)
		_, _, err := s.PutBlob(ctx, &slowAfter{n: 64 << 20, mid: 16 << 20})
		panic(fmt.Sprint("PutBlob returned before the kill: ", err))
	case "put-manifest":
		// Four writers put manifests as fast as they can.
		var wg sync.WaitGroup
		var mu sync.Mutex
		count := 0
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					m := cachetest.NewManifest(t, s, w*1000000+i, "out", "more")
					if err := s.PutManifest(ctx, m); err != nil {
						panic(err)
					}
					mu.Lock()
					count++
					fmt.Println("PUT", count)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	case "hold-lock":
		fmt.Println("LOCKED", os.Getpid())
		time.Sleep(time.Minute)
	case "quiet":
		// Everything a run does, to check that nothing reaches stderr.
		m := cachetest.NewManifest(t, s, 1, "a")
		m.Outputs["big"] = cache.Output{Digest: cachetest.Put(t, s, cachetest.Bytes(1, 5<<20)), Size: 5 << 20}
		if err := s.PutManifest(ctx, m); err != nil {
			panic(err)
		}
		if _, err := cache.GC(ctx, s, cache.GCOptions{MaxSize: 1}); err != nil {
			panic(err)
		}
		if _, err := cache.Verify(ctx, s, cache.VerifyOptions{Repair: true}); err != nil {
			panic(err)
		}
		fmt.Println("DONE")
	}
	if err := s.Close(); err != nil {
		panic(err)
	}
}

// slowAfter yields n pseudo-random bytes; after mid of them it prints MID
// and slows down, so that the parent's SIGKILL lands mid-write.
type slowAfter struct {
	n, mid, done int
	said         bool
}

func (r *slowAfter) Read(p []byte) (int, error) {
	if r.done >= r.n {
		return 0, io.EOF
	}
	if r.done >= r.mid {
		if !r.said {
			fmt.Println("MID")
			r.said = true
		}
		time.Sleep(10 * time.Millisecond)
	}
	k := min(len(p), r.n-r.done, 1<<20)
	copy(p, cachetest.Bytes(uint64(r.done), k))
	r.done += k
	return k, nil
}

// reopenAndCheck opens dir after a crash and checks that Verify finds no
// problem and that every manifest is complete.
func reopenAndCheck(t *testing.T, dir string) *cache.Badger {
	t.Helper()
	s, err := cache.Open(t.Context(), dir, cache.Options{LockTimeout: -1})
	if err != nil {
		t.Fatalf("Open after kill -9: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	rep, err := cache.Verify(t.Context(), s, cache.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("Verify after kill -9 = %+v, %v", rep, err)
	}
	return s
}

func TestKillDuringPutBlob(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, "put-blob", dir)
	key := strings.TrimPrefix(c.waitFor(t, "STORED "), "STORED ")
	c.waitFor(t, "MID")
	c.kill9(t)

	s := reopenAndCheck(t, dir)
	k, _ := cache.ParseKey(key)
	if _, err := s.GetManifest(t.Context(), k); err != nil {
		t.Fatalf("the entry committed before the kill is gone: %v", err)
	}
	blobs, _ := counts(t, s)
	if blobs != 2 { // the committed output and log
		t.Fatalf("after kill -9 mid-PutBlob there are %d blobs, want 2: a half-written blob is visible", blobs)
	}
	rep, _ := cache.Verify(t.Context(), s, cache.VerifyOptions{})
	if rep.Leftovers.Chunks < 8 { // 16 MiB were read; up to putPipeline chunks were in flight
		t.Fatalf("Verify found %+v leftovers, want the chunks of the interrupted write", rep.Leftovers)
	}
	gc, err := cache.GC(t.Context(), s, cache.GCOptions{})
	if err != nil || gc.Leftovers.Chunks != rep.Leftovers.Chunks || !gc.Leftovers.Removed {
		t.Fatalf("GC = %+v, %v; want the leftovers removed", gc, err)
	}
	if rep, _ := cache.Verify(t.Context(), s, cache.VerifyOptions{}); rep.Leftovers.Chunks != 0 || !rep.OK() {
		t.Fatalf("Verify after GC = %+v", rep)
	}
	// The cache is usable: a large blob goes in and out.
	cachetest.RoundTrip(t, s, cachetest.Bytes(3, 3<<20))
}

func TestKillDuringPutManifest(t *testing.T) {
	dir := t.TempDir()
	for round := range 3 {
		c := startChild(t, "put-manifest", dir)
		c.waitFor(t, fmt.Sprintf("PUT %d", 200+round*37))
		c.kill9(t)
		s := reopenAndCheck(t, dir)
		_, manifests := counts(t, s)
		if manifests < 200 {
			t.Fatalf("round %d: %d manifests after the kill, want at least the 200 reported", round, manifests)
		}
		t.Logf("round %d: %d manifests survived", round, manifests)
		s.Close()
	}
}

func TestCorruptValueLog(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openBadgerDir(t, dir, cache.Options{})
	data := cachetest.Bytes(42, 3<<20)
	m := cachetest.NewManifest(t, s, 1, "a")
	m.Outputs["big"] = cache.Output{Digest: cachetest.Put(t, s, data), Size: int64(len(data))}
	if err := s.PutManifest(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Flip a byte of the blob where Badger keeps it: the value-log files.
	needle := data[2<<20 : 2<<20+64]
	vlogs, _ := filepath.Glob(filepath.Join(dir, "db", "*.vlog"))
	flipped := false
	for _, p := range vlogs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, needle); i >= 0 {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte{b[i+10] ^ 0x40}, int64(i+10))
			f.Close()
			flipped = true
		}
	}
	if !flipped {
		t.Fatalf("the blob's bytes are in none of %v", vlogs)
	}
	s = openBadgerDir(t, dir, cache.Options{LockTimeout: -1})
	_, err := cachetest.Get(s, m.Outputs["big"].Digest)
	if !errors.Is(err, cache.ErrCorrupt) || !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("reading a blob corrupted on disk: %v; want ErrCorrupt", err)
	}
	rep, err := cache.Verify(ctx, s, cache.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 2 || rep.Problems[0].Kind != cache.ProblemCorruptBlob || rep.Problems[1].Kind != cache.ProblemMissingBlob {
		t.Fatalf("Verify = %v; want the corrupt blob and the entry that uses it", rep.Problems)
	}
	if _, err := cache.Verify(ctx, s, cache.VerifyOptions{Repair: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetManifest(ctx, m.Key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("the entry with a corrupt blob survived repair: %v", err)
	}
	// Storing the output again heals the cache.
	cachetest.RoundTrip(t, s, data)
	if rep, err := cache.Verify(ctx, s, cache.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("Verify after storing again = %+v, %v", rep, err)
	}
}

func TestTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, "hold-lock", dir)
	pid := strings.TrimPrefix(c.waitFor(t, "LOCKED "), "LOCKED ")
	var waitedFor []cache.LockHolder
	_, err := cache.Open(t.Context(), dir, cache.Options{
		LockTimeout: time.Second,
		OnLockWait:  func(h cache.LockHolder) { waitedFor = append(waitedFor, h) },
	})
	if !errors.Is(err, cache.ErrLocked) {
		t.Fatalf("Open while another process holds the cache: %v", err)
	}
	msg := err.Error()
	t.Logf("%s", msg)
	for _, want := range []string{"is locked by pid " + pid + " (", "-test.run=^TestFaultChild$", "since ", "; waited 1s"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if len(waitedFor) != 1 || fmt.Sprint(waitedFor[0].PID) != pid {
		t.Fatalf("OnLockWait saw %+v, want the child (pid %s)", waitedFor, pid)
	}
	// kill -9 releases the lock: the next Open does not wait.
	c.kill9(t)
	start := time.Now()
	s, err := cache.Open(t.Context(), dir, cache.Options{LockTimeout: -1})
	if err != nil {
		t.Fatalf("Open after the holder was killed: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Open after kill -9 took %v", d)
	}
	s.Close()
}

// TestQuiet checks that Badger writes nothing to the terminal.
func TestQuiet(t *testing.T) {
	c := startChild(t, "quiet", t.TempDir())
	c.waitFor(t, "DONE")
	c.cmd.Wait()
	if c.stderr.Len() != 0 {
		t.Fatalf("the cache wrote to stderr:\n%s", c.stderr.String())
	}
}
