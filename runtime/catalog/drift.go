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

// Drift is how a backend's live tools differ from the compiled manifest.
type Drift struct {
	Since   time.Time
	Added   []string
	Removed []string
	Changed []string // description, schema, annotations or title differ
}

// String summarizes the drift in one line.
func (d Drift) String() string {
	var parts []string
	for _, p := range []struct {
		what  string
		names []string
	}{{"added", d.Added}, {"removed", d.Removed}, {"changed", d.Changed}} {
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
	out := make(map[string]Drift, len(c.drift))
	for k, v := range c.drift {
		out[k] = v
	}
	return out
}

// Refresh lists a backend's tools and serves them: for a compiled backend
// the live list replaces the compiled one while they differ, and drift is
// recorded and logged; a dynamic backend's tools are replaced. Connects
// and tools/list_changed notifications call it.
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
		c.opts.Registry.Replace(&m)
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
	switch {
	case d == nil && !had:
		return nil
	case d == nil:
		delete(c.drift, name)
		c.opts.Registry.Replace(compiled)
		c.log.Info("backend tools match the compiled manifest again", "backend", name)
	default:
		if old, ok := c.drift[name]; ok {
			d.Since = old.Since
		}
		c.drift[name] = *d
		m := *compiled
		m.Tools = tools
		c.opts.Registry.Replace(&m)
		if compiled.Transport == config.TransportWorkspace && len(compiled.Tools) == 0 {
			// Kiln's own workspace tools: served from source, nothing to compile.
			c.log.Info("workspace tools served", "backend", name, "tools", len(tools))
		} else {
			c.log.Warn("backend tools drifted from the compiled manifest; serving the live list (run `make generate` to compile it in, `kiln-gen diff` to review)",
				"backend", name, "drift", d.String())
		}
	}
	c.publishLocked()
	return nil
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
