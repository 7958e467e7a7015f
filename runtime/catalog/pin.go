package catalog

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
)

// AcceptCommand is what accepts held-back drift: it records the live
// backends into manifests/ (for a pull request to review) and compiles
// them in; the rebuilt kiln serves them.
const AcceptCommand = "make generate"

// Review is what a backend's listing says about its review.
const (
	// ReviewCompiled: its manifest was reviewed and compiled in, so its
	// drift mode applies.
	ReviewCompiled = "compiled manifest"
	// ReviewNotCompiled: declared in the config but not compiled in.
	ReviewNotCompiled = "none (not compiled in)"
	// ReviewRuntime: added by register_manual.
	ReviewRuntime = "none (registered at run time)"
	// ReviewWorkspace: kiln's own tools, served from its source.
	ReviewWorkspace = "none needed (kiln's own workspace tools, served from source)"
)

// Review says how a backend's tools are reviewed and the drift mode they
// are served under: a backend with no review follows its live lists
// whatever the config says, since there is nothing to pin to.
func (c *Catalog) Review(name string) (review string, mode config.DriftMode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reviewOf(name), c.modeOf(name)
}

// reviewOf is Review's first answer. Called with c.mu held.
func (c *Catalog) reviewOf(name string) string {
	switch {
	case c.dynamic[name] != nil || c.pending[name]:
		return ReviewRuntime
	case c.reviewed[name]:
		return ReviewCompiled
	}
	if m := c.compiled[name]; m != nil && m.Transport == config.TransportWorkspace {
		return ReviewWorkspace
	}
	return ReviewNotCompiled
}

// modeOf is the drift mode backend name is served under: the start-up
// config's for a reviewed backend (a reload's change waits for the next
// start, as SetConfig logs), follow for the rest. Called with c.mu held.
func (c *Catalog) modeOf(name string) config.DriftMode {
	if !c.reviewed[name] || c.dynamic[name] != nil {
		return config.DriftFollow
	}
	mode, _ := c.opts.Config.DriftMode(name)
	return mode
}

// noteModeChanges logs each reviewed backend whose drift mode cfg (a
// reload) changes: pinning is decided at start. Called with c.mu held.
func (c *Catalog) noteModeChanges(cfg *config.Config) {
	for _, name := range slices.Sorted(maps.Keys(c.reviewed)) {
		was, _ := c.opts.Config.DriftMode(name)
		now, _ := cfg.DriftMode(name)
		if was != now {
			c.log.Warn("this config change takes effect when kiln restarts", "key", "drift", "backend", name, "running", string(was), "configured", string(now))
		}
	}
}

// heldTools are the reasons Registry.Resolve gives for tools held back
// under pin, so a call by name is told why, not "no such tool".
func heldTools(backend string, names []string) map[string]string {
	if len(names) == 0 {
		return nil
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		out[n] = HeldMessage(backend, n)
	}
	return out
}

// HeldMessage is what a model is told when it calls a tool held back
// under pin: why it cannot, who can change that and how.
func HeldMessage(backend, tool string) string {
	return fmt.Sprintf("%s.%s is held back pending review: backend %q offers it, but it is not in the reviewed manifest kiln was built with (drift: pin), so kiln does not serve it. "+
		"Do not retry it; use the backend's reviewed tools (search_tools finds them; with expose: direct, tools/list lists them). A person can review the change with `kiln-gen diff` and accept it with `%s`, then rebuild and restart kiln.",
		backend, tool, backend, AcceptCommand)
}

// HeldOfferMessage is HeldMessage for a resource or prompt held back
// under pin; item is "prompt NAME" or "resource URI".
func HeldOfferMessage(backend, item string) string {
	return fmt.Sprintf("%s of backend %q is held back pending review: the backend offers it, but it is not in the reviewed manifest kiln was built with (drift: pin), so kiln does not serve it. "+
		"Do not retry it; use the backend's reviewed resources and prompts (resources/list, prompts/list). A person can review the change with `kiln-gen diff` and accept it with `%s`, then rebuild and restart kiln.",
		item, backend, AcceptCommand)
}

// Offer is what a backend lists besides tools.
type Offer struct {
	Resources []manifest.Resource
	Templates []manifest.ResourceTemplate
	Prompts   []manifest.Prompt
}

// ServeOffer returns what clients are shown of a backend's live
// resources, resource templates and prompts, and records how they differ
// from the reviewed manifest: under pin the reviewed lists exactly (a new
// item is not listed, so it cannot be read or got; a changed or removed
// one is listed as reviewed); under warn and follow, and for a backend
// with no review, the live lists. Drift is logged once per change.
func (c *Catalog) ServeOffer(name string, live Offer) Offer {
	c.mu.Lock()
	defer c.mu.Unlock()
	compiled, ok := c.compiled[name]
	if !ok || !c.reviewed[name] || c.dynamic[name] != nil {
		return live
	}
	reviewed := Offer{compiled.Resources, compiled.ResourceTemplates, compiled.Prompts}
	d := compareOffer(reviewed, live)
	old, had := c.offerDrift[name]
	mode := c.modeOf(name)
	switch {
	case d == nil && had:
		delete(c.offerDrift, name)
		delete(c.lastOffer, name)
		c.log.Info("backend resources and prompts match the compiled manifest again", "backend", name)
		c.event("drift", name, "resources and prompts match the reviewed manifest again")
	case d != nil:
		if had {
			d.Since = old.Since
		}
		c.offerDrift[name] = *d
		last, seen := c.lastOffer[name]
		if !seen || compareOffer(last, live) != nil {
			c.logOfferDrift(name, mode, *d)
		}
		c.lastOffer[name] = live
	}
	if d != nil && mode == config.DriftPin {
		return reviewed
	}
	return live
}

func (c *Catalog) logOfferDrift(name string, mode config.DriftMode, d OfferDrift) {
	summary := Drift{Offer: &d}.String()
	c.event("drift", name, "resources or prompts ("+string(mode)+"): "+summary)
	switch mode {
	case config.DriftPin:
		c.log.Warn("backend resources or prompts drifted from the reviewed manifest; holding the changes back and serving the reviewed lists (gateway.drift: pin). Review with `kiln-gen diff`, accept with `"+AcceptCommand+"`",
			"backend", name, "held_back", strings.Join(slices.Concat(d.Added, d.Changed), ","), "drift", summary)
	case config.DriftWarn:
		c.log.Warn("backend resources or prompts differ from the compiled manifest; serving the live lists (drift: warn). Review with `kiln-gen diff`, compile them in with `"+AcceptCommand+"`",
			"backend", name, "drift", summary)
	default:
		c.log.Debug("backend resources or prompts drifted; serving the live lists (drift: follow)", "backend", name, "drift", summary)
	}
}

// compareOffer returns how live differs from reviewed, items matched by
// URI, URI template or name and compared in canonical JSON; nil when they
// match.
func compareOffer(reviewed, live Offer) *OfferDrift {
	d := &OfferDrift{Since: time.Now()}
	diffItems(d, "resource ", reviewed.Resources, live.Resources, func(r manifest.Resource) string { return r.URI })
	diffItems(d, "resource template ", reviewed.Templates, live.Templates, func(t manifest.ResourceTemplate) string { return t.URITemplate })
	diffItems(d, "prompt ", reviewed.Prompts, live.Prompts, func(p manifest.Prompt) string { return p.Name })
	if len(d.Added)+len(d.Removed)+len(d.Changed) == 0 {
		return nil
	}
	return d
}

func diffItems[T any](d *OfferDrift, label string, reviewed, live []T, key func(T) string) {
	old := map[string]T{}
	for _, it := range reviewed {
		old[key(it)] = it
	}
	seen := map[string]bool{}
	var added, changed, removed []string
	for _, it := range live {
		k := key(it)
		seen[k] = true
		o, ok := old[k]
		switch {
		case !ok:
			added = append(added, label+k)
		case !sameItem(o, it):
			changed = append(changed, label+k)
		}
	}
	for _, it := range reviewed {
		if !seen[key(it)] {
			removed = append(removed, label+key(it))
		}
	}
	slices.Sort(added)
	slices.Sort(changed)
	slices.Sort(removed)
	d.Added = append(d.Added, added...)
	d.Changed = append(d.Changed, changed...)
	d.Removed = append(d.Removed, removed...)
}

// sameItem compares two list items in canonical JSON.
func sameItem[T any](a, b T) bool {
	ea, errA := json.Marshal(a)
	eb, errB := json.Marshal(b)
	return errA == nil && errB == nil && sameJSON(ea, eb)
}

// addedParams returns, for each changed tool, the top-level parameters its
// live input schema declares and its reviewed one does not: under pin a
// call passing one is refused (Registry.HeldArgs), although the reviewed
// schema, which rarely forbids extra properties, would let it through to
// a backend that now reads it (issue 27: "pass its contents as note").
func addedParams(reviewed, live []manifest.Tool, changed []string) map[string][]string {
	props := func(schema json.RawMessage) map[string]bool {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(schema, &s)
		out := map[string]bool{}
		for k := range s.Properties {
			out[k] = true
		}
		return out
	}
	byName := func(ts []manifest.Tool, name string) *manifest.Tool {
		for i := range ts {
			if ts[i].Name == name {
				return &ts[i]
			}
		}
		return nil
	}
	out := map[string][]string{}
	for _, name := range changed {
		r, l := byName(reviewed, name), byName(live, name)
		if r == nil || l == nil {
			continue
		}
		had := props(r.InputSchema)
		for _, p := range slices.Sorted(maps.Keys(props(l.InputSchema))) {
			if !had[p] {
				out[name] = append(out[name], p)
			}
		}
	}
	return out
}
