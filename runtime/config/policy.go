package config

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Identity kinds a policy's match.kind may name; toolcall.Identity.Kind
// holds one of them.
const (
	KindJWT   = "jwt"
	KindToken = "token"
	KindLocal = "local"
	KindAddr  = "addr"
	// KindOIDC is a person logged in to the console through its OpenID
	// provider (gateway.console.oidc): subject and claims are the ID
	// token's, from another issuer than the front door's JWTs.
	KindOIDC = "oidc"
)

// IdentityKinds are the values match.kind accepts.
var IdentityKinds = []string{KindJWT, KindToken, KindLocal, KindAddr, KindOIDC}

// Policy is one rule of the top-level policies list (runtime/policy
// compiles and applies them; docs/policy.md says what they mean).
type Policy struct {
	// Name labels the rule in kiln policy explain and logs; "policies[i]"
	// when the file gives none.
	Name string
	// Line is where the rule starts in the file, for explain.
	Line  int
	Match PolicyMatch
	// Annotations, when set, restrict the rule to tools whose recorded
	// annotations have every one of these boolean hints at these values
	// (a hint a tool does not record counts as false).
	Annotations map[string]bool
	// Allow and Deny are globs over backend.tool (* matches any run);
	// within a rule, Deny is read first.
	Allow, Deny []string
	// Rate is calls per second the identity may start (0: no rate limit),
	// Burst how many it may start at once (default: Rate rounded up).
	Rate  float64
	Burst int
	// MaxInFlight is how many of the identity's calls may run at once
	// (0: no limit).
	MaxInFlight int
}

// PolicyMatch selects identities; an empty match selects every one.
type PolicyMatch struct {
	// Kind is one of IdentityKinds, or "" for any.
	Kind string
	// Subject is a glob over the identity's subject, or "" for any.
	Subject string
	// Claims maps a claim name to values the claim must all contain: an
	// array claim contains its elements, a string claim its
	// space-separated words (OAuth's scope), any other claim its JSON text.
	Claims map[string][]string
}

// Limits reports whether the rule sets a rate or max_in_flight.
func (p Policy) Limits() bool { return p.Rate > 0 || p.MaxInFlight > 0 }

// Decides reports whether the rule allows or denies tools at all.
func (p Policy) Decides() bool { return len(p.Allow) > 0 || len(p.Deny) > 0 }

var (
	policyKeys = []string{"name", "match", "annotations", "allow", "deny", "rate", "burst", "max_in_flight"}
	matchKeys  = []string{"kind", "subject", "claims"}
)

// maxRate bounds policies[].rate: beyond it a limit limits nothing.
const maxRate = 1e6

// policies parses the top-level policies list. Policies are not expanded
// (${VAR} stays as written): who may call what is read from the file alone.
func (pr parser) policies(e entry) []Policy {
	if isNull(e.val) {
		return nil
	}
	if e.val.Kind != yaml.SequenceNode {
		pr.p.add(e.val.Line, "policies", "is %s; want a list of rules such as [{match: {kind: jwt}, allow: [\"*\"]}]", kind(e.val))
		return nil
	}
	var out []Policy
	for i, n := range e.val.Content {
		if p, ok := pr.policy(deref(n), "policies["+strconv.Itoa(i)+"]"); ok {
			out = append(out, p)
		}
	}
	return out
}

func (pr parser) policy(n *yaml.Node, path string) (Policy, bool) {
	p := Policy{Name: path}
	if n == nil || n.Kind != yaml.MappingNode {
		pr.p.add(lineOf(n), path, "is %s; want a mapping with match and allow, deny, rate or max_in_flight", kind(n))
		return p, false
	}
	p.Line = n.Line
	before := len(pr.p.list)
	ents, _ := pr.entries(n, path)
	burst := false
	for _, s := range ents {
		kp := keyPath(path, s.key.Value)
		switch s.key.Value {
		case "name":
			if pr.scalar(s.val, kp) {
				p.Name = s.val.Value
			}
		case "match":
			p.Match = pr.policyMatch(s.val, kp)
		case "annotations":
			p.Annotations = pr.boolMap(s.val, kp)
		case "allow":
			p.Allow = pr.globList(s.val, kp)
		case "deny":
			p.Deny = pr.globList(s.val, kp)
		case "rate":
			if pr.scalar(s.val, kp) {
				r, err := strconv.ParseFloat(s.val.Value, 64)
				if err != nil || math.IsNaN(r) || r <= 0 || r > maxRate {
					pr.p.add(s.val.Line, kp, "%q is not a rate; give calls per second above 0 and at most %g, such as 5 or 0.5", s.val.Value, float64(maxRate))
				} else {
					p.Rate = r
				}
			}
		case "burst":
			burst = true
			p.Burst = pr.count(s.val, kp)
		case "max_in_flight":
			p.MaxInFlight = pr.count(s.val, kp)
		default:
			pr.unknown(s.key, path, policyKeys)
		}
	}
	if len(pr.p.list) > before {
		return p, false
	}
	switch {
	case burst && p.Rate == 0:
		pr.p.add(n.Line, path+".burst", "burst needs rate; add rate (calls per second) or remove burst")
		return p, false
	case !p.Decides() && !p.Limits():
		pr.p.add(n.Line, path, "the rule does nothing; give it allow or deny globs over backend.tool, or rate or max_in_flight")
		return p, false
	}
	if p.Rate > 0 && p.Burst == 0 {
		p.Burst = int(math.Ceil(p.Rate))
	}
	return p, true
}

func (pr parser) policyMatch(n *yaml.Node, path string) PolicyMatch {
	var m PolicyMatch
	if isNull(n) {
		return m
	}
	if n.Kind != yaml.MappingNode {
		pr.p.add(n.Line, path, "is %s; want a mapping of kind, subject and claims", kind(n))
		return m
	}
	ents, _ := pr.entries(n, path)
	for _, s := range ents {
		kp := keyPath(path, s.key.Value)
		switch s.key.Value {
		case "kind":
			if pr.scalar(s.val, kp) {
				if !slices.Contains(IdentityKinds, s.val.Value) {
					pr.p.add(s.val.Line, kp, "%q is not an identity kind; use one of %s", s.val.Value, listOr(IdentityKinds))
				}
				m.Kind = s.val.Value
			}
		case "subject":
			if pr.scalar(s.val, kp) {
				m.Subject = s.val.Value
			}
		case "claims":
			m.Claims = pr.claims(s.val, kp)
		default:
			pr.unknown(s.key, path, matchKeys)
		}
	}
	return m
}

// claims reads claim: value or claim: [values].
func (pr parser) claims(n *yaml.Node, path string) map[string][]string {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		pr.p.add(n.Line, path, "is %s; want a mapping of claim names to values, such as {groups: [ci]}", kind(n))
		return nil
	}
	ents, _ := pr.entries(n, path)
	out := map[string][]string{}
	for _, s := range ents {
		kp := keyPath(path, s.key.Value)
		if s.val.Kind == yaml.ScalarNode && !isNull(s.val) {
			out[s.key.Value] = []string{s.val.Value}
			continue
		}
		if pr.list(s.val, kp) && !isNull(s.val) {
			for _, v := range s.val.Content {
				out[s.key.Value] = append(out[s.key.Value], deref(v).Value)
			}
		}
		if len(out[s.key.Value]) == 0 {
			pr.p.add(s.val.Line, kp, "no value; give the value the claim must contain, or a list of them")
		}
	}
	return out
}

func (pr parser) boolMap(n *yaml.Node, path string) map[string]bool {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		pr.p.add(n.Line, path, "is %s; want a mapping of annotation hints to true or false, such as {destructiveHint: true}", kind(n))
		return nil
	}
	ents, _ := pr.entries(n, path)
	out := map[string]bool{}
	for _, s := range ents {
		kp := keyPath(path, s.key.Value)
		if !pr.scalar(s.val, kp) {
			continue
		}
		v, err := strconv.ParseBool(s.val.Value)
		if err != nil || s.val.ShortTag() != "!!bool" {
			pr.p.add(s.val.Line, kp, "%q is not true or false", s.val.Value)
			continue
		}
		out[s.key.Value] = v
	}
	return out
}

// globList reads a list of globs over backend.tool.
func (pr parser) globList(n *yaml.Node, path string) []string {
	if !pr.list(n, path) || isNull(n) {
		return nil
	}
	var out []string
	for i, v := range n.Content {
		g := strings.TrimSpace(deref(v).Value)
		if g == "" {
			pr.p.add(v.Line, path+"["+strconv.Itoa(i)+"]", `empty glob; write backend.tool, backend.* or "*"`)
			continue
		}
		out = append(out, g)
	}
	return out
}

func (pr parser) count(n *yaml.Node, path string) int {
	if !pr.scalar(n, path) {
		return 0
	}
	c, err := strconv.Atoi(n.Value)
	if err != nil || c < 1 || c > 1_000_000 {
		pr.p.add(n.Line, path, "%q is not a count; give a whole number from 1 to 1000000", n.Value)
		return 0
	}
	return c
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}
