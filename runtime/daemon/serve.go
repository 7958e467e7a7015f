package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/safe"
)

// DefaultIdle is how long a daemon with no connection waits before it
// exits: long enough to outlive an editor's restart, short enough that
// backends do not run all day for nobody.
const DefaultIdle = 10 * time.Minute

// Listen opens id's socket for a daemon. A socket file nobody answers on
// (a crashed daemon's) is replaced; one a live daemon answers on is an
// error, so two daemons never serve one socket.
func Listen(id Identity) (*net.UnixListener, error) {
	if c, err := net.DialTimeout("unix", id.Socket, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("a kiln daemon already serves %s; use kiln connect, or stop it with kiln connect --stop", id.Socket)
	}
	if err := os.Remove(id.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove the stale daemon socket %s: %w", id.Socket, err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: id.Socket, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("daemon socket: %w", err)
	}
	// The folder is 0700 already; the socket is private too in case the
	// folder is ever shared.
	if err := os.Chmod(id.Socket, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("daemon socket: %w", err)
	}
	return ln, nil
}

// Ready tells the kiln connect that spawned this daemon that it serves.
// A daemon started by hand has nobody to tell.
func Ready() {
	fd, err := strconv.Atoi(os.Getenv(ReadyFDEnv))
	if err != nil || fd < 3 {
		return
	}
	f := os.NewFile(uintptr(fd), "ready")
	if f == nil {
		return
	}
	_, _ = f.WriteString("ready\n")
	f.Close()
}

// ServeOptions configure Serve.
type ServeOptions struct {
	Key string
	// Idle is how long the daemon waits with no connection before Serve
	// returns; DefaultIdle when zero.
	Idle time.Duration
	// Session serves one MCP client session over in/out until in ends.
	Session func(ctx context.Context, in io.Reader, out io.Writer) error
	Logger  *slog.Logger
}

// Serve accepts connections on ln until ctx ends, a stop request arrives,
// or no connection has been open for o.Idle. It closes ln (removing the
// socket file) and every connection before it returns.
func Serve(ctx context.Context, ln *net.UnixListener, o ServeOptions) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	idle := o.Idle
	if idle <= 0 {
		idle = DefaultIdle
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := &server{o: o, log: log, conns: map[net.Conn]bool{}, done: make(chan struct{}, 16), stop: make(chan struct{})}
	accepted := make(chan net.Conn)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			select {
			case accepted <- c:
			case <-ctx.Done():
				c.Close()
				return
			}
		}
	}()
	defer d.closeAll()
	defer ln.Close()
	timer := time.NewTimer(idle)
	defer timer.Stop()
	active := 0
	for {
		select {
		case <-ctx.Done():
			log.Info("daemon stopping", "reason", "shutdown")
			return nil
		case err := <-acceptErr:
			return fmt.Errorf("daemon socket: %w", err)
		case <-d.stop:
			log.Info("daemon stopping", "reason", "kiln connect --stop")
			return nil
		case c := <-accepted:
			active++
			timer.Stop()
			d.track(c, true)
			go d.handle(ctx, c)
		case <-d.done:
			active--
			if active == 0 {
				timer.Reset(idle)
			}
		case <-timer.C:
			if active == 0 {
				log.Info("daemon stopping", "reason", "idle", "idle", idle.String())
				return nil
			}
		}
	}
}

type server struct {
	o        ServeOptions
	log      *slog.Logger
	mu       sync.Mutex
	conns    map[net.Conn]bool
	sessions int // MCP sessions open now
	wg       sync.WaitGroup
	done     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
}

// stopping holds stop requests' connections, answered by the process's
// exit; a package variable so the collector never closes them early.
var stopping struct {
	sync.Mutex
	conns []net.Conn
}

func (d *server) track(c net.Conn, add bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if add {
		d.conns[c] = true
		d.wg.Add(1)
	} else {
		delete(d.conns, c)
	}
}

// closeAll ends every connection (their sessions end with them) and waits
// for their handlers.
func (d *server) closeAll() {
	stopping.Lock()
	keep := slices.Clone(stopping.conns)
	stopping.Unlock()
	d.mu.Lock()
	for c := range d.conns {
		if !slices.Contains(keep, c) {
			c.Close()
		}
	}
	d.mu.Unlock()
	d.wg.Wait()
}

func (d *server) handle(ctx context.Context, c net.Conn) {
	keep := false
	defer func() {
		if !keep {
			c.Close()
		}
		d.track(c, false)
		d.wg.Done()
		select {
		case d.done <- struct{}{}:
		case <-ctx.Done(): // Serve has returned
		}
	}()
	// Runs before the clean-up above: one client's session ends, not
	// every client's.
	defer safe.Recover(d.log, "a kiln connect client's session")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		d.log.Warn("daemon connection sent no hello", "err", err)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	f := strings.Fields(line)
	switch {
	case len(f) != 3 || f[0] != hello:
		fmt.Fprintf(c, "error this is a kiln daemon socket; connect with kiln connect\n")
		return
	case f[1] != d.o.Key:
		// Another build or config derived the same path: never relay.
		fmt.Fprintf(c, "error this daemon runs another build of kiln or another config (key %s, asked for %s); stop it with its own kiln connect --stop\n", d.o.Key, f[1])
		return
	}
	d.mu.Lock()
	open := d.sessions
	d.mu.Unlock()
	switch f[2] {
	case VerbStatus:
		fmt.Fprintf(c, "ok %d %d\n", os.Getpid(), open)
	case VerbStop:
		fmt.Fprintf(c, "ok %d %d\n", os.Getpid(), open)
		// The connection stays open until the process exits, so the
		// client waiting on it knows when the backends are gone too.
		keep = true
		stopping.Lock()
		stopping.conns = append(stopping.conns, c)
		stopping.Unlock()
		d.stopOnce.Do(func() { close(d.stop) })
	case VerbConnect:
		if _, err := fmt.Fprintf(c, "ok %d %d\n", os.Getpid(), open); err != nil {
			return
		}
		d.mu.Lock()
		d.sessions++
		d.mu.Unlock()
		d.log.Info("client session opened", "sessions", open+1)
		// Counted out by defer, so a session that panics is too.
		defer func() {
			d.mu.Lock()
			d.sessions--
			left := d.sessions
			d.mu.Unlock()
			d.log.Info("client session closed", "sessions", left)
		}()
		if err := d.o.Session(withPeer(ctx, c), r, c); err != nil {
			d.log.Warn("client session ended with an error", "err", err)
		}
	default:
		fmt.Fprintf(c, "error unknown request %q; this kiln speaks %s, %s and %s\n", f[2], VerbConnect, VerbStatus, VerbStop)
	}
}
