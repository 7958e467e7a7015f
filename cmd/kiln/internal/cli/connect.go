package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/daemon"
	"github.com/kilnmcp/kiln/runtime/server"
)

// Bounds of --idle: a daemon that exits within a second of its last client
// would be started again by the next; one that idles for days holds
// backends for nobody.
const (
	minIdle = time.Second
	maxIdle = 7 * 24 * time.Hour
)

// startWait bounds waiting for another client's daemon start (the lock)
// and for our own (config, sandbox workers, the socket).
const startWait = 2 * time.Minute

func runConnect(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kiln connect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config file (default: $KILN_CONFIG, else ./kiln.yaml, else the copy compiled into kiln)")
	idle := fs.Duration("idle", daemon.DefaultIdle, "a daemon this starts exits after this long with no client connected")
	status := fs.Bool("status", false, "report the daemon serving this config, if any, and exit")
	stop := fs.Bool("stop", false, "stop the daemon serving this config, if any, and exit")
	if fs.Parse(args) != nil {
		return exitUsage
	}
	if *idle < minIdle || *idle > maxIdle {
		fmt.Fprintf(stderr, "kiln connect: --idle %s is out of range; use %s to %s\n", *idle, minIdle, maxIdle)
		return exitUsage
	}
	cfg, err := loadServeConfig(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "kiln connect: %v\n", err)
		return exitUsage
	}
	id, err := daemonIdentity(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "kiln connect: %v\n", err)
		return exitFail
	}
	switch {
	case *status:
		return connectStatus(ctx, id, cfg, stdout, stderr)
	case *stop:
		return connectStop(ctx, id, cfg, stdout, stderr)
	}
	conn, err := dialOrStart(ctx, id, cfg, *idle)
	if err != nil {
		fmt.Fprintf(stderr, "kiln connect: %v\n", err)
		return exitFail
	}
	defer conn.Close()
	// A relay is all hand-offs: the same raw ends and single P as kiln
	// serve on stdio (stdio.go).
	in, out, release := rawStdio(stdin, stdout)
	defer release()
	oneClientProcs()
	return relay(conn, id, in, out, stderr)
}

// relay copies the client's stdin to the daemon and the daemon's answers
// to stdout, byte for byte. The client closing stdin closes the write
// side, so the daemon ends the session and then the connection.
func relay(conn *daemon.Conn, id daemon.Identity, stdin io.Reader, stdout, stderr io.Writer) int {
	// clientDone is set before the write side closes: the daemon may
	// answer that close and end the connection at once.
	var clientDone atomic.Bool
	go func() {
		if _, err := io.Copy(conn, stdin); err == nil {
			clientDone.Store(true)
		}
		_ = conn.CloseWrite()
	}()
	out := &recordingWriter{w: stdout}
	_, err := io.Copy(out, conn.R)
	if clientDone.Load() {
		return exitOK
	}
	if out.err != nil {
		// stdout is written raw (rawStdio): a client that stopped reading
		// is an EPIPE here, where os.Stdout's SIGPIPE ended kiln at once.
		fmt.Fprintf(stderr, "kiln connect: the client stopped reading kiln's answers (%v)\n", out.err)
		return exitFail
	}
	if err == nil || errors.Is(err, net.ErrClosed) {
		err = errors.New("connection closed")
	}
	fmt.Fprintf(stderr, "kiln connect: the kiln daemon (pid %d) ended the session while the client was still connected (%v): it stopped or crashed; its log is %s. Start the client again to start a new daemon.\n", conn.Pid, err, id.Log)
	return exitFail
}

// recordingWriter keeps the error of its last failed write: it tells the
// client's end failing from the daemon's in io.Copy's single error.
type recordingWriter struct {
	w   io.Writer
	err error
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil {
		r.err = err
	}
	return n, err
}

// dialOrStart connects to the daemon, starting it when none answers. Of
// several clients starting at once, the one holding the lock starts it
// and the others find it running once they get the lock.
func dialOrStart(ctx context.Context, id daemon.Identity, cfg *config.Config, idle time.Duration) (*daemon.Conn, error) {
	// A daemon that does not answer is still starting (its starter holds
	// the lock until it serves) or exiting after its idle period: either
	// way the lock decides, as for no daemon at all.
	retry := func(err error) bool { return errors.Is(err, daemon.ErrAbsent) || errors.Is(err, daemon.ErrNoAnswer) }
	conn, err := daemon.Dial(ctx, id, daemon.VerbConnect)
	if !retry(err) {
		return conn, err
	}
	sctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	unlock, err := daemon.Lock(sctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	conn, err = daemon.Dial(sctx, id, daemon.VerbConnect)
	if !retry(err) {
		return conn, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find kiln's own executable to start the daemon: %w", err)
	}
	args := []string{"serve", "--daemon", "--idle", idle.String()}
	if cfg.FromFile {
		abs, err := filepath.Abs(cfg.Path)
		if err != nil {
			return nil, err
		}
		args = append(args, "--config", abs)
	}
	cmd := exec.Command(self, args...)
	// The compiled-in config resolves its paths against the working
	// directory, which is part of the daemon's identity.
	cmd.Dir = cfg.Dir
	if err := daemon.Spawn(sctx, id, cmd); err != nil {
		return nil, err
	}
	return daemon.Dial(sctx, id, daemon.VerbConnect)
}

func connectStatus(ctx context.Context, id daemon.Identity, cfg *config.Config, stdout, stderr io.Writer) int {
	conn, err := daemon.Dial(ctx, id, daemon.VerbStatus)
	if errors.Is(err, daemon.ErrAbsent) {
		fmt.Fprintf(stdout, "no kiln daemon serves %s with this kiln (socket %s)\n", cfg.Path, id.Socket)
		return exitFail
	}
	if err != nil {
		fmt.Fprintf(stderr, "kiln connect: %v\n", err)
		return exitFail
	}
	conn.Close()
	fmt.Fprintf(stdout, "kiln daemon pid %d serves %s: %d client sessions open\nsocket %s\nlog %s\n", conn.Pid, cfg.Path, conn.Sessions, id.Socket, id.Log)
	return exitOK
}

// connectStop asks the daemon to stop and waits until it has exited: the
// daemon holds the connection open until its process ends.
func connectStop(ctx context.Context, id daemon.Identity, cfg *config.Config, stdout, stderr io.Writer) int {
	conn, err := daemon.Dial(ctx, id, daemon.VerbStop)
	if errors.Is(err, daemon.ErrAbsent) {
		fmt.Fprintf(stdout, "no kiln daemon serves %s with this kiln (socket %s)\n", cfg.Path, id.Socket)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "kiln connect: %v\n", err)
		return exitFail
	}
	defer conn.Close()
	_, _ = io.Copy(io.Discard, conn.R)
	fmt.Fprintf(stdout, "stopped kiln daemon pid %d\n", conn.Pid)
	return exitOK
}

// daemonIdentity names the daemon for a config: its absolute path, or the
// folder the compiled-in config resolves against.
func daemonIdentity(cfg *config.Config) (daemon.Identity, error) {
	cid := "embedded:" + cfg.Dir
	if cfg.FromFile {
		abs, err := filepath.Abs(cfg.Path)
		if err != nil {
			return daemon.Identity{}, err
		}
		cid = "file:" + abs
	}
	return daemon.Identify(cid, cfg.Gateway.StateDir)
}

// daemonDoor is kiln serve --daemon's socket.
type daemonDoor struct {
	ln   *net.UnixListener
	id   daemon.Identity
	idle time.Duration
}

func openDaemonDoor(cfg *config.Config, httpAddr string, idle time.Duration) (*daemonDoor, error) {
	if httpAddr != "" {
		return nil, errors.New("--daemon serves a unix socket for kiln connect and cannot be combined with --http; drop one")
	}
	if idle < minIdle || idle > maxIdle {
		return nil, fmt.Errorf("--idle %s is out of range; use %s to %s", idle, minIdle, maxIdle)
	}
	id, err := daemonIdentity(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := daemon.Listen(id)
	if err != nil {
		return nil, err
	}
	return &daemonDoor{ln: ln, id: id, idle: idle}, nil
}

func (d *daemonDoor) serve(ctx context.Context, srv *server.Server, log *slog.Logger, stderr io.Writer) int {
	log.Info("daemon serving kiln connect clients", "socket", d.id.Socket, "idle", d.idle.String(), "pid", os.Getpid())
	daemon.Ready()
	err := daemon.Serve(ctx, d.ln, daemon.ServeOptions{Key: d.id.Key, Idle: d.idle, Session: srv.ServeConn, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "kiln: %v\n", err)
		return exitFail
	}
	return exitOK
}
