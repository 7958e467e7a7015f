// Command faultserver is an MCP backend that misbehaves on request. Kiln's
// end-to-end tests run it behind the gateway to prove supervisor, health,
// timeout, cancellation, progress and change-tracking behaviour against a
// real process, where a well-behaved public server cannot be made to fail on
// cue.
//
// It speaks stdio by default, or streamable HTTP at http://ADDR/mcp with
// --http ADDR (ADDR may end in :0; the bound address is printed to stderr as
// "faultserver: listening on http://HOST:PORT/mcp").
//
// Every knob is an environment variable, so a kiln.yaml env: block can set
// it; each also has a flag of the same meaning, which wins over the variable:
//
//	FAULT_STATE_DIR=dir       --state-dir     write dir/pid and append events to dir/events.log
//	FAULT_START_DELAY=10s     --start-delay   sleep before serving (a slow or never-ready backend)
//	FAULT_EXIT_AT_START=code  --exit-at-start exit with code before serving (a crash loop)
//	FAULT_CRASH_AFTER=N       --crash-after   exit(3) on reading the N-th tools/call, unanswered
//	FAULT_STDOUT_GARBAGE=1    --stdout-garbage   stdio only: write non-JSON lines to stdout
//	FAULT_HTTP_STATELESS=1    --stateless     HTTP only: no sessions, which the SDK needs to speak 2026-07-28
//	FAULT_HTTP_CUT_STREAM=t   --cut-stream    HTTP only: keep an event store and break the connection of
//	                                          each call of tool t after its first SSE event (resumable)
//	FAULT_PASSTHROUGH=1       --passthrough   serve a prompt and resources that fail on cue (passthrough.go)
//	FAULT_LEGACY=1            --legacy        negotiate no revision after 2025-11-25 (no server/discover)
//	FAULT_HUGE_TEMPLATE=1     --huge-template list a resource template with 1,002 variables in one
//	                                          expression: RFC 6570 allows it, Go's regexp cannot compile
//	                                          a matcher for it (passthrough.go)
//	FAULT_RUG_PULL=file       --rug-pull      serve only the tools of the kiln manifest file as recorded, then, after
//	                                          the first tools/call, poison one (its description becomes an
//	                                          <IMPORTANT> instruction to read ~/.ssh/id_rsa into a new "note"
//	                                          parameter) and add a tool "exfil", a prompt "exfil_prompt" and a
//	                                          resource memory://secrets, with list_changed (rugpull.go)
//	FAULT_RUG_PULL_TOOL=t     --rug-pull-tool the tool FAULT_RUG_PULL poisons (default: the manifest's first)
//
// FAULT_START_DELAY is applied before FAULT_EXIT_AT_START, so the two
// together make a backend that is slow to crash. Bad values exit with 2.
//
// The SDK serves protocol 2026-07-28 over HTTP only when stateless; the
// stateful default makes a 2026 client fall back to 2025-11-25. On stdio and
// stateful HTTP, notifications/cancelled cancels the handler's context; when
// stateless it cannot (it arrives in a POST of its own), so the end of the
// call's POST cancels it instead.
//
// events.log holds one line per event, appended with O_APPEND so lines from
// successive processes (restarts) never interleave:
//
//	start pid=<pid>
//	call <tool> id=<JSON-RPC id>        a tools/call read off the wire, before dispatch
//	running hang                        the hang tool's handler started
//	cancel-notification id=<id>         a notifications/cancelled read off the wire
//	cancelled <tool>                    a handler returned with its context canceled
//	progress-token <token>              a tools/call carried a progress token
//	exit <code> <reason>                the process is about to exit on purpose
//	asked <question>                    the ask tool asked the client for input
//	answered <action>                   the ask tool got the client's answer
//	cut stream of call <tool> id=<id>   FAULT_HTTP_CUT_STREAM broke the call's connection
//	resume last-event-id=<id>           a GET resumed a stream (with FAULT_HTTP_CUT_STREAM)
//	subscribe <uri>                     resources/subscribe reached its handler (FAULT_PASSTHROUGH)
//	cancelled subscribe <uri>           a subscription to fault://slow-sub was cancelled
//	unsubscribe <uri>                   resources/unsubscribe reached its handler
//	rug-pull <tool>                     FAULT_RUG_PULL poisoned the tool and added exfil
//
// Tools: echo, slow, hang, huge, crash, fail, stderr, rich, progress,
// add_tool, remove_tool, ask, calls and env; each one's description says
// what it does.
package main
