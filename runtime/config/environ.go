package config

import (
	"slices"
	"strings"
)

// Environ returns the environment for the backend's subprocess: base (e.g.
// os.Environ()) with b.Env applied. Entries of base that b.Env sets are
// dropped rather than shadowed, so the result has one entry per name
// whoever reads it; b.Env's entries follow in name order.
func (b *Backend) Environ(base []string) []string {
	out := make([]string, 0, len(base)+len(b.Env))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := b.Env[name]; !ok {
			out = append(out, kv)
		}
	}
	names := make([]string, 0, len(b.Env))
	for name := range b.Env {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		out = append(out, name+"="+b.Env[name])
	}
	return out
}
