package server

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// logState is the log level forwarded to every backend, the level each
// client session asked for, and the sessions backend logs go to.
type logState struct {
	mu    sync.Mutex
	level string
	// levels holds each session's logging/setLevel. Backends are shared,
	// so they get the most verbose level any session asked for, and each
	// session's messages are filtered to its own level.
	levels   map[string]mcp.LoggingLevel
	sessions map[string]bool
	// initializing counts each session's initialize requests in flight,
	// and ended marks those of them whose session ended meanwhile: a
	// legacy SSE client that disconnects in the middle of initialize is
	// unregistered before the initialize hook that would add it to
	// sessions runs, and it must not be added after.
	initializing map[string]int
	ended        map[string]bool
	warned       map[string]bool // routing warnings already logged; guarded by passthru.mu
}

func (l *logState) init() {
	l.sessions = map[string]bool{}
	l.levels = map[string]mcp.LoggingLevel{}
	l.initializing = map[string]int{}
	l.ended = map[string]bool{}
}

// startInit notes an initialize request of session in flight.
func (l *logState) startInit(session string) {
	l.mu.Lock()
	l.initializing[session]++
	l.mu.Unlock()
}

// endInit notes the end of one of session's initialize requests and, when
// logs is set and the session has not ended meanwhile, has it get the logs
// backends send outside any call.
func (l *logState) endInit(session string, logs bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if logs && !l.ended[session] {
		l.sessions[session] = true
	}
	if l.initializing[session]--; l.initializing[session] <= 0 {
		delete(l.initializing, session)
		delete(l.ended, session)
	}
}

// end forgets session, which ended.
func (l *logState) end(session string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.sessions, session)
	if l.initializing[session] > 0 {
		l.ended[session] = true
	}
}

// set records session's level and returns the level backends should get,
// or "" when it is unchanged.
func (l *logState) set(session string, level mcp.LoggingLevel) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.levels[session] = level
	most := level
	for _, lv := range l.levels {
		if most.ShouldSendTo(lv) {
			most = lv
		}
	}
	if string(most) == l.level {
		return ""
	}
	l.level = string(most)
	return l.level
}

// drop forgets session's level and returns the level backends should get
// now, or "" when it is unchanged. When no session has a level left,
// backends keep the last one: MCP has no way to hand a backend back its
// own default, and a session that never set a level gets every message
// anyway (admits).
func (l *logState) drop(session string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.levels[session]; !ok {
		return ""
	}
	delete(l.levels, session)
	var most mcp.LoggingLevel
	for _, lv := range l.levels {
		if most == "" || most.ShouldSendTo(lv) {
			most = lv
		}
	}
	if most == "" || string(most) == l.level {
		return ""
	}
	l.level = string(most)
	return l.level
}

// of returns the level session set, or "".
func (l *logState) of(session string) mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.levels[session]
}

// admits reports whether session asked for messages of level; a session
// that never set a level gets what backends send.
func (l *logState) admits(session string, level mcp.LoggingLevel) bool {
	l.mu.Lock()
	floor, ok := l.levels[session]
	l.mu.Unlock()
	return !ok || level.ShouldSendTo(floor)
}

// apply sends the level clients asked for to one backend.
func (l *logState) apply(ctx context.Context, s *Server, name string) {
	l.mu.Lock()
	level := l.level
	l.mu.Unlock()
	if level == "" {
		return
	}
	if err := s.opts.Passthrough.SetLevel(ctx, name, level); err != nil {
		s.log.Debug("could not forward the log level", "backend", name, "err", err)
	}
}
