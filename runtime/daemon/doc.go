// Package daemon lets many local MCP clients share one kiln: `kiln
// connect` finds (or starts) a kiln daemon on a user-private unix socket
// and relays its stdio to it byte for byte; the daemon serves each
// connection as a client session of its own and exits after an idle
// period with no connection.
//
// One daemon serves one config file with one build of kiln: the socket's
// name is derived from both (Key), and every connection starts with a
// hello line naming the key, which the daemon checks, so a client never
// talks to a daemon of another build even through a reused path.
//
// Client side: Identify → Dial; on ErrAbsent, Lock → Dial again → Spawn
// → unlock → Dial. Daemon side: Listen → Serve (returns on idle, on a
// stop request or when ctx ends) with Ready called once the server can
// take sessions.
package daemon
