package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	_ = enc.Encode(v)
}

// apiBackends: every backend's state, health, last error, counts and
// drift (kiln://backends), with the health verdict.
func (c *Console) apiBackends(w http.ResponseWriter, r *http.Request) {
	backends, err := c.opts.Source.Resource(r.Context(), "kiln://backends")
	if err != nil {
		httpError(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	health, _ := c.opts.Source.Resource(r.Context(), "kiln://health")
	writeJSON(w, map[string]any{"replica": c.opts.Replica, "health": health, "backends": backends})
}

// apiBackend: one backend in detail, its stderr tail and tools.
func (c *Console) apiBackend(w http.ResponseWriter, r *http.Request) {
	v, err := c.opts.Source.Resource(r.Context(), "kiln://backend/"+r.PathValue("name"))
	if err != nil {
		httpError(w, r, http.StatusNotFound, err.Error())
		return
	}
	writeJSON(w, v)
}

// apiTools: search_tools for people (q), or every tool by backend.
func (c *Console) apiTools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	if q == "" {
		v, err := c.opts.Source.Resource(r.Context(), "kiln://tools")
		if err != nil {
			httpError(w, r, http.StatusInternalServerError, err.Error())
			return
		}
		writeJSON(w, v)
		return
	}
	limit := 10
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 50 {
			httpError(w, r, http.StatusBadRequest, "limit: want a whole number from 1 to 50")
			return
		}
		limit = n
	}
	writeJSON(w, map[string]any{"query": q, "results": c.opts.Source.SearchPeople(r.Context(), q, limit)})
}

// apiTool: one tool's full recorded schema.
func (c *Console) apiTool(w http.ResponseWriter, r *http.Request) {
	raw, ok := c.opts.Source.ToolSchema(r.Context(), r.PathValue("id"))
	if !ok {
		httpError(w, r, http.StatusNotFound, fmt.Sprintf("no tool %q: GET /api/v1/tools?q=… finds tools", r.PathValue("id")))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(raw)
}

// apiDocs: every tool's documentation as Markdown.
func (c *Console) apiDocs(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	fmt.Fprint(w, c.opts.Source.ToolDocs(r.Context()))
}

// apiEvents streams the live log as Server-Sent Events, resuming after
// Last-Event-ID from the ring.
func (c *Console) apiEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, r, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last_event_id")
	}
	var lastID uint64
	if last != "" {
		n, err := strconv.ParseUint(last, 10, 64)
		if err != nil {
			httpError(w, r, http.StatusBadRequest, "Last-Event-ID: want the id of an event")
			return
		}
		lastID = n
	}
	backlog, ch, cancel := c.hub.subscribe(lastID)
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	fmt.Fprintf(w, "retry: 2000\n: replica %s\n\n", c.opts.Replica)
	send := func(e Event) bool {
		b, _ := json.Marshal(e)
		_, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Kind, b)
		return err == nil
	}
	for _, e := range backlog {
		if !send(e) {
			return
		}
	}
	fl.Flush()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-ch:
			if !ok {
				return
			}
			if !send(e) {
				return
			}
			// Whatever else is waiting goes in the same flush: one write
			// per burst, not per event, so a stream keeps up with a load.
			for more := true; more; {
				select {
				case e, ok := <-ch:
					if !ok {
						fl.Flush()
						return
					}
					if !send(e) {
						return
					}
				default:
					more = false
				}
			}
			fl.Flush()
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// apiWorkspaces names the browsable workspaces.
func (c *Console) apiWorkspaces(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"workspaces": c.workspaceNames()})
}
