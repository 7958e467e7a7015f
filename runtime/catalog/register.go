package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/manifest"
	"github.com/kilnmcp/kiln/runtime/safe"
)

// ErrRefused marks a registration kiln's policy does not allow; the
// message says which setting would allow it.
var ErrRefused = errors.New("registration refused")

// ErrNotRegistered is what a client learns when an HTTP or SSE backend it
// asked for did not connect: the same words whether the address was
// refused by policy, closed, filtered or answered but not as MCP, so
// register_manual cannot be used to probe a network. kiln's log has the
// reason.
var ErrNotRegistered = errors.New("the address is not allowed or did not answer as an MCP server; check the URL, or ask kiln's operator to allow the host in gateway.registration.allow_hosts")

// errMalformed marks a stored record kiln cannot use.
var errMalformed = errors.New("the saved record is malformed; deregister_manual it and register it again")

// persisted is the stored form of one registration. Manifest is the
// backend's last known offer, so a restored backend is listed, searchable
// and bound in the sandbox at start, before it connects again.
type persisted struct {
	Name       string             `json:"name"`
	Definition json.RawMessage    `json:"definition"`
	Manifest   *manifest.Manifest `json:"manifest,omitempty"`
}

// RegistrationsFile is where registrations persist, under the state dir,
// when gateway.registration.persist is on and gateway.state_url is unset.
const RegistrationsFile = "registrations.json"

// Register adds a backend at run time: it checks the definition against the
// config's policy, connects, records its tools and publishes them to search
// and the sandbox bridge. It fails, leaving nothing behind, if the backend
// does not connect before ctx ends or within the connect timeout.
func (c *Catalog) Register(ctx context.Context, name string, def json.RawMessage) (*manifest.Manifest, error) {
	c.mu.Lock()
	cfg := c.cfg
	b, err := c.admitLocked(name, def)
	if err == nil {
		// Reserved until connected or refused, so concurrent registrations
		// count against max_backends and cannot share a name.
		c.pending[name] = true
	}
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	release := func() {
		c.mu.Lock()
		delete(c.pending, name)
		c.mu.Unlock()
	}
	if c.opts.OnAdmit != nil {
		c.opts.OnAdmit(b)
	}
	if err := c.opts.Backends.AddBackend(b); err != nil {
		release()
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	m, err := c.connect(ctx, name, cfg.Gateway.ConnectTimeout)
	if err != nil {
		c.opts.Backends.RemoveBackend(name)
		release()
		if b.Transport == config.TransportStdio {
			// An allowed command's own words (its stderr) help the caller
			// and reveal nothing about the network.
			return nil, err
		}
		c.log.Warn("runtime registration failed; the client was told only that it could not be registered",
			"backend", name, "transport", b.Transport, "url", b.URL, "err", err)
		return nil, fmt.Errorf("backend %q could not be registered: %w", name, ErrNotRegistered)
	}
	// Saved before it is published: a registration the other replicas
	// cannot see is not made at all. The store is written without the
	// catalog's lock (during an outage the write waits out its timeout);
	// the name stays pending meanwhile, so nothing else takes it.
	if err := c.save(ctx, name, def, m); err != nil {
		c.opts.Backends.RemoveBackend(name) // returns at once; frees the name for the winner's record
		release()
		return nil, err
	}
	// Unlocked by defer: a panic on the backend's tools (recovered by the
	// handler or the restoring goroutine) must not leave the catalog locked.
	var served *manifest.Manifest
	var hidden map[string]string
	err = func() (err error) {
		// A panic becomes err, so the clean-up below runs for it too.
		defer safe.AsError(c.log, "registering backend "+name, &err)
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.pending, name)
		c.gen++
		// The store keeps every tool it listed; this replica serves those
		// that pass the poisoning checks (screen.go).
		served, hidden = c.screenedLocked(m)
		if err := c.opts.Registry.Add(served, false); err != nil {
			return err
		}
		c.opts.Registry.Hold(name, hidden)
		c.dynamic[name] = def
		c.publishLocked()
		return nil
	}()
	if err != nil {
		c.opts.Backends.RemoveBackend(name)
		c.unsave(name)
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	c.log.Info("backend registered at run time", "backend", name, "transport", b.Transport, "tools", len(served.Tools), "hidden", len(hidden))
	c.event("register", name, fmt.Sprintf("%s backend registered at run time: %d tools served, %d hidden", b.Transport, len(served.Tools), len(hidden)))
	return served, nil
}

// unsave removes a record save wrote for a registration that then failed.
func (c *Catalog) unsave(name string) {
	if c.opts.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := c.opts.Store.Delete(ctx, name); err != nil {
		c.log.Error("could not remove the saved record of a registration that failed", "backend", name, "err", err)
	}
}

// save records a new registration in the store, if there is one.
func (c *Catalog) save(ctx context.Context, name string, def json.RawMessage, m *manifest.Manifest) error {
	if c.opts.Store == nil {
		return nil
	}
	rec, err := json.Marshal(persisted{Name: name, Definition: def, Manifest: m})
	if err != nil {
		return fmt.Errorf("%w: the definition of %q cannot be saved: %v", ErrRefused, name, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	created, err := c.opts.Store.Create(ctx, name, rec)
	if err != nil {
		c.log.Error("could not save a runtime registration; it was not made", "backend", name, "err", err)
		return fmt.Errorf("backend %q connected, but kiln could not save the registration (kiln's state store failed; its log has the reason), so it is not registered; try again later", name)
	}
	if !created {
		return fmt.Errorf("%w: %q was registered meanwhile by another kiln replica; it is listed within a second (search_tools finds it), or deregister_manual it first to replace it", ErrRefused, name)
	}
	return nil
}

// connect waits for the new backend's first connect and records it.
func (c *Catalog) connect(ctx context.Context, name string, timeout time.Duration) (*manifest.Manifest, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	select {
	case <-c.opts.Backends.Ready(name):
	case <-ctx.Done():
		return nil, fmt.Errorf("backend %q did not connect within %s", name, timeout)
	}
	for _, st := range c.opts.Backends.Status() {
		if st.Name == name && st.State != dispatch.StateHealthy {
			return nil, fmt.Errorf("backend %q did not start: %s", name, st.Error)
		}
	}
	m, err := c.opts.Backends.Snapshot(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("backend %q connected but listing its tools failed: %w", name, err)
	}
	return m, nil
}

// admitLocked applies the registration policy and parses the definition.
func (c *Catalog) admitLocked(name string, def json.RawMessage) (config.Backend, error) {
	reg := c.cfg.Gateway.Registration
	switch {
	case name == "":
		return config.Backend{}, fmt.Errorf("%w: name is empty; give the backend a name such as \"weather\"", ErrRefused)
	case c.compiled[name] != nil || c.declared(name):
		return config.Backend{}, fmt.Errorf("%w: %q is a backend of kiln's own config; pick another name", ErrRefused, name)
	case c.dynamic[name] != nil || c.pending[name]:
		return config.Backend{}, fmt.Errorf("%w: %q is already registered; deregister_manual it first to replace it", ErrRefused, name)
	case len(c.dynamic)+len(c.pending) >= reg.MaxBackends:
		return config.Backend{}, fmt.Errorf("%w: %d backends are registered already, the most gateway.registration.max_backends allows; deregister_manual one first",
			ErrRefused, len(c.dynamic)+len(c.pending))
	}
	b, err := config.ParseBackend(name, def, c.cfg)
	if err != nil {
		return config.Backend{}, err
	}
	if b.Auth != nil {
		// A runtime backend's connections go through the address guard
		// only; an OAuth flow would reach other hosts (metadata, token
		// endpoints) outside it.
		return config.Backend{}, fmt.Errorf("%w: auth is for backends in kiln's config (kiln auth login NAME); a runtime registration may send headers only", ErrRefused)
	}
	if b.Transport == config.TransportStdio && !allowedCommand(b.Command, reg.AllowCommands) {
		if len(reg.AllowCommands) == 0 {
			return config.Backend{}, fmt.Errorf("%w: stdio backends cannot be registered at run time on this kiln (gateway.registration.allow_commands is empty); register an http backend, or ask its operator to allow %q",
				ErrRefused, b.Command)
		}
		return config.Backend{}, fmt.Errorf("%w: command %q is not in gateway.registration.allow_commands (%s)",
			ErrRefused, b.Command, strings.Join(reg.AllowCommands, ", "))
	}
	return b, nil
}

func (c *Catalog) declared(name string) bool {
	return slices.ContainsFunc(c.cfg.Backends, func(b config.Backend) bool { return b.Name == name })
}

// allowedCommand reports whether cmd is on the allowlist: named exactly as
// listed, or resolving on PATH to a listed absolute path. A bare entry
// never admits some other file of the same base name.
func allowedCommand(cmd string, allow []string) bool {
	for _, a := range allow {
		if cmd == a {
			return true
		}
		if filepath.IsAbs(a) && !strings.ContainsRune(cmd, '/') {
			if p, err := exec.LookPath(cmd); err == nil && p == a {
				return true
			}
		}
	}
	return false
}

// Deregister removes a backend registered at run time.
func (c *Catalog) Deregister(name string) error {
	c.mu.Lock()
	if _, ok := c.dynamic[name]; !ok {
		defer c.mu.Unlock()
		if c.compiled[name] != nil || c.declared(name) {
			return fmt.Errorf("%w: %q is part of kiln's config, not registered at run time; to stop it set backends.%s.enabled: false in %s",
				ErrRefused, name, name, c.cfg.EditHint())
		}
		return fmt.Errorf("%w: no backend %q was registered at run time; registered now: %s", ErrRefused, name, orNone(slices.Sorted(maps.Keys(c.dynamic))))
	}
	// The store is written without the catalog's lock, as in Register;
	// a sync meanwhile leaves the name to this call.
	c.leaving[name]++
	c.gen++
	c.mu.Unlock()
	var err error
	if c.opts.Store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		err = c.opts.Store.Delete(ctx, name)
		cancel()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leaving[name]--; c.leaving[name] == 0 {
		delete(c.leaving, name)
	}
	c.gen++
	if err != nil {
		c.log.Error("could not remove a runtime registration from the state store; it stays registered", "backend", name, "err", err)
		return fmt.Errorf("kiln could not remove %q from its saved registrations (kiln's state store failed; its log has the reason), so it stays registered; try again later", name)
	}
	if _, ok := c.dynamic[name]; ok {
		c.dropLocked(name)
	}
	c.log.Info("backend deregistered", "backend", name)
	c.event("deregister", name, "backend deregistered")
	return nil
}

// dropLocked removes a registered backend from this kiln.
func (c *Catalog) dropLocked(name string) {
	delete(c.dynamic, name)
	delete(c.lost, name)
	c.opts.Registry.Remove(name)
	c.publishLocked()
	// Synchronous, so a registration of the same name that follows (a
	// redefinition seen in one sync pass) finds the name free; the
	// dispatcher stops the process in the background, so this does not
	// wait for its grace period.
	c.opts.Backends.RemoveBackend(name)
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Restore re-registers the backends the store holds (a previous run's, or
// the fleet's). A backend saved with its last known tools is listed and
// searchable at once and connects in the background (calls to it wait for
// the connection, as calls to a configured backend do); one saved without
// them (an older state file) registers as register_manual does, off the
// caller's path. A definition the policy now refuses is logged, and
// dropped from a local state file; a fleet's store keeps it for the
// replicas that allow it.
func (c *Catalog) Restore(ctx context.Context) {
	if c.opts.Store == nil {
		return
	}
	recs, epoch, err := c.readStore(ctx)
	if err != nil {
		c.log.Warn("could not read saved registrations; ignoring them", "err", err)
		return
	}
	c.mu.Lock()
	c.epoch = epoch
	c.mu.Unlock()
	_, shared := c.opts.Store.(Watcher)
	var legacy []persisted
	for _, name := range slices.Sorted(maps.Keys(recs)) {
		var p persisted
		if err := json.Unmarshal(recs[name], &p); err != nil || p.Name != name {
			c.log.Warn("a saved registration is corrupt; ignoring it", "backend", name, "err", err)
			continue
		}
		var err error
		switch {
		case (p.Manifest == nil || p.Manifest.Backend != p.Name) && !shared:
			legacy = append(legacy, p)
			continue
		case p.Manifest == nil || p.Manifest.Backend != p.Name:
			// Replicas always save the tools; another kiln wrote this.
			err = errMalformed
		default:
			err = c.restore(p)
		}
		if err != nil {
			c.log.Warn("could not restore a runtime registration", "backend", p.Name, "err", err)
			if !shared {
				_ = c.opts.Store.Delete(ctx, p.Name)
				continue
			}
			// Follow's resyncs skip it until the record changes.
			c.mu.Lock()
			c.ignored[name] = string(recs[name])
			c.mu.Unlock()
		}
	}
	if len(legacy) == 0 {
		return
	}
	go func() {
		defer safe.Recover(c.log, "restoring runtime registrations")
		for _, p := range legacy {
			// Register saves it again, with its tools.
			_ = c.opts.Store.Delete(ctx, p.Name)
			if _, err := c.Register(ctx, p.Name, p.Definition); err != nil {
				c.log.Warn("could not restore a runtime registration", "backend", p.Name, "err", err)
			}
		}
	}()
}

// restore is restoreLocked under the catalog's lock, released even if a
// saved manifest makes it panic.
func (c *Catalog) restore(p persisted) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restoreLocked(p)
}

// restoreLocked registers a saved backend from its last known manifest and
// starts connecting it without waiting.
func (c *Catalog) restoreLocked(p persisted) error {
	b, err := c.admitLocked(p.Name, p.Definition)
	if err != nil {
		return err
	}
	if c.opts.OnAdmit != nil {
		c.opts.OnAdmit(b)
	}
	served, hidden := c.screenedLocked(p.Manifest)
	if err := c.opts.Registry.Add(served, false); err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	c.opts.Registry.Hold(p.Name, hidden)
	if err := c.opts.Backends.AddBackend(b); err != nil {
		c.opts.Registry.Remove(p.Name)
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	c.dynamic[p.Name] = p.Definition
	c.publishLocked()
	c.log.Info("runtime registration restored from its last known tools; connecting", "backend", p.Name, "tools", len(p.Manifest.Tools))
	return nil
}
