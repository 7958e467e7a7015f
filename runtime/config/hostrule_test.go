package config

import (
	"net/netip"
	"testing"
)

func TestParseHostRule(t *testing.T) {
	tests := []struct {
		in, want string // want is the rule's String, or "" for an error
	}{
		{"mcp.internal", "mcp.internal"},
		{"MCP.Internal.", "mcp.internal"},
		{"mcp.internal:8080", "mcp.internal:8080"},
		{"localhost", "localhost"},
		{"10.0.0.5", "10.0.0.5"},
		{"10.0.0.5:8080", "10.0.0.5:8080"},
		{"::1", "::1"},
		{"[fd00::1]:8080", "[fd00::1]:8080"},
		{"::ffff:127.0.0.1", "127.0.0.1"},
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		{"fd00::/8", "fd00::/8"},
		{"http://mcp.internal", ""},
		{"mcp.internal/mcp", ""},
		{"10.0.0.0/8:80", ""},
		{"mcp.internal:99999", ""},
		{"mcp.internal:http", ""},
		{"-bad.example", ""},
		{"a b", ""},
		{"user@host", ""},
		{"fe80::1%eth0", ""},
	}
	for _, tc := range tests {
		r, err := ParseHostRule(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("ParseHostRule(%q) = %v, want an error", tc.in, r)
		case tc.want != "" && err != nil:
			t.Errorf("ParseHostRule(%q): %v", tc.in, err)
		case tc.want != "" && r.String() != tc.want:
			t.Errorf("ParseHostRule(%q) = %q, want %q", tc.in, r, tc.want)
		}
	}
}

func TestHostRuleMatches(t *testing.T) {
	ip := netip.MustParseAddr
	tests := []struct {
		rule, host string
		ip         netip.Addr
		port       uint16
		want       bool
	}{
		{"mcp.internal", "MCP.internal.", ip("10.0.0.1"), 80, true},
		{"mcp.internal", "other.internal", ip("10.0.0.1"), 80, false},
		{"mcp.internal:8080", "mcp.internal", ip("10.0.0.1"), 80, false},
		{"10.0.0.0/8", "10.9.9.9", ip("10.9.9.9"), 1, true},
		{"10.0.0.0/8", "x.test", ip("::ffff:10.9.9.9"), 1, true},
		{"10.0.0.0/8", "11.0.0.1", ip("11.0.0.1"), 1, false},
		{"127.0.0.1:3000", "localhost", ip("127.0.0.1"), 3000, true},
		{"127.0.0.1:3000", "localhost", ip("127.0.0.1"), 3001, false},
		{"fd00::/8", "[fd12::1]", ip("fd12::1"), 443, true},
	}
	for _, tc := range tests {
		r, err := ParseHostRule(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Matches(tc.host, tc.ip, tc.port); got != tc.want {
			t.Errorf("%s matches %s (%s) port %d = %v, want %v", tc.rule, tc.host, tc.ip, tc.port, got, tc.want)
		}
	}
}
