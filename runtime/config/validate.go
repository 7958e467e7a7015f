package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// value is one string setting on its way from a layer to a typed field.
type value struct {
	key  string // key path
	raw  string // as written or as set by the override, before expansion
	s    string // expanded
	line int    // line in the file; 0 for defaults and overrides
	env  string // KILN_ variable that set it, if any
	ok   bool   // present in some layer
	bad  bool   // a problem was reported; skip further checks
	// unset lists the ${VAR}s it used that were unset, to explain an empty
	// or odd result.
	unset []string
}

// checker expands and checks values, collecting problems and the variables
// the current backend refers to.
type checker struct {
	p    *problems
	env  lookup
	refs []VarRef
}

// expand expands v.raw into v.s, recording the variables it used.
func (c *checker) expand(v value) value {
	s, refs, err := expand(v.raw, c.env.get)
	if err != nil {
		v.bad = true
		c.p.addValue(v, "%v", err)
		return v
	}
	v.s = s
	for _, r := range refs {
		if isBuiltin(r.name) {
			if !r.set {
				v.bad = true
				c.p.addValue(v, "${%s} is kiln's state folder, known once the gateway section is read; use it in backends' settings, not in gateway", r.name)
			}
			continue // kiln's own, not a key a tool needs
		}
		c.refs = append(c.refs, VarRef{Name: r.name, Key: v.key, HasDefault: r.hasDefault, Set: r.set})
		if !r.set && !r.hasDefault {
			v.unset = append(v.unset, "${"+r.name+"}")
		}
	}
	if strings.ContainsRune(s, 0) {
		v.bad = true
		c.p.addValue(v, "contains a NUL character, which no process argument or header can carry")
	}
	return v
}

// node turns a YAML scalar from a list or map into an expanded value.
func (c *checker) node(key string, n *yaml.Node) value {
	return c.expand(value{key: key, raw: n.Value, line: n.Line, ok: true})
}

// duration parses a positive duration, or returns def.
func (c *checker) duration(v value, def time.Duration) time.Duration {
	d, ok := c.parseDuration(v)
	if ok && d <= 0 {
		c.p.addValue(v, "must be positive, got %s; use e.g. 30s", strconv.Quote(v.raw))
		ok = false
	}
	if !ok || !c.inBound(v, int64(d), unitDuration) {
		return def
	}
	return d
}

// parseDuration parses v as a Go duration; ok is false when v is absent or
// was reported.
func (c *checker) parseDuration(v value) (d time.Duration, ok bool) {
	if !v.ok || v.bad {
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(v.s))
	switch {
	case err != nil && isDigits(v.s):
		c.p.addValue(v, "%s has no unit; write %ss (or ms, m, h)", strconv.Quote(v.raw), strings.TrimSpace(v.s))
	case err != nil:
		c.p.addValue(v, "invalid duration %s; use Go syntax such as 30s, 1m30s or 500ms", strconv.Quote(v.raw))
	default:
		return d, true
	}
	return 0, false
}

// positive parses a whole number of at least 1, or returns def; example
// goes in the hint.
func (c *checker) positive(v value, def, example int) int {
	if !v.ok || v.bad {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v.s))
	if err != nil || n <= 0 {
		c.p.addValue(v, "want a positive whole number such as %d, got %s", example, strconv.Quote(v.raw))
		return def
	}
	if !c.inBound(v, int64(n), unitCount) {
		return def
	}
	return n
}

func (c *checker) boolean(v value, def bool) bool {
	if !v.ok || v.bad {
		return def
	}
	switch strings.ToLower(strings.TrimSpace(v.s)) {
	case "true":
		return true
	case "false":
		return false
	}
	c.p.addValue(v, "want true or false, got %s", strconv.Quote(v.raw))
	return def
}

// oneOf checks a word against its choices, case-insensitively; aliases
// maps other tools' spellings to ours for the hint.
func (c *checker) oneOf(v value, choices []string, what string, aliases map[string]string) string {
	w := strings.ToLower(strings.TrimSpace(v.s))
	if slices.Contains(choices, w) {
		return w
	}
	msg := "unknown " + what + " " + strconv.Quote(v.raw) + "; use " + listOr(choices)
	if s, ok := aliases[w]; ok {
		msg += " (did you mean " + s + "?)"
	} else if s := suggest(w, choices); s != "" {
		msg += " (did you mean " + s + "?)"
	}
	c.p.addValue(v, "%s", msg)
	return ""
}

// hostPort checks a listen address: host:port with a numeric port (0
// picks a free one), where an empty host means every interface.
func (c *checker) hostPort(v value, example string) string {
	s := strings.TrimSpace(v.s)
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 0 || n > 65535 {
			err = fmt.Errorf("port %q is not a number from 0 to 65535", port)
		}
	}
	if err != nil {
		c.p.addValue(v, "want host:port such as %s, got %s (%v)", example, strconv.Quote(v.raw), err)
		return ""
	}
	return s
}

// nonEmpty reports an empty value and returns whether it is not.
func (c *checker) nonEmpty(v value, hint string) bool {
	if v.bad {
		return false
	}
	if strings.TrimSpace(v.s) == "" {
		c.p.addValue(v, "empty; %s", hint)
		return false
	}
	return true
}

// httpURL checks an absolute http(s) URL. Messages quote the value as
// written, never expanded, so a token passed through ${…} stays out of logs.
func (c *checker) httpURL(v value, example string) {
	if v.bad {
		return
	}
	u, err := url.Parse(strings.TrimSpace(v.s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.p.addValue(v, "%s is not an absolute http:// or https:// URL; write e.g. %s", strconv.Quote(v.raw), example)
	}
}

// stateURL checks gateway.state_url: redis:// or rediss:// with a host and
// an optional database number, or unix:// with a socket path. Messages
// hide a password written into the URL.
func (c *checker) stateURL(v value) string {
	s := strings.TrimSpace(v.s)
	shown := strconv.Quote(v.raw)
	u, err := url.Parse(s)
	var why string
	switch {
	case err != nil:
		why = "it does not parse as a URL"
	case u.Scheme == "unix":
		if u.Path == "" {
			why = "a unix:// URL needs the socket's absolute path, e.g. unix:///run/redis/redis.sock"
		}
	case u.Scheme != "redis" && u.Scheme != "rediss":
		why = "the scheme must be redis, rediss (TLS) or unix"
	case u.Hostname() == "":
		why = "it names no host"
	case u.Path != "" && u.Path != "/" && !isDigits(strings.TrimPrefix(u.Path, "/")):
		why = "the path must be a database number such as /0"
	}
	if u != nil && u.User != nil {
		if _, has := u.User.Password(); has {
			shown = strconv.Quote(u.Redacted())
		}
	}
	if why != "" {
		c.p.addValue(v, "%s is not a Redis URL (%s); write e.g. redis://127.0.0.1:6379/0, or remove the key to keep state in gateway.state_dir", shown, why)
		return ""
	}
	return s
}

func isDigits(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && strings.Trim(s, "0123456789") == ""
}
