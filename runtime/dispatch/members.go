package dispatch

import (
	"fmt"
	"slices"

	"github.com/kilnmcp/kiln/runtime/backend"
	"github.com/kilnmcp/kiln/runtime/config"
)

// AddBackend starts supervising a backend registered at run time. It
// fails if the name is taken.
func (d *Dispatcher) AddBackend(b config.Backend) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("backend %q: kiln is shutting down", b.Name)
	}
	if _, ok := d.slots[b.Name]; ok {
		return fmt.Errorf("backend %q already exists", b.Name)
	}
	s := d.newSupervisor(b, true)
	d.slots[b.Name] = s
	if d.ctx != nil {
		s.start(d.ctx)
	}
	return nil
}

// Ready returns a channel closed when the backend's first connect attempt
// ends, or nil for an unknown backend.
func (d *Dispatcher) Ready(name string) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.slots[name]; ok {
		return s.ready
	}
	return nil
}

// RemoveBackend forgets a backend at once, so its name is free again, and
// stops it in the background (a stdio process may take its whole grace
// period); Close waits for that. It reports whether there was one.
func (d *Dispatcher) RemoveBackend(name string) bool {
	d.mu.Lock()
	s, ok := d.slots[name]
	delete(d.slots, name)
	if ok {
		d.stopping.Add(1)
	}
	d.mu.Unlock()
	if ok {
		go func() {
			defer d.stopping.Done()
			s.stop()
		}()
	}
	return ok
}

// Reload applies a new config: backends whose connection settings changed
// (the keys config declares so: command, url, env, ...) restart, as
// do backends kiln gave up restarting (the edit is the fix),
// limits (timeout, max_concurrent, queue_wait) and health settings apply
// in place, and untouched backends keep their sessions. Backends added at
// run time are left alone. It returns the names of restarted backends.
func (d *Dispatcher) Reload(cfg *config.Config) []string {
	d.mu.Lock()
	next := map[string]config.Backend{}
	for _, b := range cfg.Backends {
		next[b.Name] = b
	}
	var restart []*supervisor
	var names []string
	for name, s := range d.slots {
		b, declared := next[name]
		switch {
		case s.dynamic:
		case !declared && !s.cfg.Enabled:
			// Dropped earlier and already stopped.
		case !declared:
			// Dropped from the config: stop it but keep a supervisor so calls
			// get a clear "disabled" answer.
			b = s.cfg
			b.Enabled = false
			fallthrough
		case !config.SameConnection(s.cfg, b) || s.gaveUp:
			restart = append(restart, s)
			d.slots[name] = d.newSupervisor(b, false)
			names = append(names, name)
		default:
			s.cfg.Timeout, s.cfg.QueueWait = b.Timeout, b.QueueWait
			if b.MaxConcurrent != cap(s.sem) {
				// Calls in flight release into the old semaphore; calls
				// queued on it move to the new one.
				s.sem = make(chan struct{}, max(b.MaxConcurrent, 1))
				close(s.resized)
				s.resized = make(chan struct{})
			}
			s.cfg.MaxConcurrent = b.MaxConcurrent
		}
	}
	for name, b := range next {
		if _, ok := d.slots[name]; !ok {
			d.slots[name] = d.newSupervisor(b, false)
			names = append(names, name)
		}
	}
	d.cfg = cfg
	d.stopping.Add(1)
	d.mu.Unlock()
	stopAll(restart)
	d.stopping.Done()
	d.mu.Lock()
	for _, name := range names {
		if s := d.slots[name]; s != nil && d.ctx != nil {
			s.start(d.ctx)
		}
	}
	d.mu.Unlock()
	slices.Sort(names)
	return names
}

// EndSession tells every connected backend that client session id ended,
// so what a backend keeps for it (a workspace's background shells) ends
// with it.
func (d *Dispatcher) EndSession(id string) {
	d.mu.Lock()
	var conns []*backend.Conn
	var sups []*supervisor
	for _, s := range d.slots {
		if s.conn != nil {
			conns = append(conns, s.conn)
		}
		sups = append(sups, s)
	}
	d.mu.Unlock()
	for _, c := range conns {
		c.EndSession(id)
	}
	if id == "" {
		return
	}
	// The backend sessions kiln opened for this client session alone.
	for _, s := range sups {
		s.closeSessions(id)
	}
}
