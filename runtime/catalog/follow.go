package catalog

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// followResync is how often a replica compares its registrations with the
// shared store even without a change notice.
const followResync = 5 * time.Second

// Follow keeps this replica's runtime registrations equal to a shared
// store's until ctx ends: a backend another replica registers is added
// (from its recorded tools, connecting in the background) and one it
// deregisters is removed, within the store's notice latency (Redis
// pub/sub: milliseconds) or followResync at worst. It does nothing for a
// store that is not a Watcher.
func (c *Catalog) Follow(ctx context.Context) {
	w, ok := c.opts.Store.(Watcher)
	if !ok {
		return
	}
	go w.Watch(ctx, followResync, func() { c.sync(ctx) })
}

// sync applies the store's registrations to this replica.
func (c *Catalog) sync(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	recs, err := c.opts.Store.All(sctx)
	cancel()
	if err != nil {
		// The store logs outages itself; this replica keeps what it has.
		c.log.Debug("could not read the shared registrations", "err", err)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(c.dynamic)) {
		var p persisted
		if rec, ok := recs[name]; !ok || json.Unmarshal(rec, &p) != nil || !sameJSON(p.Definition, c.dynamic[name]) {
			c.dropLocked(name)
			c.log.Info("backend deregistered by another replica", "backend", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(recs)) {
		if c.dynamic[name] != nil || c.pending[name] {
			continue
		}
		if c.ignored[name] == string(recs[name]) {
			continue
		}
		var p persisted
		err := json.Unmarshal(recs[name], &p)
		if err == nil && (p.Name != name || p.Manifest == nil || p.Manifest.Backend != name) {
			err = errMalformed
		}
		if err == nil {
			err = c.restoreLocked(p)
		}
		if err != nil {
			// Logged once per record: the next change to it is tried again.
			c.ignored[name] = string(recs[name])
			c.log.Warn("a backend registered by another replica is not served here", "backend", name, "err", err)
			continue
		}
		delete(c.ignored, name)
		c.log.Info("backend registered by another replica", "backend", name)
	}
}
