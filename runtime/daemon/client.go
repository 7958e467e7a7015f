package daemon

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kilnmcp/kiln/runtime/version"
)

// ErrAbsent means no daemon answers on the socket: none was started, or
// one crashed and left its socket file behind.
var ErrAbsent = errors.New("no kiln daemon is running")

// ErrNoAnswer says a daemon took the connection but did not answer its
// hello: it is still starting (it listens before it serves) or going away
// after its idle period. A client takes the start lock and dials again.
var ErrNoAnswer = errors.New("the kiln daemon did not answer")

// maxLog is the size past which a new daemon starts a fresh log.
const maxLog = 8 << 20

// ReadyFDEnv names the variable that tells a daemon which inherited file
// descriptor to report readiness on (Spawn sets it, Ready reads it).
const ReadyFDEnv = "KILN_DAEMON_READY_FD"

// hello starts every connection: the protocol name, the key and a verb.
const hello = "kiln-daemon/1"

// Verbs a connection may ask for after the hello.
const (
	VerbConnect = "connect" // relay an MCP session
	VerbStatus  = "status"  // report the pid and open sessions, then close
	VerbStop    = "stop"    // end the daemon
)

// Identity says which daemon serves a client: the config it loads and the
// build of kiln it runs.
type Identity struct {
	Key    string // hex digest of the config and the build
	Socket string // absolute path of the unix socket
	Log    string // the daemon's log file
}

// Identify derives the daemon's identity for a config (its absolute path,
// or a label such as "embedded:DIR" for the compiled-in config) served by
// the running executable. The build is told apart by version and by the
// executable's path, size and modification time, so a rebuilt binary gets
// a daemon of its own even when the version string is the same ("dev").
func Identify(configID, stateDir string) (Identity, error) {
	exe, err := os.Executable()
	if err != nil {
		return Identity{}, fmt.Errorf("find kiln's own executable: %w", err)
	}
	st, err := os.Stat(exe)
	if err != nil {
		return Identity{}, fmt.Errorf("find kiln's own executable: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00%d", configID, version.String(), exe, st.Size(), st.ModTime().UnixNano())
	key := hex.EncodeToString(h.Sum(nil))[:20]
	dir, err := socketDir(stateDir, key)
	if err != nil {
		return Identity{}, err
	}
	return Identity{
		Key:    key,
		Socket: filepath.Join(dir, "kiln-"+key+".sock"),
		Log:    filepath.Join(stateDir, "daemon-"+key+".log"),
	}, nil
}

// maxSocketPath keeps under the kernel's sun_path limit (108 bytes on
// Linux, 104 elsewhere).
const maxSocketPath = 100

// socketDir picks a folder only this user can enter: $XDG_RUNTIME_DIR/kiln
// (a per-user tmpfs on systemd machines), else state_dir/daemon, else, when
// that path is too long for a socket, $TMPDIR/kiln-UID.
func socketDir(stateDir, key string) (string, error) {
	name := len("/kiln-") + len(key) + len(".sock")
	var dirs []string
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		dirs = append(dirs, filepath.Join(x, "kiln"))
	}
	dirs = append(dirs, filepath.Join(stateDir, "daemon"), filepath.Join(os.TempDir(), "kiln-"+strconv.Itoa(os.Getuid())))
	for _, d := range dirs {
		if len(d)+name <= maxSocketPath {
			return d, privateDir(d)
		}
	}
	return "", fmt.Errorf("no folder for the daemon's socket has a path short enough (at most %d bytes): set XDG_RUNTIME_DIR or TMPDIR to a short path", maxSocketPath-name)
}

// privateDir makes d a folder of this user's with mode 0700, refusing one
// another user owns or a symlink (someone could read the socket's traffic).
func privateDir(d string) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("daemon socket folder: %w", err)
	}
	st, err := os.Lstat(d)
	if err != nil {
		return fmt.Errorf("daemon socket folder: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("daemon socket folder %s is not a folder owned by this user; remove it or set XDG_RUNTIME_DIR to a private folder", d)
	}
	if st.Mode().Perm() != 0o700 {
		if err := os.Chmod(d, 0o700); err != nil {
			return fmt.Errorf("daemon socket folder: %w", err)
		}
	}
	return nil
}

// Conn is an open connection to a daemon after its hello was accepted.
type Conn struct {
	*net.UnixConn
	// R reads what the daemon sends; it may hold bytes already read past
	// the hello's answer, so read from R, not from the connection.
	R *bufio.Reader
	// Pid is the daemon's process id; Sessions the client sessions it
	// served when it answered (status only).
	Pid, Sessions int
}

// Dial connects to the daemon of id and says hello with verb. It returns
// ErrAbsent when nobody listens on the socket (none there, or a stale one
// a crashed daemon left).
func Dial(ctx context.Context, id Identity, verb string) (*Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", id.Socket)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, ErrAbsent
		}
		return nil, fmt.Errorf("connect to the kiln daemon at %s: %w", id.Socket, err)
	}
	uc := c.(*net.UnixConn)
	deadline := time.Now().Add(10 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = uc.SetDeadline(deadline)
	if _, err := fmt.Fprintf(uc, "%s %s %s\n", hello, id.Key, verb); err != nil {
		uc.Close()
		return nil, fmt.Errorf("say hello to the kiln daemon at %s: %w", id.Socket, err)
	}
	r := bufio.NewReader(uc)
	line, err := r.ReadString('\n')
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("%w its hello at %s (%v); if this lasts, stop it (kill it, or kiln connect --stop) and connect again", ErrNoAnswer, id.Socket, err)
	}
	_ = uc.SetDeadline(time.Time{})
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "ok" {
		uc.Close()
		return nil, fmt.Errorf("the kiln daemon at %s refused the connection: %s", id.Socket, strings.TrimSpace(strings.TrimPrefix(line, "error")))
	}
	conn := &Conn{UnixConn: uc, R: r}
	conn.Pid, _ = strconv.Atoi(f[1])
	if len(f) > 2 {
		conn.Sessions, _ = strconv.Atoi(f[2])
	}
	return conn, nil
}

// Lock takes the start lock of id's daemon, so that of several clients
// starting at once exactly one starts it. It blocks until the lock is free
// or ctx ends; the kernel frees it if the holder dies. unlock deletes the
// lock file (every build and config has its own, so they would pile up):
// a client that was waiting on the deleted file, or opened it just before,
// finds it is no longer the one at the path once it holds it, and locks
// the file there instead, so two clients never both hold the lock.
func Lock(ctx context.Context, id Identity) (unlock func(), err error) {
	path := id.Socket + ".lock"
	for {
		f, err := lockFile(ctx, path)
		if err != nil {
			return nil, err
		}
		if atPath(f, path) {
			return func() {
				_ = os.Remove(path) // while still holding it
				f.Close()
			}, nil
		}
		f.Close()
	}
}

// lockFile opens path, creating it, and waits for its exclusive lock.
func lockFile(ctx context.Context, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("daemon start lock: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("daemon start lock %s: %w", path, err)
		}
		return f, nil
	case <-ctx.Done():
		// Closing the file ends the waiting flock's claim with it.
		go func() { <-done; f.Close() }()
		return nil, fmt.Errorf("waited too long for another kiln connect starting the daemon (lock %s): %w", path, ctx.Err())
	}
}

// atPath reports whether f is still the file at path: not deleted (or
// replaced) by the holder before.
func atPath(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(path)
	return err == nil && os.SameFile(held, now)
}

// Spawn starts cmd as a detached daemon (its own session, stdin from
// /dev/null, stdout and stderr appended to id.Log) and waits until it
// reports ready, exits, or ctx ends. The caller must hold Lock. A stale
// socket file is removed first: under the lock, nobody answering on it
// means its daemon is gone.
func Spawn(ctx context.Context, id Identity, cmd *exec.Cmd) error {
	if err := os.Remove(id.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the stale daemon socket %s: %w", id.Socket, err)
	}
	if err := os.MkdirAll(filepath.Dir(id.Log), 0o755); err != nil {
		return fmt.Errorf("daemon log folder: %w", err)
	}
	// Each daemon appends (a crashed one's last words stay for the
	// next); past maxLog the old log moves aside, so it stays bounded.
	if st, err := os.Stat(id.Log); err == nil && st.Size() > maxLog {
		_ = os.Rename(id.Log, id.Log+".old")
	}
	logf, err := os.OpenFile(id.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("daemon log: %w", err)
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("daemon readiness pipe: %w", err)
	}
	defer pr.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, logf, logf
	cmd.ExtraFiles = []*os.File{pw} // fd 3 in the daemon
	cmd.Env = append(cmd.Environ(), ReadyFDEnv+"=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("start the kiln daemon: %w", err)
	}
	pw.Close()
	exited := make(chan error, 1)
	// Waiting reaps the daemon if it ends while this client still runs.
	go func() { exited <- cmd.Wait() }()
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(pr).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if strings.TrimSpace(line) == "ready" {
			return nil
		}
		err := <-exited
		return fmt.Errorf("the kiln daemon exited before serving (%v); its log %s ends with:\n%s", err, id.Log, tail(id.Log, 20))
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		return fmt.Errorf("the kiln daemon did not get ready in time (%w); its log %s ends with:\n%s", ctx.Err(), id.Log, tail(id.Log, 20))
	}
}

// tail returns the last n lines of a file, for an error that explains
// itself.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
