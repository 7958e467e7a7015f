//go:build cgo

package sandbox

// threadSlack widens RLIMIT_AS for binaries built with cgo, where every
// OS thread the Go runtime adds is a pthread reserving an 8 MiB stack
// (measured: a worker past its idle size by a few threads crashed with
// "pthread_create failed"). Release builds use CGO_ENABLED=0, whose thread
// stacks come from the Go heap, and need none.
const threadSlack = 256 << 20
