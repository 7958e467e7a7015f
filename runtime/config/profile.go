package config

import (
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Profile is one entry of the top-level profiles mapping: a view of the
// gateway served at /mcp/NAME and /sse/NAME and by kiln serve --profile
// NAME, holding only the tools its globs name, with its own exposure.
// Policies still apply inside it (both must allow a tool).
type Profile struct {
	Name string
	Line int
	// Tools are globs over backend.tool ("github.*" is a whole backend).
	Tools []string
	// Expose is ExposeMeta, ExposeDirect or ExposeHybrid; gateway.expose
	// when the profile names none.
	Expose string
	// Pin lists hybrid's pinned tools, as gateway.pin does.
	Pin []string
}

var profileKeys = []string{"tools", "expose", "pin"}

// Profile returns the profile named name.
func (c *Config) Profile(name string) (Profile, bool) {
	i := slices.IndexFunc(c.Profiles, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return Profile{}, false
	}
	return c.Profiles[i], true
}

// ForProfile is c as profile p serves it: its exposure mode and pins in
// place of the gateway's.
func (c *Config) ForProfile(p Profile) *Config {
	out := *c
	out.Gateway.Expose, out.Gateway.Pin = p.Expose, p.Pin
	return &out
}

// profiles parses the top-level profiles mapping; expose defaults to def
// (gateway.expose) once the gateway is built (finishProfiles).
func (pr parser) profiles(e entry) []Profile {
	if isNull(e.val) {
		return nil
	}
	if e.val.Kind != yaml.MappingNode {
		pr.p.add(e.val.Line, "profiles", "is %s; want a mapping of profile names to {tools: [globs], expose: ...}", kind(e.val))
		return nil
	}
	ents, _ := pr.entries(e.val, "profiles")
	var out []Profile
	for _, pe := range ents {
		name := pe.key.Value
		path := "profiles." + name
		if !nameRE.MatchString(name) {
			pr.p.add(pe.key.Line, path, "%q is not a profile name; use lowercase letters, digits, - and _, starting with a letter (it becomes /mcp/NAME)", name)
			continue
		}
		if pe.val.Kind != yaml.MappingNode {
			pr.p.add(pe.val.Line, path, "is %s; want a mapping with tools (globs over backend.tool)", kind(pe.val))
			continue
		}
		p := Profile{Name: name, Line: pe.key.Line}
		before := len(pr.p.list)
		fields, _ := pr.entries(pe.val, path)
		for _, s := range fields {
			kp := keyPath(path, s.key.Value)
			switch s.key.Value {
			case "tools":
				p.Tools = pr.globList(s.val, kp)
			case "expose":
				if pr.scalar(s.val, kp) {
					if !slices.Contains(exposeModes, s.val.Value) {
						pr.p.add(s.val.Line, kp, "%q is not an exposure mode; use one of %s", s.val.Value, listOr(exposeModes))
					}
					p.Expose = s.val.Value
				}
			case "pin":
				for _, g := range pr.globList(s.val, kp) {
					if b, t, ok := strings.Cut(g, "."); !ok || t == "" || !nameRE.MatchString(b) {
						pr.p.add(s.val.Line, kp, "%s names no tool; write backend.tool or backend.*", strconv.Quote(g))
						continue
					}
					p.Pin = append(p.Pin, g)
				}
			default:
				pr.unknown(s.key, path, profileKeys)
			}
		}
		if len(p.Tools) == 0 && len(pr.p.list) == before {
			pr.p.add(pe.key.Line, path+".tools", "missing; list the tools the profile serves as globs over backend.tool, such as [\"github.*\", \"everything.echo\"]")
		}
		if len(pr.p.list) == before {
			out = append(out, p)
		}
	}
	return out
}

// finishProfiles gives each profile the gateway's exposure where it names
// none and checks pins against the mode.
func (b *builder) finishProfiles(ps []Profile, g Gateway) []Profile {
	for i := range ps {
		p := &ps[i]
		if p.Expose == "" {
			p.Expose = g.Expose
			if p.Expose == ExposeHybrid && len(p.Pin) == 0 {
				p.Pin = g.Pin
			}
		}
		if len(p.Pin) > 0 && p.Expose != ExposeHybrid {
			b.p.add(p.Line, "profiles."+p.Name+".pin", "only read when the profile's expose is hybrid (it is %s); set expose: hybrid or remove pin", p.Expose)
		}
	}
	return ps
}
