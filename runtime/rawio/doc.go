// Package rawio reads and writes pipes and sockets with raw system calls,
// waiting in the runtime's poller only when the kernel has nothing to
// give (EAGAIN).
//
// An *os.File's Read and Write enter the scheduler's system-call state,
// and every entry wakes the runtime's monitor thread when it sleeps, which
// it does whenever the process goes idle: between two calls of an agent,
// that is on every call. In a tier-1 call's profile (BenchmarkEchoHop) the
// monitor's wake-ups and 20 µs naps were a fifth of kiln's CPU. A read or
// write on a nonblocking pipe or socket never blocks, so it needs none of
// that state.
//
// Lifecycle: New (or Reopen for the process's own stdin and stdout) →
// Read/Write from any goroutines → Close.
package rawio
