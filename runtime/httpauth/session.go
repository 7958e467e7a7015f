package httpauth

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// sessions is the registry of open MCP sessions, the authority on which
// session ids exist: the SDK's streamable HTTP transport accepts any id
// (a forged one is served without initialize, and a GET with one opens a
// stream), so the guard answers 404 for ids it did not see issued.
//
// A streamable HTTP session is learned from the Mcp-Session-Id header of
// a successful initialize response and ends on DELETE, on the server's 404
// for it, or by eviction. A legacy GET /sse stream, and a GET /mcp stream
// opened without a session id, is a session for as long as it is open.
//
// Each session belongs to the identity that opened it (see identityOf) and
// only that identity may use it. An identity holds at most perIdentity
// sessions and everyone together at most total; a new session past either
// cap first evicts the least recently used session with no request open
// (the identity's own at its cap, anyone's at the total), and is refused
// only when every candidate is busy. Since perIdentity is below total, one
// identity can never take the sessions every other identity needs.
type sessions struct {
	perIdentity, total int
	idle               time.Duration
	now                func() time.Time

	mu      sync.Mutex
	byID    map[string]*session
	owned   map[string]int // identity → sessions held or reserved
	pending int            // reservations not yet filled
	seq     uint64
	// ended remembers why recent sessions ended, oldest first in order, so
	// a client naming one learns what happened. Bounded by maxEnded.
	ended map[string]string
	order []string
}

// maxEnded bounds the ended session ids remembered.
const maxEnded = 4096

type session struct {
	id, owner string
	path      string // the endpoint that opened it (/mcp or a profile's /mcp/NAME)
	last      time.Time
	stream    bool // the session is one open stream; it ends with it
	// open holds a cancel per request in flight; eviction calls them. The
	// session cannot go idle while it is not empty.
	open   map[uint64]context.CancelFunc
	listen uint64 // key in open of the session's GET stream, 0 for none
	// listenDone is closed when that stream's request has returned.
	listenDone chan struct{}
}

// victim is a session removed from the registry that the server must
// still forget: cancel its requests, then (for a streamable session)
// terminate it in the SDK.
type victim struct {
	id, why string
	path    string
	stream  bool
	cancels []context.CancelFunc
}

func newSessions(perIdentity, total int, idle time.Duration, now func() time.Time) *sessions {
	return &sessions{perIdentity: perIdentity, total: max(total, perIdentity), idle: idle, now: now,
		byID: map[string]*session{}, owned: map[string]int{}, ended: map[string]string{}}
}

// reserve takes a slot for a session identity is about to open, evicting
// idle sessions to make room. ok is false when every candidate is busy.
// The caller frees victims and must fill or drop the reservation.
func (s *sessions) reserve(identity string) (victims []victim, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	victims = s.sweepLocked()
	if s.owned[identity] >= s.perIdentity {
		v := s.lruLocked(identity)
		if v == nil {
			return victims, false
		}
		victims = append(victims, s.evictLocked(v, "it was the least recently used of its client's "+strconv.Itoa(s.perIdentity)+" sessions (gateway.http.max_sessions) when the client opened another"))
	}
	if len(s.byID)+s.pending >= s.total {
		v := s.lruLocked("")
		if v == nil {
			return victims, false
		}
		victims = append(victims, s.evictLocked(v, "kiln reached gateway.http.max_sessions_total and it was the least recently used session"))
	}
	s.owned[identity]++
	s.pending++
	return victims, true
}

// fill turns identity's reservation into session id (a no-op for an id
// already known); drop gives the reservation back unused.
func (s *sessions) fill(identity, id, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending--
	if _, dup := s.byID[id]; dup {
		s.owned[identity]--
		return
	}
	delete(s.ended, id)
	s.byID[id] = &session{id: id, owner: identity, path: path, last: s.now(), open: map[uint64]context.CancelFunc{}}
}

func (s *sessions) drop(identity string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending--
	s.releaseLocked(identity)
}

// openStream fills identity's reservation with a session that is the
// stream itself; close ends both.
func (s *sessions) openStream(identity string, cancel context.CancelFunc) (close func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending--
	s.seq++
	// The space keeps it apart from any Mcp-Session-Id, which is visible
	// ASCII only.
	id := "stream " + strconv.FormatUint(s.seq, 10)
	s.byID[id] = &session{id: id, owner: identity, last: s.now(), stream: true,
		open: map[uint64]context.CancelFunc{s.seq: cancel}}
	return func() { s.remove(id, "") }
}

// begin marks a request open on session id for identity. A listen
// request (a GET stream) replaces the session's previous one, which is
// cancelled, so a session has at most one; the caller waits on replaced
// before serving, because the SDK drops a session's stream state when the
// stream that opened it returns. ok is false, with the reason for the
// client, when the id is not identity's open session.
func (s *sessions) begin(identity, id string, listen bool, cancel context.CancelFunc) (end func(), replaced <-chan struct{}, reason string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil || e.stream || e.owner != identity {
		if why := s.ended[id]; why != "" && (e == nil || e.owner == identity) {
			return nil, nil, why, false
		}
		return nil, nil, "kiln never issued it to this client (or has restarted since)", false
	}
	s.seq++
	key := s.seq
	var done chan struct{}
	if listen {
		if e.listen != 0 {
			if old := e.open[e.listen]; old != nil {
				old()
			}
			replaced = e.listenDone
		}
		done = make(chan struct{})
		e.listen, e.listenDone = key, done
	}
	e.open[key] = cancel
	e.last = s.now()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(e.open, key)
		if e.listen == key {
			e.listen, e.listenDone = 0, nil
		}
		if done != nil {
			close(done)
		}
		e.last = s.now()
	}, replaced, "", true
}

// remove forgets session id, remembering why when why is not empty.
func (s *sessions) remove(id, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byID[id]; e != nil {
		delete(s.byID, id)
		s.releaseLocked(e.owner)
	}
	if why != "" {
		s.rememberLocked(id, why)
	}
}

// sweep evicts every idle session.
func (s *sessions) sweep() []victim {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sweepLocked()
}

func (s *sessions) sweepLocked() []victim {
	var out []victim
	now := s.now()
	for _, e := range s.byID {
		if len(e.open) == 0 && now.Sub(e.last) > s.idle {
			out = append(out, s.evictLocked(e, "it was idle longer than gateway.http.session_idle ("+s.idle.String()+")"))
		}
	}
	return out
}

// lruLocked is the least recently used session with no request open,
// identity's own unless identity is empty.
func (s *sessions) lruLocked(identity string) *session {
	var best *session
	for _, e := range s.byID {
		if len(e.open) > 0 || (identity != "" && e.owner != identity) {
			continue
		}
		if best == nil || e.last.Before(best.last) {
			best = e
		}
	}
	return best
}

func (s *sessions) evictLocked(e *session, why string) victim {
	v := victim{id: e.id, why: why, stream: e.stream, path: e.path}
	for _, c := range e.open {
		v.cancels = append(v.cancels, c)
	}
	delete(s.byID, e.id)
	s.releaseLocked(e.owner)
	s.rememberLocked(e.id, why)
	return v
}

func (s *sessions) releaseLocked(identity string) {
	if s.owned[identity]--; s.owned[identity] <= 0 {
		delete(s.owned, identity)
	}
}

func (s *sessions) rememberLocked(id, why string) {
	if _, seen := s.ended[id]; !seen {
		s.order = append(s.order, id)
	}
	s.ended[id] = why
	if len(s.order) > maxEnded {
		delete(s.ended, s.order[0])
		s.order = s.order[1:]
	}
}

// held reports how many sessions identity holds or has reserved.
func (s *sessions) held(identity string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owned[identity]
}
