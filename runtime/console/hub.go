package console

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// Event is one entry of the live log: a tool call (never its values
// unless show_values), a backend's state change, drift, a registration,
// a reload or a person's exec.
type Event struct {
	ID      uint64          `json:"id"`
	Time    time.Time       `json:"time"`
	Replica string          `json:"replica,omitempty"`
	Kind    string          `json:"kind"`
	Tool    string          `json:"tool,omitempty"`
	Backend string          `json:"backend,omitempty"`
	Who     string          `json:"identity,omitempty"`
	Session string          `json:"session,omitempty"`
	Tier    string          `json:"tier,omitempty"`
	Outcome string          `json:"outcome,omitempty"`
	MS      float64         `json:"duration_ms,omitempty"`
	Bytes   int             `json:"result_bytes,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Detail  string          `json:"detail,omitempty"`
}

// hub keeps the last ringSize events for Last-Event-ID resumes and fans
// new ones out to subscribers. A subscriber that falls behind by more
// than its buffer is dropped (its stream ends; the browser reconnects
// and resumes from the ring).
type hub struct {
	mu     sync.Mutex
	next   uint64
	ring   []Event
	start  int // index of the oldest event in ring once it is full
	subs   map[chan Event]struct{}
	closed bool
}

const (
	ringSize  = 1024
	subBuffer = ringSize
)

func newHub() *hub { return &hub{subs: map[chan Event]struct{}{}} }

// publish stamps e with the next ID and sends it to every subscriber
// without waiting for any.
func (h *hub) publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.next++
	e.ID = h.next
	if len(h.ring) < ringSize {
		h.ring = append(h.ring, e)
	} else {
		h.ring[h.start] = e
		h.start = (h.start + 1) % ringSize
	}
	for c := range h.subs {
		select {
		case c <- e:
		default:
			delete(h.subs, c)
			close(c)
		}
	}
}

// subscribe returns the events after lastID still in the ring and a
// channel of the ones to come; cancel ends the subscription.
func (h *hub) subscribe(lastID uint64) (backlog []Event, c chan Event, cancel func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.ring {
		e := h.ring[(h.start+i)%len(h.ring)]
		if e.ID > lastID {
			backlog = append(backlog, e)
		}
	}
	c = make(chan Event, subBuffer)
	if h.closed {
		close(c)
		return backlog, c, func() {}
	}
	h.subs[c] = struct{}{}
	return backlog, c, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[c]; ok {
			delete(h.subs, c)
			close(c)
		}
	}
}

// recent returns up to n of the newest events, newest first.
func (h *hub) recent(n int) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Event, 0, min(n, len(h.ring)))
	for i := len(h.ring) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, h.ring[(h.start+i)%len(h.ring)])
	}
	return out
}

// subscribers is how many streams are open.
func (h *hub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for c := range h.subs {
		delete(h.subs, c)
		close(c)
	}
}

// WatchBackends publishes a "backend" event whenever a backend's state
// changes (starting, healthy, unhealthy, stopped, needs_login…), read from
// kiln://backends every interval until ctx ends: the one view that sees
// every transition the supervisors make, whoever makes it.
func (c *Console) WatchBackends(ctx context.Context, every time.Duration) {
	last := map[string]string{}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		v, err := c.opts.Source.Resource(ctx, "kiln://backends")
		if err == nil {
			raw, _ := json.Marshal(v)
			var list []struct {
				Name, State, Error string
			}
			_ = json.Unmarshal(raw, &list)
			for _, b := range list {
				was, seen := last[b.Name]
				last[b.Name] = b.State
				if !seen || was == b.State {
					continue
				}
				detail := "state " + was + " → " + b.State
				if b.Error != "" && b.State != "healthy" {
					line, _, _ := strings.Cut(b.Error, "\n")
					detail += ": " + line
				}
				c.Publish(Event{Kind: "backend", Backend: b.Name, Detail: detail})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
