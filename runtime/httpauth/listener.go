package httpauth

import (
	"cmp"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

// Defaults for the connection caps: gateway.http's, which the config
// declares once.
var (
	DefaultMaxConnections          = config.DefaultGateway().HTTP.MaxConnections
	DefaultMaxConnectionsPerClient = config.DefaultGateway().HTTP.MaxConnectionsPerClient
)

// refusal is what a connection over a cap gets before it is closed: a
// complete response, so a client sees why instead of a reset.
var refusal = func() []byte {
	const msg = "too many open connections to kiln: close idle ones, or raise gateway.http.max_connections or max_connections_per_client\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\n" +
		"Content-Length: " + strconv.Itoa(len(msg)) + "\r\n\r\n" + msg)
}()

// Listener caps the connections ln hands out: at most
// gateway.http.max_connections in total and max_connections_per_client
// from one IP. A connection over a cap gets a 503 and is closed at once,
// before a byte of it is read, so a flood costs kiln nothing that lasts.
// A connection counts until it is closed, which for a stream is when the
// stream ends; ReadHeaderTimeout, the guard's read deadline and closing
// after every refusal keep peers that send nothing useful from holding
// one for long.
func (g *Guard) Listener(ln net.Listener) net.Listener {
	return &capListener{Listener: ln, total: g.maxConns, perClient: g.maxConnsPerClient, log: g.log, byIP: map[string]int{}}
}

type capListener struct {
	net.Listener
	total, perClient int
	log              *slog.Logger

	mu   sync.Mutex
	open int
	byIP map[string]int
}

// Accept implements net.Listener, refusing connections over the caps.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := hostOf(c.RemoteAddr().String())
		if l.admit(ip) {
			return &capConn{Conn: c, l: l, ip: ip}, nil
		}
		l.log.Debug("http connection refused", "reason", "too many connections", "remote", ip)
		// A new socket's send buffer is empty, so this write does not
		// wait; the deadline is a guard, not a delay.
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.Write(refusal)
		_ = c.Close()
	}
}

func (l *capListener) admit(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.total || l.byIP[ip] >= l.perClient {
		return false
	}
	l.open++
	l.byIP[ip]++
	return true
}

func (l *capListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
}

// counts reports the open connections, in total and from ip.
func (l *capListener) counts(ip string) (total, fromIP int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.byIP[ip]
}

// capConn gives its slot back when closed, once.
type capConn struct {
	net.Conn
	l    *capListener
	ip   string
	once sync.Once
}

// Close implements net.Conn.
func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}

func connCaps(total, perClient int) (int, int) {
	total = cmp.Or(total, DefaultMaxConnections)
	return total, min(cmp.Or(perClient, DefaultMaxConnectionsPerClient), total)
}
