// Package registry is the gateway's table of backends and their tools.
// Namespaced IDs ("backend.tool") are the source of truth; a bare tool name
// resolves only while exactly one backend publishes it, so adding a second
// backend with the same tool name retires the alias instead of silently
// changing what it points at.
//
// Lifecycle: New → Add (generated Register functions, then runtime
// registrations) → Resolve/Tools from any goroutine → Remove/Replace.
package registry
