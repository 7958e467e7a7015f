package catalog

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/safe"
)

// followResync is how often a replica compares its registrations with the
// shared store even without a change notice.
const followResync = 5 * time.Second

// syncAttempts bounds how often one sync reads the store again because
// this replica changed it meanwhile; the change's own notice brings
// another sync anyway.
const syncAttempts = 3

// Follow keeps this replica's runtime registrations equal to a shared
// store's until ctx ends: a backend another replica registers is added
// (from its recorded tools, connecting in the background) and one it
// deregisters is removed, within the store's notice latency (Redis
// pub/sub: milliseconds) or followResync at worst. When the store lost
// every record (Epoched: Redis restarted without persistence, or
// flushed), the registrations this replica serves are published again
// rather than dropped. It does nothing for a store that is not a Watcher.
func (c *Catalog) Follow(ctx context.Context) {
	w, ok := c.opts.Store.(Watcher)
	if !ok {
		return
	}
	go w.Watch(ctx, followResync, func() {
		// Recovered here, the watch goes on to the next change.
		defer safe.Recover(c.log, "applying the shared store's registrations")
		c.sync(ctx)
	})
}

// readStore reads every record, with the store's epoch when it keeps one.
func (c *Catalog) readStore(ctx context.Context) (map[string][]byte, string, error) {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if e, ok := c.opts.Store.(Epoched); ok {
		return e.AllWithEpoch(sctx)
	}
	recs, err := c.opts.Store.All(sctx)
	return recs, "", err
}

// sync applies the store's registrations to this replica. The store is
// read without the catalog's lock: during an outage a read blocks up to
// its timeout, and lookups, refreshes and calls must not wait for it.
func (c *Catalog) sync(ctx context.Context) {
	c.syncing.Lock()
	defer c.syncing.Unlock()
	for range syncAttempts {
		c.mu.Lock()
		gen := c.gen
		c.mu.Unlock()
		recs, epoch, err := c.readStore(ctx)
		if err != nil {
			// The store logs outages itself; this replica keeps what it has.
			c.log.Debug("could not read the shared registrations", "err", err)
			return
		}
		// Unlocked by defer: a panic applying another replica's records
		// (recovered by the watch) must not leave the catalog locked.
		again, stale := func() (map[string][]byte, bool) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.gen != gen {
				// A registration or deregistration made here since the
				// read began: the records read may not show it yet.
				return nil, true
			}
			return c.applyLocked(recs, epoch), false
		}()
		if stale {
			continue
		}
		c.republish(ctx, again)
		return
	}
}

// applyLocked makes this replica's registrations those of recs and
// returns the records to publish again because the store lost them.
func (c *Catalog) applyLocked(recs map[string][]byte, epoch string) map[string][]byte {
	if epoch != "" && c.epoch != "" && epoch != c.epoch {
		names := slices.Sorted(maps.Keys(c.dynamic))
		for _, name := range names {
			c.lost[name] = true
		}
		c.log.Warn("the shared state lost every registration (Redis restarted without persistence, or was flushed); this replica publishes the ones it serves again",
			"backends", strings.Join(names, ","))
	}
	if epoch != "" {
		c.epoch = epoch
	}
	again := map[string][]byte{}
	for _, name := range slices.Sorted(maps.Keys(c.dynamic)) {
		if c.leaving[name] > 0 {
			continue // Deregister drops it
		}
		rec, ok := recs[name]
		if !ok && c.lost[name] {
			if r := c.recordLocked(name); r != nil {
				again[name] = r
				continue
			}
		}
		delete(c.lost, name)
		var p persisted
		if !ok || json.Unmarshal(rec, &p) != nil || !sameJSON(p.Definition, c.dynamic[name]) {
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
	return again
}

// recordLocked is the stored form of a registration this replica serves,
// or nil when it cannot be built.
func (c *Catalog) recordLocked(name string) []byte {
	b, ok := c.opts.Registry.Backend(name)
	if !ok {
		return nil
	}
	rec, err := json.Marshal(persisted{Name: name, Definition: c.dynamic[name], Manifest: b.Manifest})
	if err != nil {
		return nil
	}
	return rec
}

// republish writes again the records the store lost. Create never
// replaces a record, so replicas doing this at once agree; one that fails
// stays lost and is tried at the next sync.
func (c *Catalog) republish(ctx context.Context, recs map[string][]byte) {
	var done []string
	for _, name := range slices.Sorted(maps.Keys(recs)) {
		c.mu.Lock()
		gone := c.dynamic[name] == nil || c.leaving[name] > 0
		c.mu.Unlock()
		if gone {
			continue // deregistered here meanwhile
		}
		sctx, cancel := context.WithTimeout(ctx, storeTimeout)
		_, err := c.opts.Store.Create(sctx, name, recs[name])
		cancel()
		if err != nil {
			c.log.Warn("could not publish a registration again after the shared state lost it; retrying at the next sync", "backend", name, "err", err)
			continue
		}
		done = append(done, name)
	}
	if len(done) == 0 {
		return
	}
	c.mu.Lock()
	for _, name := range done {
		delete(c.lost, name)
	}
	c.mu.Unlock()
	c.log.Info("registrations published again after the shared state lost them", "backends", strings.Join(done, ","))
}
