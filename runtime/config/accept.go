package config

import (
	"regexp"
	"strconv"
)

// findingKey is the shape of an accept_findings entry, RULE@SUBJECT. The
// rule IDs themselves live in runtime/poison, which the generator and the
// catalog check the entries against (an entry matching nothing is reported
// there as stale); the config only holds the shape, so it need not import
// the checks.
var findingKey = regexp.MustCompile(`^[a-z][a-z-]*@\S+$`)

// acceptFindings reads backends.NAME.accept_findings.
func (b *builder) acceptFindings(rb *rawBackend, path string) []string {
	e, ok := rb.keys["accept_findings"]
	if !ok {
		return nil
	}
	var out []string
	for i, n := range e.val.Content {
		v := b.node(path+".accept_findings["+strconv.Itoa(i)+"]", deref(n))
		if !findingKey.MatchString(v.s) {
			b.p.addValue(v, "want RULE@TOOL as a SUSPICIOUS line names it, e.g. exfil-url@lookup")
			continue
		}
		out = append(out, v.s)
	}
	return out
}

// AcceptedFindings returns every backend's accept_findings, by backend
// name, for runtime/poison.Accept.
func (c *Config) AcceptedFindings() map[string][]string {
	out := map[string][]string{}
	for _, b := range c.Backends {
		if len(b.AcceptFindings) > 0 {
			out[b.Name] = b.AcceptFindings
		}
	}
	return out
}
