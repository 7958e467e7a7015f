package backend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

// ErrAddressRefused marks a connection a Guard refused.
var ErrAddressRefused = errors.New("address not allowed for a backend registered at run time")

// Guard decides which addresses an HTTP or SSE backend registered at run
// time may reach. A client that can call register_manual must not make
// kiln fetch from its loopback, the cloud metadata service or the private
// network, nor connect kiln to itself (which would let a sandboxed program
// reach the meta-tools). The check runs on every connection, on the
// address actually dialled after DNS resolution, and on every redirect, so
// a name that resolves differently later (DNS rebinding) cannot switch it.
//
// Backends from kiln's own config are not guarded: the operator may point
// them anywhere.
type Guard struct {
	// Allow lists internal addresses the operator allows anyway
	// (gateway.registration.allow_hosts).
	Allow []config.HostRule
	// Self lists kiln's own listeners, refused whatever Allow says. An
	// unspecified address (0.0.0.0, ::) stands for every local address at
	// that port.
	Self []netip.AddrPort
	// Lookup resolves a host name; nil uses the system resolver.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// RefusedError says which address a Guard refused and why. It is for
// kiln's log: what reaches a client is decided by the caller.
type RefusedError struct {
	Host   string         // the host as the URL named it
	Addr   netip.AddrPort // the address it resolved to
	Reason string         // "loopback", "kiln's own listener", …
}

func (e *RefusedError) Error() string {
	hint := "; allow it in gateway.registration.allow_hosts if it is meant to be reachable"
	if e.Reason == reasonSelf {
		hint = "; kiln never connects to itself"
	}
	target := e.Addr.String()
	if e.Host != e.Addr.Addr().String() {
		target = fmt.Sprintf("%s (%s)", e.Host, e.Addr)
	}
	return fmt.Sprintf("%s: %s is %s%s", ErrAddressRefused, target, e.Reason, hint)
}

func (e *RefusedError) Unwrap() error { return ErrAddressRefused }

const reasonSelf = "kiln's own listener"

// check decides one address: kiln's own listeners are refused, then an
// allow rule admits, then internal addresses are refused.
func (g *Guard) check(host string, ip netip.Addr, port uint16) error {
	ip = ip.WithZone("")
	u := ip.Unmap()
	refuse := func(why string) error {
		return &RefusedError{Host: host, Addr: netip.AddrPortFrom(ip, port), Reason: why}
	}
	if g.isSelf(u, port) {
		return refuse(reasonSelf)
	}
	for _, r := range g.Allow {
		if r.Matches(host, u, port) {
			return nil
		}
	}
	if why := internal(u); why != "" {
		return refuse(why)
	}
	return nil
}

// Special ranges netip has no predicate for.
var (
	sharedNet  = netip.MustParsePrefix("100.64.0.0/10") // carrier-grade NAT, RFC 6598
	thisNet    = netip.MustParsePrefix("0.0.0.0/8")     // "this network"; Linux connects 0.x locally
	broadcast  = netip.MustParseAddr("255.255.255.255")
	siteLocal  = netip.MustParsePrefix("fec0::/10") // deprecated, still routed by some stacks
	v4Compat   = netip.MustParsePrefix("::/96")     // deprecated IPv4-compatible ::a.b.c.d
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
)

// internal names the kind of a non-public address, or returns "". An IPv6
// address that embeds an IPv4 one (mapped, compatible, NAT64, 6to4) is
// judged by the IPv4 address too.
func internal(ip netip.Addr) string {
	switch {
	case ip.IsUnspecified() || (ip.Is4() && thisNet.Contains(ip)):
		return "an unspecified address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsLinkLocalUnicast():
		return "a link-local address"
	case ip.IsMulticast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip == broadcast:
		return "a multicast or broadcast address"
	case sharedNet.Contains(ip):
		return "a shared (carrier-grade NAT) address"
	case siteLocal.Contains(ip) || nat64Local.Contains(ip):
		return "a site-local address"
	}
	if v4, ok := embedded(ip); ok {
		if why := internal(v4); why != "" {
			return why + " inside an IPv6 address"
		}
	}
	return ""
}

// embedded returns the IPv4 address an IPv6 address carries.
func embedded(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case v4Compat.Contains(ip), nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// isSelf reports whether ip:port reaches one of kiln's own listeners.
func (g *Guard) isSelf(ip netip.Addr, port uint16) bool {
	for _, s := range g.Self {
		if s.Port() != port {
			continue
		}
		sa := s.Addr().Unmap().WithZone("")
		if sa == ip {
			return true
		}
		// Dialling an unspecified address reaches the local host, and a
		// listener on one answers on every local address.
		if (sa.IsUnspecified() || ip.IsUnspecified()) && (ip.IsUnspecified() || ip.IsLoopback() || isLocal(ip)) {
			return true
		}
	}
	return false
}

// isLocal reports whether ip belongs to one of this machine's interfaces.
func isLocal(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // cannot tell: treat as local, which refuses
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if la, ok := netip.AddrFromSlice(n.IP); ok && la.Unmap() == ip {
				return true
			}
		}
	}
	return false
}

// resolve returns host's addresses: the address itself for a literal.
func (g *Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	lookup := g.Lookup
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := lookup(ctx, host)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("lookup %s: no addresses", host)
	}
	return addrs, err
}

// allowed resolves host and keeps the addresses the guard allows at port.
// A name with both public and internal addresses is reached only at the
// public ones. With none left it returns the first refusal.
func (g *Guard) allowed(ctx context.Context, host string, port uint16) ([]netip.Addr, error) {
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var ok []netip.Addr
	var first error
	for _, a := range addrs {
		if err := g.check(host, a, port); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		return nil, first
	}
	return ok, nil
}

// DialContext connects like net.Dialer but only to allowed addresses. The
// dialer's Control function checks again the exact address the socket
// connects to, so nothing between resolution and connect can change it.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad port", addr)
	}
	addrs, err := g.allowed(ctx, host, uint16(port))
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot read %q", ErrAddressRefused, address)
			}
			return g.check(host, ap.Addr(), ap.Port())
		}}
	var first error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// CheckRedirect is an http.Client redirect policy: at most 10 redirects,
// http(s) only, and only to hosts the guard allows.
func (g *Guard) CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	port := req.URL.Port()
	switch req.URL.Scheme {
	case "http":
		port = cmp.Or(port, "80")
	case "https":
		port = cmp.Or(port, "443")
	default:
		return fmt.Errorf("%w: redirect to a %q URL", ErrAddressRefused, req.URL.Scheme)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("redirect to %s: bad port", req.URL.Redacted())
	}
	if _, err := g.allowed(req.Context(), req.URL.Hostname(), uint16(n)); err != nil {
		return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
	}
	return nil
}

// Client returns an HTTP client whose every connection and redirect the
// guard checks. It uses no proxy: a proxy would fetch internal addresses
// on kiln's behalf, past the check.
func (g *Guard) Client() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = g.DialContext
	return &http.Client{Transport: t, CheckRedirect: g.CheckRedirect}
}
