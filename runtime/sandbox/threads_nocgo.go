//go:build !cgo

package sandbox

// threadSlack widens RLIMIT_AS for cgo builds (threads_cgo.go).
const threadSlack = 0
