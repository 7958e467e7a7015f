package catalog

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/manifest"
)

// Drift is how a backend's live tools (and, in Offer, its resources,
// resource templates and prompts) differ from the reviewed manifest, and
// what kiln does about it.
type Drift struct {
	Since   time.Time
	Added   []string
	Removed []string
	Changed []string // description, schema, annotations or title differ
	// Mode is the drift mode the backend is served under: under
	// config.DriftPin the added tools and the live versions of the
	// changed ones are held back; under warn and follow they are served.
	Mode config.DriftMode
	// Offer is the drift of resources, templates and prompts, nil when
	// they match (or the server has not listed them).
	Offer *OfferDrift
}

// OfferDrift is how a backend's live resources, resource templates and
// prompts differ from the reviewed ones, each named "resource URI",
// "resource template URI-TEMPLATE" or "prompt NAME".
type OfferDrift struct {
	Since                   time.Time
	Added, Removed, Changed []string
}

// String summarizes the drift in one line.
func (d Drift) String() string {
	var parts []string
	lists := []struct {
		what  string
		names []string
	}{{"added", d.Added}, {"removed", d.Removed}, {"changed", d.Changed}}
	if d.Offer != nil {
		lists = append(lists, []struct {
			what  string
			names []string
		}{{"added", d.Offer.Added}, {"removed", d.Offer.Removed}, {"changed", d.Offer.Changed}}...)
	}
	for _, p := range lists {
		if len(p.names) > 0 {
			parts = append(parts, p.what+" "+strings.Join(p.names, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// Drifts returns the current drift of every drifted backend.
func (c *Catalog) Drifts() map[string]Drift {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Drift, len(c.drift)+len(c.offerDrift))
	for k, v := range c.drift {
		out[k] = v
	}
	for k, o := range c.offerDrift {
		d, ok := out[k]
		if !ok {
			d = Drift{Since: o.Since, Mode: c.modeOf(k)}
		}
		d.Offer = &o
		out[k] = d
	}
	return out
}

// Refresh lists a backend's tools and serves them as its drift mode says
// (pin.go): for a compiled backend under pin the reviewed tools stay and
// the live changes are held back; under warn and follow, and for a
// backend with no review, the live list replaces the compiled one while
// they differ. Drift is recorded and logged once per change. Connects and
// tools/list_changed notifications call it.
func (c *Catalog) Refresh(ctx context.Context, name string) error {
	mu, _ := c.refreshing.LoadOrStore(name, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	c.mu.Lock()
	registering := c.pending[name]
	c.mu.Unlock()
	if registering {
		return nil // Register records the tools it lists itself
	}
	tools, err := c.opts.Backends.Tools(ctx, name)
	if err != nil {
		return fmt.Errorf("refresh %s: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.dynamic[name]; ok {
		b, ok := c.opts.Registry.Backend(name)
		if !ok {
			return nil // still connecting: Register records its tools
		}
		m := *b.Manifest
		m.Tools = tools
		served, hidden := c.screenedLocked(&m)
		c.opts.Registry.Replace(served)
		c.opts.Registry.Hold(name, hidden)
		c.publishLocked()
		c.log.Info("runtime backend tools refreshed", "backend", name, "tools", len(tools))
		return nil
	}
	compiled, ok := c.compiled[name]
	if !ok {
		return nil // deregistered meanwhile
	}
	d := compare(compiled.Tools, tools)
	_, had := c.drift[name]
	if d == nil && !had {
		return nil
	}
	mode := c.modeOf(name)
	if d == nil {
		delete(c.drift, name)
		delete(c.lastLive, name)
		c.opts.Registry.Replace(compiled)
		c.opts.Registry.Hold(name, nil)
		c.opts.Registry.HoldParams(name, nil)
		c.log.Info("backend tools match the compiled manifest again", "backend", name)
		c.event("drift", name, "tools match the reviewed manifest again")
		c.publishLocked()
		return nil
	}
	if old, ok := c.drift[name]; ok {
		d.Since = old.Since
	}
	d.Mode = mode
	c.drift[name] = *d
	news := c.lastLive[name] == nil || compare(c.lastLive[name], tools) != nil
	c.lastLive[name] = tools
	if mode == config.DriftPin {
		// The reviewed tools stay as they are: new ones are not served,
		// changed and removed ones are served as reviewed.
		c.opts.Registry.Replace(compiled)
		c.opts.Registry.Hold(name, heldTools(name, d.Added))
		c.opts.Registry.HoldParams(name, addedParams(compiled.Tools, tools, d.Changed))
	} else {
		c.serveLiveLocked(name, compiled, tools)
	}
	if news {
		c.logDrift(name, compiled, *d)
	}
	c.publishLocked()
	return nil
}

// serveLiveLocked serves a compiled backend's live tools in place of its
// compiled ones (warn, follow, or no review). Called with c.mu held.
func (c *Catalog) serveLiveLocked(name string, compiled *manifest.Manifest, tools []manifest.Tool) {
	m := *compiled
	m.Tools = tools
	var reviewed []manifest.Tool
	if c.reviewed[name] {
		reviewed = compiled.Tools
	}
	var hidden map[string]string
	if compiled.Transport != config.TransportWorkspace {
		// Unreviewed tools are screened for poisoning (screen.go); kiln's
		// own workspace tools are served from its source.
		m.Tools, hidden = c.screenLocked(name, tools, reviewed)
	}
	c.opts.Registry.Replace(&m)
	c.opts.Registry.Hold(name, hidden)
	c.opts.Registry.HoldParams(name, nil)
}

// logDrift says once per change of the live list what kiln does with it.
func (c *Catalog) logDrift(name string, compiled *manifest.Manifest, d Drift) {
	if compiled.Transport != config.TransportWorkspace {
		c.event("drift", name, "tools ("+string(d.Mode)+"): "+d.String())
	}
	switch {
	case compiled.Transport == config.TransportWorkspace:
		// Kiln's own workspace tools: served from source, nothing to compile.
		c.log.Info("workspace tools served", "backend", name, "tools", len(compiled.Tools)+len(d.Added)-len(d.Removed))
	case !c.reviewed[name]:
		c.log.Info("backend not compiled in: serving its live tools, which no one reviewed (run `make generate` to record and compile them in)",
			"backend", name, "drift", d.String())
	case d.Mode == config.DriftPin:
		c.log.Warn("backend tools drifted from the reviewed manifest; holding the changes back and serving the reviewed tools (gateway.drift: pin). Review with `kiln-gen diff`, accept with `"+AcceptCommand+"`",
			"backend", name, "held_back", strings.Join(slices.Concat(d.Added, d.Changed), ","), "drift", d.String())
	case d.Mode == config.DriftWarn:
		c.log.Warn("backend tools drifted from the compiled manifest; serving the live list (drift: warn). Review with `kiln-gen diff`, compile it in with `"+AcceptCommand+"`",
			"backend", name, "drift", d.String())
	default:
		c.log.Debug("backend tools drifted; serving the live list (drift: follow)", "backend", name, "drift", d.String())
	}
}

// compare returns how live differs from compiled, or nil when it does
// not.
func compare(compiled, live []manifest.Tool) *Drift {
	old := map[string]manifest.Tool{}
	for _, t := range compiled {
		old[t.Name] = t
	}
	d := &Drift{Since: time.Now()}
	seen := map[string]bool{}
	for _, t := range live {
		seen[t.Name] = true
		o, ok := old[t.Name]
		switch {
		case !ok:
			d.Added = append(d.Added, t.Name)
		case !sameTool(o, t):
			d.Changed = append(d.Changed, t.Name)
		}
	}
	for _, t := range compiled {
		if !seen[t.Name] {
			d.Removed = append(d.Removed, t.Name)
		}
	}
	if len(d.Added)+len(d.Removed)+len(d.Changed) == 0 {
		return nil
	}
	slices.Sort(d.Added)
	slices.Sort(d.Removed)
	slices.Sort(d.Changed)
	return d
}

func sameTool(a, b manifest.Tool) bool {
	return a.Title == b.Title && a.Description == b.Description &&
		sameJSON(a.InputSchema, b.InputSchema) && sameJSON(a.OutputSchema, b.OutputSchema) &&
		sameJSON(a.Annotations, b.Annotations) && sameJSON(a.Execution, b.Execution) && sameJSON(a.Icons, b.Icons)
}

// sameJSON compares canonical forms, so key order and spacing do not count
// as drift.
func sameJSON(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	ca, errA := manifest.Canonical(a)
	cb, errB := manifest.Canonical(b)
	if errA != nil || errB != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca, cb)
}
