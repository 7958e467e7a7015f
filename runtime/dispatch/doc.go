// Package dispatch routes tool calls to backend connections. It owns one
// connection slot per configured backend, connects them in the background so
// discovery can answer from the compiled registry at once, validates
// arguments against the recorded schema before anything leaves kiln, and
// applies each backend's call timeout.
//
// Lifecycle: New → Start (background connects) → CallTool from any
// goroutine → Close.
package dispatch
