package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// HostRule is one entry of gateway.registration.allow_hosts: a host name,
// an IP address or a CIDR prefix, with an optional port.
type HostRule struct {
	// Name is a lower-case host name without a trailing dot; empty when
	// the rule is an address or a prefix.
	Name string
	// Prefix holds an address (as a full-length prefix) or a CIDR prefix;
	// invalid when the rule is a name.
	Prefix netip.Prefix
	// Port is the one port the rule allows; zero allows every port.
	Port uint16
}

// String gives the rule back in the form it is written in kiln.yaml.
func (r HostRule) String() string {
	host := r.Name
	if host == "" {
		host = r.Prefix.String()
		if r.Prefix.IsSingleIP() {
			host = r.Prefix.Addr().String()
		}
	}
	if r.Port == 0 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(int(r.Port)))
}

// Matches reports whether the rule allows a connection to ip:port made
// for a URL whose host is host (a name, or the address itself). A name
// rule trusts whatever its name resolves to; an address rule looks at the
// address actually dialled.
func (r HostRule) Matches(host string, ip netip.Addr, port uint16) bool {
	if r.Port != 0 && r.Port != port {
		return false
	}
	if r.Name != "" {
		return strings.TrimSuffix(strings.ToLower(host), ".") == r.Name
	}
	return r.Prefix.Contains(ip.Unmap().WithZone(""))
}

// ParseHostRule reads one allow_hosts entry: mcp.internal,
// mcp.internal:8080, 10.0.0.5, 10.0.0.5:8080, [fd00::1]:8080, 10.0.0.0/8
// or fd00::/8.
func ParseHostRule(s string) (HostRule, error) {
	s = strings.TrimSpace(s)
	bad := func(why string) (HostRule, error) {
		return HostRule{}, fmt.Errorf("%q %s; write a host, host:port or CIDR such as mcp.internal, 127.0.0.1:3000 or 10.0.0.0/8", s, why)
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "?#@ ") {
		return bad("is not a host")
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return bad("is not a valid CIDR prefix (a port cannot go with one)")
		}
		return HostRule{Prefix: unmapPrefix(p.Masked())}, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return addrRule(a, 0)
	}
	host, port := s, uint16(0)
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return bad("has no valid port (1 to 65535)")
		}
		host, port = h, uint16(n)
		if a, err := netip.ParseAddr(host); err == nil {
			return addrRule(a, port)
		}
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if !validHostName(name) {
		return bad("is not a valid host name")
	}
	return HostRule{Name: name, Port: port}, nil
}

func addrRule(a netip.Addr, port uint16) (HostRule, error) {
	if a.Zone() != "" {
		return HostRule{}, fmt.Errorf("%q has an IPv6 zone, which allow_hosts does not take; write the address without %%%s", a, a.Zone())
	}
	a = a.Unmap()
	return HostRule{Prefix: netip.PrefixFrom(a, a.BitLen()), Port: port}, nil
}

// unmapPrefix turns ::ffff:10.0.0.0/104 into 10.0.0.0/8: addresses are
// compared unmapped.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

// validHostName accepts DNS names: dot-separated labels of letters, digits
// and hyphens (underscores too, which some internal zones use).
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}
