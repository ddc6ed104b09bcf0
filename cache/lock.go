package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"dragonx/internal/redact"
	"dragonx/internal/safeio"
)

// The process lock keeps two dragonx processes from using one cache
// directory at once. It is an advisory flock(2) on the file "lock" in the
// cache directory: the kernel releases it when the holder exits for any
// reason, kill -9 included, so a crashed run never blocks the next one. The
// holder writes who it is into the file (a LockHolder as JSON, its command
// line redacted) so that a waiting process can tell its user what it is
// waiting for.

// lockFileName is the lock file inside a cache directory.
const lockFileName = "lock"

// DefaultLockTimeout is how long Open waits for another process by default:
// long enough to outlast another process's quick `plan` or `status`, short
// enough that a user waiting behind a long run finds out soon.
const DefaultLockTimeout = 30 * time.Second

// lockPoll bounds the interval between attempts to take a held lock.
const lockPoll = 100 * time.Millisecond

// ErrLocked is matched by the error Open returns when another process holds
// the cache directory for longer than the lock timeout.
var ErrLocked = errors.New("cache: directory is locked by another process")

// LockHolder says who holds a cache directory's lock.
type LockHolder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Command []string  `json:"command"`
	Since   time.Time `json:"since"`
}

// String describes h for people: "pid 1234 (dragonx run paper.hcl on
// host h) since 15:04:05".
func (h LockHolder) String() string {
	if h.PID == 0 {
		return "another process (it has not said who it is)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pid %d", h.PID)
	var what []string
	if len(h.Command) > 0 {
		// Redacted here too: a file written by an older dragonx may hold
		// a password.
		what = append(what, strings.Join(redact.Args(h.Command), " "))
	}
	if h.Host != "" {
		what = append(what, "on host "+h.Host)
	}
	if len(what) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(what, " "))
	}
	if !h.Since.IsZero() {
		fmt.Fprintf(&b, " since %s", h.Since.Format("2006-01-02 15:04:05"))
	}
	return b.String()
}

// LockedError reports that the cache directory stayed locked past the
// timeout. It matches ErrLocked.
type LockedError struct {
	Dir    string
	Holder LockHolder
	Waited time.Duration
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("cache: %s is locked by %s; waited %s", e.Dir, e.Holder, e.Waited.Round(100*time.Millisecond))
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// dirLock is a held process lock.
type dirLock struct {
	f *os.File
}

// lockOptions say how acquireLock waits.
type lockOptions struct {
	timeout time.Duration // < 0: do not wait
	onWait  func(LockHolder)
	now     func() time.Time
}

// acquireLock takes the process lock of dir, waiting for another holder as
// o says. While it waits it calls o.onWait with the holder's description
// once, and again whenever the holder changes.
func acquireLock(ctx context.Context, dir string, o lockOptions) (*dirLock, error) {
	path := filepath.Join(dir, lockFileName)
	// Through safeio: the holder's record is written into the lock file,
	// so a link (or a hard link) planted at its path must not take that
	// write outside the cache, and a named pipe must not hang the open.
	f, err := safeio.OpenState(path, 0, 0o666)
	if err != nil {
		return nil, fmt.Errorf("cache: opening lock file: %w", err)
	}
	start := time.Now()
	var last LockHolder
	waiting := false
	delay := 5 * time.Millisecond
	for {
		ok, err := tryLockFile(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("cache: locking %s: %w", path, err)
		}
		if ok {
			break
		}
		holder := readHolder(f)
		waited := time.Since(start)
		if o.timeout < 0 || waited >= o.timeout {
			f.Close()
			return nil, &LockedError{Dir: dir, Holder: holder, Waited: waited}
		}
		changed := holder.PID != last.PID || !holder.Since.Equal(last.Since) || holder.Host != last.Host
		if o.onWait != nil && (!waiting || changed && holder.PID != 0) {
			o.onWait(holder)
		}
		waiting, last = true, holder
		t := time.NewTimer(min(delay, o.timeout-waited))
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("cache: waiting for the lock of %s held by %s: %w", dir, holder, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, lockPoll)
	}
	// The command line may hold a remote's URL with a password in it
	// (-remote https://user:pass@host): the file is readable by others and
	// outlives a crash, so it records the command redacted.
	h := LockHolder{PID: os.Getpid(), Command: redact.Args(os.Args), Since: o.now()}
	h.Host, _ = os.Hostname()
	b, _ := json.Marshal(h)
	// A waiter may read the file while it is being written; it retries on
	// the next poll, so no atomicity is needed here.
	if err := f.Truncate(0); err == nil {
		f.WriteAt(append(b, '\n'), 0)
	}
	return &dirLock{f: f}, nil
}

// readHolder returns what the current holder wrote into the lock file; the
// zero LockHolder when it has not written yet or wrote garbage.
func readHolder(f *os.File) LockHolder {
	var h LockHolder
	buf := make([]byte, 64<<10)
	n, _ := f.ReadAt(buf, 0)
	if json.Unmarshal(buf[:n], &h) != nil {
		return LockHolder{}
	}
	return h
}

// release clears the holder record and releases the lock.
func (l *dirLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.f.Truncate(0)
	err := l.f.Close() // closing the descriptor releases the flock
	l.f = nil
	if err != nil {
		return fmt.Errorf("cache: releasing lock: %w", err)
	}
	return nil
}
