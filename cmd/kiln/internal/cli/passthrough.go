package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kilnmcp/kiln/runtime/dispatch"
	"github.com/kilnmcp/kiln/runtime/safe"
	"github.com/kilnmcp/kiln/runtime/server"
)

// passthroughHub carries the dispatcher's backend events (connects, list
// changes, resource updates, logs) to the server. Backends start before
// the server exists: a refresh waits for the first attach, so the refresh
// after a connect ends, and /readyz turns ready, only once the backend's
// resources and prompts reached the server.
type passthroughHub struct {
	srv        atomic.Pointer[server.Server]
	attached   chan struct{} // closed by the first attach
	attachOnce sync.Once
	log        *slog.Logger
	// timeout is gateway.connect_timeout as the config says now.
	timeout func() time.Duration
}

func newPassthroughHub(log *slog.Logger, timeout func() time.Duration) *passthroughHub {
	return &passthroughHub{attached: make(chan struct{}), log: log, timeout: timeout}
}

func (h *passthroughHub) refresh(ctx context.Context, name string, kinds ...string) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	select {
	case <-h.attached:
	case <-ctx.Done():
		h.log.Warn("could not refresh a backend's resources and prompts: the server did not start within gateway.connect_timeout", "backend", name)
		return
	}
	if err := h.srv.Load().Refresh(ctx, name, kinds...); err != nil {
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

// attach sends the backends' events to s from now on and lists the
// connected backends' resources and prompts into it; a backend still
// listing is left to the refresh after its connect, which reads s.
func (h *passthroughHub) attach(ctx context.Context, s *server.Server, disp *dispatch.Dispatcher) {
	h.srv.Store(s)
	h.attachOnce.Do(func() { close(h.attached) })
	for _, st := range disp.Status() {
		if st.State == dispatch.StateHealthy && !st.Listing {
			safe.Go(h.log, "the passthrough refresh of backend "+st.Name, func() { h.refresh(ctx, st.Name) })
		}
	}
}
