package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/toolcall"
)

// Tool is what a decision needs of a tool: its ID and recorded annotations.
type Tool struct {
	Backend, Name string
	// Annotations is the tool's recorded annotations object, or nil.
	Annotations json.RawMessage
	// Unlisted marks a tool the registry does not know yet (a backend
	// still listing): its annotations are unknown, so a rule with an
	// annotations condition may deny it but never allows it.
	Unlisted bool
}

// ID is the tool's backend.tool.
func (t Tool) ID() string { return t.Backend + "." + t.Name }

// Decision is the outcome for one identity and tool, and why.
type Decision struct {
	Allowed bool
	// Rule is the index of the deciding rule in policies, or -1 when no
	// rule decided (the default).
	Rule int
	// Name is the deciding rule's name; "" for the default.
	Name string
	// Glob is the allow or deny pattern that matched.
	Glob string
	// Why says in words how the decision was reached, for explain.
	Why string
}

// rule is one compiled policy.
type rule struct {
	src     config.Policy
	kind    string
	subject *glob
	claims  []claimCond
	ann     map[string]bool
	allow   globs
	deny    globs
}

type claimCond struct {
	name   string
	values []string
}

// Set is a compiled policy list. A nil *Set allows everything.
type Set struct {
	rules []rule
	// closed is true when some rule decides access, so no decision means
	// denied; a list of limits only leaves access open.
	closed bool
	// limited is true when some rule sets a limit.
	limited bool
	// ann caches tools' parsed annotations by their raw text, so a call is
	// not charged a JSON decode.
	ann sync.Map // string → map[string]bool
}

// Compile builds the Set of ps; nil when ps is empty, which allows all.
func Compile(ps []config.Policy) *Set {
	if len(ps) == 0 {
		return nil
	}
	s := &Set{}
	for _, p := range ps {
		r := rule{src: p, kind: p.Match.Kind, ann: p.Annotations, allow: compileGlobs(p.Allow), deny: compileGlobs(p.Deny)}
		if p.Match.Subject != "" {
			g := compileGlob(p.Match.Subject)
			r.subject = &g
		}
		for name, vals := range p.Match.Claims {
			r.claims = append(r.claims, claimCond{name: name, values: vals})
		}
		s.closed = s.closed || p.Decides()
		s.limited = s.limited || p.Limits()
		s.rules = append(s.rules, r)
	}
	return s
}

// Active reports whether the set restricts access at all.
func (s *Set) Active() bool { return s != nil && s.closed }

// Limited reports whether some rule sets a limit.
func (s *Set) Limited() bool { return s != nil && s.limited }

// Allows reports whether id may use t.
func (s *Set) Allows(id toolcall.Identity, t Tool) bool {
	if !s.Active() {
		return true
	}
	return s.decide(id, t, false).Allowed
}

// Decide returns the decision for id and t with its reasons.
func (s *Set) Decide(id toolcall.Identity, t Tool) Decision {
	if !s.Active() {
		return Decision{Allowed: true, Rule: -1, Why: "no allow or deny rules are configured: every tool is allowed"}
	}
	return s.decide(id, t, true)
}

func (s *Set) decide(id toolcall.Identity, t Tool, explain bool) Decision {
	var toolID string
	var ann map[string]bool
	annRead := false
	var skipped []string
	for i := range s.rules {
		r := &s.rules[i]
		if len(r.allow) == 0 && len(r.deny) == 0 {
			continue
		}
		if !r.selects(id) {
			if explain {
				skipped = append(skipped, fmt.Sprintf("%s: %s", r.src.Name, r.whyNot(id)))
			}
			continue
		}
		if len(r.ann) > 0 && t.Unlisted {
			if toolID == "" {
				toolID = t.ID()
			}
			if g, ok := r.deny.first(toolID); ok {
				d := Decision{Rule: i, Name: r.src.Name, Glob: g}
				if explain {
					d.Why = reasons(skipped, fmt.Sprintf("%s denies %s (deny glob %q; its annotations are not known yet)", r.src.Name, toolID, g))
				}
				return d
			}
			continue
		}
		if len(r.ann) > 0 {
			if !annRead {
				ann, annRead = s.annotations(t.Annotations), true
			}
			if k, ok := r.annotationsHold(ann); !ok {
				if explain {
					skipped = append(skipped, fmt.Sprintf("%s: annotation %s is not %t", r.src.Name, k, r.ann[k]))
				}
				continue
			}
		}
		if toolID == "" {
			toolID = t.ID()
		}
		if g, ok := r.deny.first(toolID); ok {
			d := Decision{Rule: i, Name: r.src.Name, Glob: g}
			if explain {
				d.Why = reasons(skipped, fmt.Sprintf("%s denies %s (deny glob %q)", r.src.Name, toolID, g))
			}
			return d
		}
		if g, ok := r.allow.first(toolID); ok {
			d := Decision{Allowed: true, Rule: i, Name: r.src.Name, Glob: g}
			if explain {
				d.Why = reasons(skipped, fmt.Sprintf("%s allows %s (allow glob %q)", r.src.Name, toolID, g))
			}
			return d
		}
		if explain {
			skipped = append(skipped, fmt.Sprintf("%s: selects the identity but no glob names %s", r.src.Name, t.ID()))
		}
	}
	d := Decision{Rule: -1}
	if explain {
		d.Why = reasons(skipped, "no rule decides, so the tool is denied (policies are an allow list)")
	}
	return d
}

func reasons(skipped []string, last string) string {
	if len(skipped) == 0 {
		return last
	}
	return "skipped " + strings.Join(skipped, "; ") + "; then " + last
}

// selects reports whether r's match selects id; no text is built on
// this path, which every call takes once per rule.
func (r *rule) selects(id toolcall.Identity) bool {
	if r.kind != "" && r.kind != id.Kind {
		return false
	}
	if r.subject != nil && !r.subject.match(id.Subject) {
		return false
	}
	for _, c := range r.claims {
		for _, v := range c.values {
			if !claimContains(id.Claims[c.name], v) {
				return false
			}
		}
	}
	return true
}

// whyNot says why r's match does not select id, for explain.
func (r *rule) whyNot(id toolcall.Identity) string {
	if r.kind != "" && r.kind != id.Kind {
		return fmt.Sprintf("kind is %q, not %q", id.Kind, r.kind)
	}
	if r.subject != nil && !r.subject.match(id.Subject) {
		return fmt.Sprintf("subject %q does not match %q", id.Subject, r.subject.src)
	}
	for _, c := range r.claims {
		for _, v := range c.values {
			if !claimContains(id.Claims[c.name], v) {
				return fmt.Sprintf("claim %s does not contain %q", c.name, v)
			}
		}
	}
	return ""
}

// claimContains reports whether claim value c contains v: an element of
// an array, a word of a space-separated string (OAuth's scope), or the
// JSON text of anything else.
func claimContains(c any, v string) bool {
	switch c := c.(type) {
	case nil:
		return false
	case string:
		if c == v {
			return true
		}
		for w := range strings.FieldsSeq(c) {
			if w == v {
				return true
			}
		}
		return false
	case []any:
		for _, e := range c {
			if claimContains(e, v) {
				return true
			}
		}
		return false
	case []string:
		for _, e := range c {
			if e == v {
				return true
			}
		}
		return false
	default:
		b, err := json.Marshal(c)
		return err == nil && string(b) == v
	}
}

// annotationsHold reports whether every hint r names has its value in
// ann, or else the first that does not.
func (r *rule) annotationsHold(ann map[string]bool) (string, bool) {
	for k, want := range r.ann {
		if ann[k] != want {
			return k, false
		}
	}
	return "", true
}

// annotations parses a tool's boolean hints, cached by their text.
func (s *Set) annotations(raw json.RawMessage) map[string]bool {
	if len(raw) == 0 {
		return nil
	}
	if m, ok := s.ann.Load(string(raw)); ok {
		return m.(map[string]bool)
	}
	var all map[string]any
	out := map[string]bool{}
	if json.Unmarshal(raw, &all) == nil {
		for k, v := range all {
			if b, ok := v.(bool); ok {
				out[k] = b
			}
		}
	}
	s.ann.Store(string(raw), out)
	return out
}

// limitsFor returns the first rule selecting id that sets a limit.
func (s *Set) limitsFor(id toolcall.Identity) (config.Policy, bool) {
	if !s.Limited() {
		return config.Policy{}, false
	}
	for i := range s.rules {
		r := &s.rules[i]
		if r.src.Limits() && r.selects(id) {
			return r.src, true
		}
	}
	return config.Policy{}, false
}

// LimitsFor returns the rule that gives id its limits, for explain.
func (s *Set) LimitsFor(id toolcall.Identity) (config.Policy, bool) { return s.limitsFor(id) }

// ResourceKey and PromptKey are how rules' globs name a backend resource
// (by URI or URI template) and a backend prompt: "resource:URI" and
// "prompt:backend.name", so "*" covers them and "github.*" does not.
func ResourceKey(uri string) string         { return "resource:" + uri }
func PromptKey(backend, name string) string { return "prompt:" + backend + "." + name }

// AllowsKey reports whether id may use the resource or prompt key names
// (ResourceKey, PromptKey). Rules with an annotations condition are about
// tools and never decide one.
func (s *Set) AllowsKey(id toolcall.Identity, key string) bool {
	if !s.Active() {
		return true
	}
	for i := range s.rules {
		r := &s.rules[i]
		if len(r.ann) > 0 || len(r.allow) == 0 && len(r.deny) == 0 || !r.selects(id) {
			continue
		}
		if _, ok := r.deny.first(key); ok {
			return false
		}
		if _, ok := r.allow.first(key); ok {
			return true
		}
	}
	return false
}
