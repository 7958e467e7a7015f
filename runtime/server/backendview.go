package server

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/registry"
)

// stateNotConfigured marks a backend compiled into kiln that its config
// does not declare: it has tools but no process or connection.
const stateNotConfigured = "not configured"

type backendView struct {
	Name      string `json:"name"`
	Transport string `json:"transport,omitempty"`
	State     string `json:"state"`
	Since     string `json:"since,omitempty"`
	Compiled  bool   `json:"compiled"`
	// Listing marks a connected backend whose tools, resources and
	// prompts kiln is listing after it connected: a backend not compiled
	// in has no tools served until that ends.
	Listing bool `json:"listing,omitempty"`
	// Dynamic marks a backend added at run time by register_manual.
	Dynamic         bool   `json:"dynamic,omitempty"`
	Tools           int    `json:"tools"`
	ProtocolVersion string `json:"protocol_version,omitempty"`
	Error           string `json:"error,omitempty"`
	Note            string `json:"note,omitempty"`
	Restarts        int    `json:"restarts_in_window,omitempty"`
	GaveUp          bool   `json:"gave_up,omitempty"`
	NextRetry       string `json:"next_retry,omitempty"`
	ProbeFailures   int    `json:"probe_failures,omitempty"`
	LastHealthy     string `json:"last_healthy,omitempty"`
	Calls           int64  `json:"calls"`
	Errors          int64  `json:"errors"`
	InFlight        int    `json:"in_flight,omitempty"`
	Queued          int    `json:"queued,omitempty"`
	MaxConcurrent   int    `json:"max_concurrent,omitempty"`
	Timeout         string `json:"timeout,omitempty"`
	// Review says whether a reviewed manifest backs the tools (drift
	// modes apply) or not (they follow the live lists), and DriftMode
	// which mode they are served under.
	Review    string     `json:"review,omitempty"`
	DriftMode string     `json:"drift_mode,omitempty"`
	Drift     *driftView `json:"drift,omitempty"`

	status *dispatch.Status // nil when the dispatcher does not know it
}

// backends merges the registry (what is compiled or registered) with the
// dispatcher (what is configured and connected), so a backend missing from
// either side still shows, with a state that says why.
func (s *Server) backends() []backendView {
	byName := map[string]*backendView{}
	var order []string
	for _, b := range s.opts.Registry.Backends() {
		byName[b.Name()] = &backendView{Name: b.Name(), State: stateNotConfigured, Compiled: b.Compiled, Tools: len(b.Manifest.Tools),
			Note: "compiled in but not declared in the config, so calls fail; add it under backends: to use it"}
		order = append(order, b.Name())
	}
	for _, st := range s.statuses() {
		v, ok := byName[st.Name]
		if !ok {
			v = &backendView{Name: st.Name}
			byName[st.Name] = v
			order = append(order, st.Name)
		}
		v.Note = ""
		if !ok && !st.Dynamic {
			v.Note = "declared in the config but not compiled in, so kiln has no tools for it: run make generate && make build"
		}
		v.status = &st
		v.Transport, v.State, v.Since, v.Dynamic, v.Listing = st.Transport, string(st.State), stamp(st.Since), st.Dynamic, st.Listing
		v.ProtocolVersion, v.Error = st.ProtocolVersion, st.Error
		v.Restarts, v.GaveUp, v.NextRetry = st.Restarts, st.GaveUp, stamp(st.NextRetry)
		v.ProbeFailures, v.LastHealthy = st.ProbeFailures, stamp(st.LastHealthy)
		v.Calls, v.Errors, v.InFlight, v.Queued, v.MaxConcurrent = st.Calls, st.Errors, st.InFlight, st.Queued, st.MaxConcurrent
		if st.Timeout > 0 {
			v.Timeout = st.Timeout.String()
		}
	}
	for name, d := range s.drifts() {
		if v, ok := byName[name]; ok {
			v.Drift = newDriftView(d)
		}
	}
	if p := s.driftPolicy(); p != nil {
		for _, v := range byName {
			review, mode := p.Review(v.Name)
			v.Review, v.DriftMode = review, string(mode)
		}
	}
	out := make([]backendView, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out
}

func (s *Server) statuses() []dispatch.Status {
	if s.opts.Status == nil {
		return nil
	}
	return s.opts.Status.Status()
}

// findBackend returns the named backend's view, or an error naming the
// known backends, closest first.
func (s *Server) findBackend(name string) (backendView, error) {
	all := s.backends()
	names := make([]string, 0, len(all))
	for _, v := range all {
		if v.Name == name {
			return v, nil
		}
		names = append(names, v.Name)
	}
	if len(names) == 0 {
		return backendView{}, fmt.Errorf("no backend named %q: kiln has no backends; register one with register_manual or declare it in the config", name)
	}
	return backendView{}, fmt.Errorf("no backend named %q; known backends: %s (read %s for their states)", name, closestFirst(name, names, 20), uriBackends)
}

// closestFirst lists names with the near misses of name first, at most n.
func closestFirst(name string, names []string, n int) string {
	out := registry.Closest(name, names, 3)
	for _, c := range names {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return joinMax(out, n)
}

// joinMax joins at most n items and says how many it left out.
func joinMax(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

func (s *Server) backendTools(ctx context.Context, name string) []*registry.Tool {
	var out []*registry.Tool
	for _, t := range s.visibleTools(ctx) {
		if t.Backend == name {
			out = append(out, t)
		}
	}
	return out
}

func (s *Server) backendResource(ctx context.Context, uri string) (any, error) {
	v, err := s.findBackend(templateArg(uri, "kiln://backend/", ""))
	if err != nil {
		return nil, err
	}
	tools := []string{}
	for _, t := range s.backendTools(ctx, v.Name) {
		tools = append(tools, t.ID())
	}
	out := map[string]any{"backend": v, "tools": tools,
		"more": fmt.Sprintf("kiln://backend/%s/tools has each tool's signature and call example", v.Name)}
	if p := problemOf(v, time.Now()); p != nil {
		out["advice"] = p.Advice
	}
	if v.status != nil && v.status.StderrTail != "" {
		out["stderr_tail"] = strings.Split(strings.TrimRight(v.status.StderrTail, "\n"), "\n")
	}
	return out, nil
}

type toolSummary struct {
	Tool        string `json:"tool"`
	Description string `json:"description"`
	Signature   string `json:"signature"`
	Example     string `json:"example"`
}

func (s *Server) backendToolsResource(ctx context.Context, uri string) (any, error) {
	v, err := s.findBackend(templateArg(uri, "kiln://backend/", "/tools"))
	if err != nil {
		return nil, err
	}
	tools := []toolSummary{}
	ref := refIn(s.view())
	for _, t := range s.backendTools(ctx, v.Name) {
		tools = append(tools, toolSummary{Tool: t.ID(), Description: FirstSentence(t.Description, 200),
			Signature: t.Signature(), Example: t.Example(ref)})
	}
	return map[string]any{"backend": v.Name, "state": v.State, "tools": tools}, nil
}

type callView struct {
	Time       string  `json:"time"`
	Tool       string  `json:"tool"`
	DurationMS float64 `json:"duration_ms"`
	Outcome    string  `json:"outcome"`
}

func (s *Server) recent(n int) any {
	calls := []callView{}
	outcomes := map[string]int{}
	if s.opts.Status != nil {
		for _, c := range s.opts.Status.Recent(n) {
			calls = append(calls, callView{Time: c.Time.Format("2006-01-02T15:04:05.000Z07:00"), Tool: c.Backend + "." + c.Tool,
				DurationMS: math.Round(float64(c.Duration)/float64(time.Millisecond)*10) / 10, Outcome: c.Outcome})
			outcomes[c.Outcome]++
		}
	}
	return map[string]any{"calls": calls, "outcomes": outcomes}
}

func (s *Server) recentResource(_ context.Context, uri string) (any, error) {
	raw := templateArg(uri, "kiln://recent/", "")
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxRecent {
		return nil, fmt.Errorf("kiln://recent/{limit}: limit must be a whole number from 1 to %d, got %q; read %s for the last %d calls",
			maxRecent, raw, uriRecent, defaultRecent)
	}
	return s.recent(n), nil
}

type backendCounts struct {
	Calls    int64 `json:"calls"`
	Errors   int64 `json:"errors"`
	InFlight int   `json:"in_flight,omitempty"`
}

func (s *Server) stats() any {
	out := map[string]any{"tools": len(s.opts.Registry.Tools())}
	if s.opts.Counter != nil {
		out["call_tool_chain_output"] = s.opts.Counter.Snapshot()
	}
	if sts := s.statuses(); len(sts) > 0 {
		per := map[string]backendCounts{}
		for _, st := range sts {
			per[st.Name] = backendCounts{Calls: st.Calls, Errors: st.Errors, InFlight: st.InFlight}
		}
		out["backends"] = per
	}
	if s.opts.Scrubber != nil {
		out["secrets_redacted"] = s.opts.Scrubber.Totals()
	}
	return out
}
