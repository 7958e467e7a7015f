package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/kilnmcp/kiln/runtime/dispatch"
)

// The verdicts of kiln://health.
const (
	healthOK       = "ok"
	healthDegraded = "degraded"
	healthDown     = "down"
)

type problem struct {
	Backend   string `json:"backend"`
	State     string `json:"state"`
	Since     string `json:"since,omitempty"`
	Reason    string `json:"reason"`
	NextRetry string `json:"next_retry,omitempty"`
	Advice    string `json:"advice"`
}

type healthView struct {
	Status    string    `json:"status"`
	Summary   string    `json:"summary"`
	CheckedAt string    `json:"checked_at"`
	Problems  []problem `json:"problems,omitempty"`
	// Inactive lists backends left off on purpose (disabled, or compiled
	// in but not configured); they do not count against the verdict.
	Inactive []string `json:"inactive,omitempty"`
}

func inactive(v backendView) bool {
	return v.State == string(dispatch.StateDisabled) || v.State == stateNotConfigured
}

// health judges the gateway as a whole: ok when every active backend is
// healthy, down when none is, degraded in between.
func (s *Server) health() healthView {
	now := time.Now()
	h := healthView{CheckedAt: stamp(now)}
	active, healthy := 0, 0
	byState := map[string][]string{}
	for _, v := range s.backends() {
		if inactive(v) {
			h.Inactive = append(h.Inactive, v.Name+" ("+v.State+")")
			continue
		}
		active++
		if p := problemOf(v, now); p != nil {
			h.Problems = append(h.Problems, *p)
			byState[v.State] = append(byState[v.State], v.Name)
		} else {
			healthy++
		}
	}
	switch {
	case active == 0:
		h.Status, h.Summary = healthDown, "down: no backend is configured and enabled, so no tool can be called"
		return h
	case healthy == active:
		h.Status = healthOK
	case healthy == 0:
		h.Status = healthDown
	default:
		h.Status = healthDegraded
	}
	h.Summary = fmt.Sprintf("%s: %d of %d backends healthy", h.Status, healthy, active)
	for _, st := range []dispatch.State{dispatch.StateStarting, dispatch.StateUnhealthy, dispatch.StateNeedsLogin, dispatch.StateStopped} {
		if names := byState[string(st)]; len(names) > 0 {
			h.Summary += fmt.Sprintf("; %s: %s", st, strings.Join(names, ", "))
		}
	}
	s.sharedStateProblem(&h)
	s.auditProblem(&h)
	return h
}

// sharedStateProblem adds an unreachable shared state to the verdict:
// calls go on, but changes that every replica must see cannot be made.
func (s *Server) sharedStateProblem(h *healthView) {
	partProblem(h, s.opts.SharedState, "(shared state)", "unreachable", "shared state unreachable",
		"tool calls still work; register_manual, deregister_manual and OAuth token refreshes fail until the Redis in gateway.state_url answers again; kiln's operator should check it")
}

// auditProblem adds an audit log that cannot write to the verdict: calls
// go on, but their records wait in memory (and are lost with a crash).
func (s *Server) auditProblem(h *healthView) {
	partProblem(h, s.opts.Audit, "(audit log)", "failing", "audit log not written",
		"tool calls still work; their audit records wait in memory until a write succeeds (and are dropped past 100,000); kiln's operator should free space where gateway.audit.path points")
}

// partProblem adds a part of kiln that report says is failing (not a
// backend: calls go on) to the verdict, which is degraded at least.
func partProblem(h *healthView, report func() error, part, state, summary, advice string) {
	if report == nil {
		return
	}
	err := report()
	if err == nil {
		return
	}
	if h.Status == healthOK {
		h.Status = healthDegraded
		h.Summary = healthDegraded + strings.TrimPrefix(h.Summary, healthOK)
	}
	h.Summary += "; " + summary
	h.Problems = append(h.Problems, problem{Backend: part, State: state, Reason: err.Error(), Advice: advice})
}

// problemOf explains why a backend cannot take calls and what to do, or
// returns nil when it can.
func problemOf(v backendView, now time.Time) *problem {
	if v.State == string(dispatch.StateHealthy) || inactive(v) {
		return nil
	}
	p := &problem{Backend: v.Name, State: v.State, Since: v.Since, Reason: firstLine(v.Error, 300)}
	if v.status != nil && !v.status.NextRetry.IsZero() {
		p.NextRetry = stamp(v.status.NextRetry) + " (" + relative(v.status.NextRetry, now) + ")"
	}
	details := fmt.Sprintf("kiln://backend/%s has its last error and stderr", v.Name)
	switch {
	case v.State == string(dispatch.StateStarting):
		if p.Reason == "" {
			p.Reason = "still starting"
		}
		p.Advice = fmt.Sprintf("Calls to %s wait for it to connect, up to their own timeout; %s", v.Name, details)
	case v.GaveUp:
		p.Advice = fmt.Sprintf("kiln stopped restarting %s after %d restarts in the restart window; fix the backend (%s), then edit its config entry (kiln reloads it) or restart kiln. Other backends still work",
			v.Name, v.Restarts, details)
	case p.NextRetry != "":
		p.Advice = fmt.Sprintf("Calls to %s fail fast until kiln retries at %s; try again after that. Other backends still work; %s",
			v.Name, p.NextRetry, details)
	default:
		p.Advice = fmt.Sprintf("Calls to %s fail; other backends still work; %s", v.Name, details)
	}
	if p.Reason == "" {
		p.Reason = v.State
	}
	return p
}

// firstLine returns the first line of s, cut to max bytes by FirstSentence's
// rules; backend errors carry stderr on later lines, which
// kiln://backend/{backend_name} shows in full.
func firstLine(s string, max int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	line = strings.Join(strings.Fields(line), " ")
	return cut(line, max)
}
