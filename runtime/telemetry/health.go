package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kilnmcp/kiln/runtime/dispatch"
)

// Health answers /healthz and /readyz and drains on shutdown. Lifecycle:
// NewHealth (not ready: starting) → Ready once the gateway serves → Drain
// on SIGTERM (not ready again, for good) → Wait for calls in flight.
type Health struct {
	status   StatusSource
	required func() []string
	serving  atomic.Bool
	draining atomic.Bool
	// broken, when set, says what part of the gateway failed for good.
	broken atomic.Pointer[string]

	mu       sync.Mutex
	inFlight int
	idle     chan struct{} // closed when inFlight drops to 0 while draining
}

// NewHealth returns health endpoints that read backend states from status
// and the backends that must be connected from required (both read at
// each probe, so a config reload takes effect at once).
func NewHealth(status StatusSource, required func() []string) *Health {
	return &Health{status: status, required: required}
}

// Ready marks the gateway as serving: config loaded, front door open.
func (h *Health) Ready() { h.serving.Store(true) }

// Broken turns /readyz to 503 for good with why: a part of the gateway
// that cannot work (the sandbox could not start a worker).
func (h *Health) Broken(why string) { h.broken.Store(&why) }

// Drain turns /readyz to 503 for good, so load balancers stop sending new
// requests while calls in flight finish.
func (h *Health) Drain() { h.draining.Store(true) }

// Begin counts a call in flight; the returned func ends it.
func (h *Health) Begin() func() {
	h.mu.Lock()
	h.inFlight++
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.inFlight--
		if h.inFlight == 0 && h.idle != nil {
			close(h.idle)
			h.idle = nil
		}
	}
}

// InFlight reports the calls running now.
func (h *Health) InFlight() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inFlight
}

// Wait blocks until no call is in flight or ctx ends; it reports how many
// calls were still running when it returned.
func (h *Health) Wait(ctx context.Context) int {
	for {
		h.mu.Lock()
		if h.inFlight == 0 {
			h.mu.Unlock()
			return 0
		}
		if h.idle == nil {
			h.idle = make(chan struct{})
		}
		idle := h.idle
		h.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return h.InFlight()
		}
	}
}

// notReady says why the gateway should get no traffic, or "" when it
// should.
func (h *Health) notReady() string {
	switch {
	case h.draining.Load():
		return "draining: kiln is shutting down and finishing the calls in flight"
	case !h.serving.Load():
		return "starting: kiln is not serving yet"
	case h.broken.Load() != nil:
		return *h.broken.Load()
	}
	want := h.required()
	if len(want) == 0 {
		return ""
	}
	states := map[string]dispatch.Status{}
	for _, st := range h.status.Status() {
		states[st.Name] = st
	}
	var down, listing []string
	for _, name := range want {
		switch st := states[name]; {
		case st.State != dispatch.StateHealthy:
			down = append(down, fmt.Sprintf("%s (%s)", name, cmpOr(string(st.State), "unknown")))
		case st.Listing:
			// Connected, but a backend not compiled in has no tools
			// served yet, and no backend's resources or prompts are.
			listing = append(listing, name)
		}
	}
	var why []string
	if len(down) > 0 {
		why = append(why, "required backends not connected: "+strings.Join(down, ", ")+"; kiln://health says why")
	}
	if len(listing) > 0 {
		why = append(why, "required backends connected, their tools, resources and prompts being listed: "+strings.Join(listing, ", "))
	}
	return strings.Join(why, "; ")
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Healthz answers 200 while the process serves HTTP at all: a liveness
// probe must not fail because a backend is down, or Kubernetes would
// restart kiln for its backends' faults.
func (h *Health) Healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintln(w, "ok")
}

// Readyz answers 200 when the gateway should get traffic and 503 with the
// reason otherwise.
func (h *Health) Readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if why := h.notReady(); why != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, why)
		return
	}
	fmt.Fprintln(w, "ready")
}

// Routes adds /healthz and /readyz to mux, and /metrics when m is set.
func (h *Health) Routes(mux *http.ServeMux, metrics http.Handler) {
	mux.HandleFunc("GET /healthz", h.Healthz)
	mux.HandleFunc("GET /readyz", h.Readyz)
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
}
