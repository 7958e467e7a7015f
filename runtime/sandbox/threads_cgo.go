//go:build cgo

package sandbox

// threadSlack widens RLIMIT_AS for binaries built with cgo, where every
// OS thread the Go runtime adds is a pthread reserving its own stack
// (8 MiB by default: a busy worker crashed with "pthread_create failed").
// The worker lowers that to 1 MiB (smallThreadStacks); this is room for 32
// threads. Release builds use CGO_ENABLED=0, whose thread stacks come from
// the Go heap, and need none.
const threadSlack = 32 << 20
