package httpauth

import (
	"strconv"
	"sync"
	"time"
)

// sessions counts each client's open MCP sessions. It learns of a
// streamable HTTP session from the Mcp-Session-Id header of a successful
// response and forgets it on DELETE, on a 404 for it, or after idle time
// with no request open on it. A legacy SSE session is its GET /sse stream.
//
// The count is checked before a request runs and a session is only known
// once the response says so, so simultaneous initializes from one client
// at its cap can overshoot by the number in flight; the cap bounds a
// runaway client, it is not a quota.
type sessions struct {
	max  int
	idle time.Duration
	now  func() time.Time

	mu      sync.Mutex
	clients map[string]map[string]*session
	seq     uint64
	// ended remembers sessions a client closed with DELETE, oldest first
	// in order, so later requests naming them get 404 as the spec asks
	// (the SDK's session manager does not validate ids). Bounded.
	ended map[string]bool
	order []string
}

// maxEnded bounds the terminated session ids remembered.
const maxEnded = 4096

// terminate records that a client closed session id.
func (s *sessions) terminate(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		s.ended = map[string]bool{}
	}
	if s.ended[id] {
		return
	}
	s.ended[id] = true
	s.order = append(s.order, id)
	if len(s.order) > maxEnded {
		delete(s.ended, s.order[0])
		s.order = s.order[1:]
	}
}

// terminated reports whether a client closed session id.
func (s *sessions) terminated(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended[id]
}

type session struct {
	last   time.Time
	active int // requests open on the session; it cannot expire while > 0
}

// liveLocked prunes client's idle sessions and counts the rest.
func (s *sessions) liveLocked(client string) int {
	m := s.clients[client]
	now := s.now()
	for id, e := range m {
		if e.active == 0 && now.Sub(e.last) > s.idle {
			delete(m, id)
		}
	}
	if len(m) == 0 {
		delete(s.clients, client)
	}
	return len(m)
}

// full reports whether client may open no more sessions.
func (s *sessions) full(client string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveLocked(client) >= s.max
}

// add records session id for client, or refreshes it.
func (s *sessions) add(client, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.clientLocked(client)
	if e := m[id]; e != nil {
		e.last = s.now()
		return
	}
	m[id] = &session{last: s.now()}
}

// begin and end bracket a request on a known session.
func (s *sessions) begin(client, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.clients[client][id]; e != nil {
		e.active++
		e.last = s.now()
	}
}

func (s *sessions) end(client, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.clients[client][id]; e != nil {
		e.active = max(e.active-1, 0)
		e.last = s.now()
	}
}

func (s *sessions) remove(client, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clients[client], id)
	if len(s.clients[client]) == 0 {
		delete(s.clients, client)
	}
}

// openSSE counts a legacy SSE stream as a session for as long as it is
// open; release ends it.
func (s *sessions) openSSE(client string) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.liveLocked(client) >= s.max {
		return nil, false
	}
	s.seq++
	// The space keeps it apart from any Mcp-Session-Id, which is visible
	// ASCII only.
	id := "sse " + strconv.FormatUint(s.seq, 10)
	m := s.clientLocked(client)
	m[id] = &session{last: s.now(), active: 1}
	return func() { s.remove(client, id) }, true
}

func (s *sessions) clientLocked(client string) map[string]*session {
	m := s.clients[client]
	if m == nil {
		if s.clients == nil {
			s.clients = make(map[string]map[string]*session)
		}
		m = make(map[string]*session)
		s.clients[client] = m
	}
	return m
}
