package config

import (
	"slices"
	"strconv"
	"strings"
)

// expose checks gateway.expose and gateway.pin. A pin is only read in
// hybrid mode, so pins under another mode are reported rather than
// silently ignored; whether a pin matches a tool is known only once the
// backends are loaded, so the server warns about that at start.
func (b *builder) expose(def string) (string, []string) {
	mode := def
	if v := b.expand(b.l.get("gateway.expose")); v.ok && !v.bad {
		if m := b.oneOf(v, exposeModes, "exposure mode", nil); m != "" {
			mode = m
		}
	}
	items := b.list("gateway.pin")
	if len(items) > 0 && mode != ExposeHybrid {
		b.p.add(b.lists["gateway.pin"].key.Line, "gateway.pin",
			"only read when gateway.expose is hybrid (it is %s); set expose: hybrid or remove pin", mode)
		return mode, nil
	}
	var pins []string
	for _, v := range items {
		if !b.nonEmpty(v, "name a tool as backend.tool, or every tool of a backend as backend.*") {
			continue
		}
		pin := strings.TrimSpace(v.s)
		backend, tool, ok := strings.Cut(pin, ".")
		switch {
		case !ok || tool == "":
			b.p.addValue(v, "%s names no tool; write backend.tool (e.g. everything.echo) or backend.* for all of its tools", strconv.Quote(pin))
		case !nameRE.MatchString(backend):
			b.p.addValue(v, "%s: backend %s is not a backend name (^[a-z][a-z0-9_-]*$); write backend.tool", strconv.Quote(pin), strconv.Quote(backend))
		case slices.Contains(pins, pin):
			b.p.addValue(v, "%s is pinned twice; remove one", strconv.Quote(pin))
		default:
			pins = append(pins, pin)
		}
	}
	return mode, pins
}

// drift checks a gateway.drift or backends.NAME.drift value; "" when it
// is absent, only the declared default (neither in the file nor in a
// KILN_… variable: Config.DriftMode tells the two apart), or wrong (a
// wrong one is reported).
func (b *builder) drift(v value) DriftMode {
	if !v.ok || v.bad || v.line == 0 && v.env == "" {
		return ""
	}
	return DriftMode(b.oneOf(v, driftModes, "drift mode", driftAliases))
}

// driftAliases map words people reach for to the drift mode they mean.
var driftAliases = map[string]string{
	"pinned": string(DriftPin), "locked": string(DriftPin), "strict": string(DriftPin), "reviewed": string(DriftPin),
	"log": string(DriftWarn), "warning": string(DriftWarn),
	"live": string(DriftFollow), "silent": string(DriftFollow),
}
