package dispatch

import "time"

// Status is a snapshot of one backend's connection, for kiln://backends and
// the health resources.
type Status struct {
	Name      string
	Transport string
	State     State
	// Listing is set while a healthy backend's first refresh after it
	// connected runs: its live tools, resources and prompts may not be
	// served yet.
	Listing bool
	Since   time.Time
	// Error says why the backend is not healthy.
	Error           string
	ProtocolVersion string
	StderrTail      string
	// Dynamic marks a backend added by register_manual.
	Dynamic bool
	// NextRetry is when kiln next tries to connect or probe an unhealthy
	// or stopped backend; zero when nothing is scheduled.
	NextRetry time.Time
	// Restarts counts restarts within the last restart window; GaveUp is
	// set once the window filled and kiln stopped restarting.
	Restarts int
	GaveUp   bool
	// ProbeFailures counts health probes failed in a row; LastHealthy is
	// when the backend last connected or answered a probe.
	ProbeFailures int
	LastHealthy   time.Time
	// Calls, Errors and InFlight count calls dispatched to the backend;
	// Queued counts calls waiting for one of its MaxConcurrent slots.
	Calls, Errors int64
	InFlight      int
	Queued        int
	MaxConcurrent int
	Timeout       time.Duration
}

// Status reports every backend, sorted by name.
func (d *Dispatcher) Status() []Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	out := make([]Status, 0, len(d.slots))
	for _, name := range d.namesLocked() {
		s := d.slots[name]
		st := Status{Name: name, Transport: s.cfg.Transport, State: s.state, Listing: s.listing && s.state == StateHealthy, Since: s.since, Dynamic: s.dynamic,
			NextRetry: s.retry, GaveUp: s.gaveUp, ProbeFailures: s.failures, LastHealthy: s.lastOK,
			Calls: s.calls, Errors: s.errs, InFlight: s.inFlight, Queued: s.queued, MaxConcurrent: cap(s.sem), Timeout: s.cfg.Timeout}
		for _, t := range s.restarts {
			if now.Sub(t) < restartWindow {
				st.Restarts++
			}
		}
		if s.err != nil {
			st.Error = s.err.Error()
		}
		if s.login != nil && s.state == StateHealthy {
			st.State, st.Error = StateNeedsLogin, s.login.Error()
		}
		if s.conn != nil {
			st.ProtocolVersion = s.conn.ProtocolVersion()
			st.StderrTail = s.conn.StderrTail(20)
		}
		out = append(out, st)
	}
	return out
}
