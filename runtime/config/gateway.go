package config

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Per-backend call limits where the config is silent: a stdio server is one
// process reading one pipe, an HTTP server usually a pool.
const (
	defaultMaxConcurrentStdio = 10
	defaultMaxConcurrentHTTP  = 100
)

// health checks gateway.health.
func (b *builder) health(def Health) Health {
	get := func(k string) value { return b.expand(b.l.get("gateway.health." + k)) }
	h := Health{
		Interval: b.duration(get("interval"), def.Interval),
		Failures: b.positive(get("failures"), def.Failures, def.Failures),
	}
	tv := get("timeout")
	h.Timeout = b.duration(tv, min(def.Timeout, h.Interval/2))
	if h.Timeout >= h.Interval && tv.ok && !tv.bad {
		b.p.addValue(tv, "%s is not shorter than gateway.health.interval (%s); a ping must end before the next starts", strconv.Quote(tv.raw), h.Interval)
	}
	return h
}

// registration checks gateway.registration.
func (b *builder) registration(def Registration) Registration {
	get := func(k string) value { return b.expand(b.l.get("gateway.registration." + k)) }
	r := Registration{
		MaxBackends: b.positive(get("max_backends"), def.MaxBackends, def.MaxBackends),
		Persist:     b.boolean(get("persist"), def.Persist),
	}
	for _, v := range b.list("gateway.registration.allow_commands") {
		if !b.nonEmpty(v, "name an executable such as npx or /usr/local/bin/my-server") {
			continue
		}
		cmd := strings.TrimSpace(v.s)
		if strings.ContainsRune(cmd, '/') && !filepath.IsAbs(cmd) {
			b.p.addValue(v, "%s is a relative path; give a bare program name (npx) or an absolute path", strconv.Quote(cmd))
			continue
		}
		r.AllowCommands = append(r.AllowCommands, cmd)
	}
	for _, v := range b.list("gateway.registration.allow_hosts") {
		if !b.nonEmpty(v, "give a host, host:port or CIDR such as mcp.internal, 127.0.0.1:3000 or 10.0.0.0/8") {
			continue
		}
		rule, err := ParseHostRule(v.s)
		if err != nil {
			b.p.addValue(v, "%v", err)
			continue
		}
		r.AllowHosts = append(r.AllowHosts, rule)
	}
	return r
}

// http checks gateway.http.
func (b *builder) http(def HTTP) HTTP {
	get := func(k string) value { return b.expand(b.l.get("gateway.http." + k)) }
	h := def
	h.AuthToken = strings.TrimSpace(get("auth_token").s)
	h.JWTIssuer = strings.TrimSpace(get("jwt_issuer").s)
	h.Audience = strings.TrimSpace(get("audience").s)
	if v := get("jwks_url"); v.ok && !v.bad {
		b.httpURL(v, "https://issuer.example.com/.well-known/jwks.json")
		h.JWKSURL = strings.TrimSpace(v.s)
	}
	if (h.JWKSURL == "") != (h.JWTIssuer == "") {
		b.p.add(0, "gateway.http", "jwt_issuer and jwks_url go together; set both to validate JWTs, or neither")
	}
	if v := get("max_body"); v.ok {
		if n := b.size(v, "4MiB"); n > 0 {
			h.MaxBody = n
		}
	}
	h.MaxSessions = b.positive(get("max_sessions"), def.MaxSessions, def.MaxSessions)
	tv := get("max_sessions_total")
	h.MaxSessionsTotal = b.positive(tv, max(def.MaxSessionsTotal, h.MaxSessions), def.MaxSessionsTotal)
	if h.MaxSessionsTotal < h.MaxSessions && tv.ok && !tv.bad {
		b.p.addValue(tv, "%s is below gateway.http.max_sessions (%d); the total must hold at least one client's sessions", strconv.Quote(tv.raw), h.MaxSessions)
	}
	h.SessionIdle = b.duration(get("session_idle"), def.SessionIdle)
	h.MaxConnections = b.positive(get("max_connections"), def.MaxConnections, def.MaxConnections)
	cv := get("max_connections_per_client")
	h.MaxConnectionsPerClient = b.positive(cv, min(def.MaxConnectionsPerClient, h.MaxConnections), def.MaxConnectionsPerClient)
	if h.MaxConnectionsPerClient > h.MaxConnections && cv.ok && !cv.bad {
		b.p.addValue(cv, "%s is above gateway.http.max_connections (%d); one client cannot have more than all of them", strconv.Quote(cv.raw), h.MaxConnections)
	}
	h.ReadTimeout = b.duration(get("read_timeout"), def.ReadTimeout)
	h.AllowedOrigins = b.strings("gateway.http.allowed_origins", "give an origin such as https://app.example.com")
	h.AllowedHosts = b.strings("gateway.http.allowed_hosts", "give a host such as kiln.internal or kiln.internal:8080")
	return h
}

// semantic checks gateway.semantic.
func (b *builder) semantic(def Semantic) Semantic {
	get := func(k string) value { return b.expand(b.l.get("gateway.semantic." + k)) }
	s := Semantic{Threads: b.positive(get("threads"), def.Threads, 4)}
	if v := get("model"); v.ok && !v.bad && strings.TrimSpace(v.s) != "" {
		s.Model = b.abs(strings.TrimSpace(v.s))
	}
	if v := get("sha256"); v.ok && !v.bad && strings.TrimSpace(v.s) != "" {
		sum := strings.ToLower(strings.TrimSpace(v.s))
		if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
			b.p.addValue(v, "%s is not a sha256 digest (64 hex digits); run sha256sum on the model file", strconv.Quote(v.raw))
		} else {
			s.SHA256 = sum
		}
	}
	return s
}

// vectors checks gateway.vectors.
func (b *builder) vectors(def Vectors) Vectors {
	get := func(k string) value { return b.expand(b.l.get("gateway.vectors." + k)) }
	v := Vectors{Top: b.positive(get("top"), def.Top, 30000), Depth: b.positive(get("depth"), def.Depth, 30), Fusion: def.Fusion}
	if f := get("file"); f.ok && !f.bad && strings.TrimSpace(f.s) != "" {
		v.File = b.abs(strings.TrimSpace(f.s))
	}
	if f := get("fusion"); f.ok && !f.bad {
		if m := b.oneOf(f, keyIndex["gateway.vectors.fusion"].enum, "fusion", nil); m != "" {
			v.Fusion = m
		}
	}
	return v
}

// console checks gateway.console.
func (b *builder) console() Console {
	get := func(k string) value { return b.expand(b.l.get("gateway.console." + k)) }
	c := Console{Enabled: b.boolean(get("enabled"), false), ShowValues: b.boolean(get("show_values"), false)}
	o := OIDC{}
	set := 0
	for _, f := range []struct {
		k   string
		dst *string
	}{{"issuer", &o.Issuer}, {"client_id", &o.ClientID}, {"client_secret", &o.ClientSecret}, {"redirect_url", &o.RedirectURL}} {
		k, dst := f.k, f.dst
		if v := get("oidc." + k); v.ok && !v.bad && strings.TrimSpace(v.s) != "" {
			*dst = strings.TrimSpace(v.s)
			if k != "redirect_url" {
				set++
			}
			if k == "issuer" || k == "redirect_url" {
				b.httpURL(v, "https://login.example.com")
			}
		}
	}
	switch {
	case set == 3:
		c.OIDC = &o
	case set > 0:
		b.p.add(0, "gateway.console.oidc", "issuer, client_id and client_secret go together; set all three to log people in, or none")
	}
	c.Allowed = b.strings("gateway.console.allowed", "give a subject, an email or group:NAME")
	return c
}

// audit checks gateway.audit.
func (b *builder) audit(def Audit) Audit {
	get := func(k string) value { return b.expand(b.l.get("gateway.audit." + k)) }
	a := Audit{Keep: b.positive(get("keep"), def.Keep, def.Keep), Flush: b.duration(get("flush"), def.Flush),
		Values: b.boolean(get("values"), def.Values), MaxSize: def.MaxSize}
	if n := b.size(get("max_size"), "100MiB"); n > 0 {
		a.MaxSize = n
	}
	if v := get("path"); v.ok && !v.bad && strings.TrimSpace(v.s) != "" {
		a.Path = b.abs(strings.TrimSpace(v.s))
	}
	return a
}

// strings is a list key of strings, each trimmed; an empty item is
// reported with hint and left out.
func (b *builder) strings(path, hint string) []string {
	var out []string
	for _, v := range b.list(path) {
		if b.nonEmpty(v, hint) {
			out = append(out, strings.TrimSpace(v.s))
		}
	}
	return out
}

// list expands the items of a section list key.
func (b *builder) list(path string) []value {
	e, ok := b.lists[path]
	if !ok {
		return nil
	}
	var out []value
	for i, n := range e.val.Content {
		out = append(out, b.node(path+"["+strconv.Itoa(i)+"]", deref(n)))
	}
	return out
}
