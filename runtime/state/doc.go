// Package state keeps what several kiln replicas behind a load balancer
// must agree on (runtime registrations, search usage counts, OAuth tokens)
// in one Redis database named by gateway.state_url. Each consumer declares
// the small interface it needs next to itself and keeps its own file
// implementation for gateway.state_dir; this package is the Redis one, and
// the only place that imports the Redis client.
//
// Lifecycle: Open (pings, fails when Redis does not answer) → Hash,
// Counters from any goroutine → Close. While open, a monitor pings Redis
// and logs every change between reachable and unreachable.
package state
