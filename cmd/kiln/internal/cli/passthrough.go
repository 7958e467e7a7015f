package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/safe"
	"github.com/kilnmcp/kiln/runtime/server"
)

// passthroughHub carries the dispatcher's backend events (connects, list
// changes, resource updates, logs) to the server. Backends start before
// the server exists, so attach replays a refresh for those already
// connected.
type passthroughHub struct {
	srv atomic.Pointer[server.Server]
	log *slog.Logger
	// timeout is gateway.connect_timeout as the config says now.
	timeout func() time.Duration
}

func (h *passthroughHub) refresh(ctx context.Context, name string, kinds ...string) {
	s := h.srv.Load()
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	if err := s.Refresh(ctx, name, kinds...); err != nil {
		h.log.Warn("could not refresh a backend's resources and prompts", "backend", name, "err", err)
	}
}

func (h *passthroughHub) updated(name string, params json.RawMessage) {
	if s := h.srv.Load(); s != nil {
		s.ResourceUpdated(name, params)
	}
}

func (h *passthroughHub) logged(name string, params json.RawMessage) {
	if s := h.srv.Load(); s != nil {
		s.BackendLog(name, params)
	}
}

func (h *passthroughHub) attach(ctx context.Context, s *server.Server, disp *dispatch.Dispatcher) {
	h.srv.Store(s)
	for _, st := range disp.Status() {
		if st.State == dispatch.StateHealthy {
			safe.Go(h.log, "the passthrough refresh of backend "+st.Name, func() { h.refresh(ctx, st.Name) })
		}
	}
}
