//go:build race

package sandbox

// raceSlack widens RLIMIT_AS under the race detector, whose shadow memory
// is mapped in 128 MiB steps as the heap grows and counts as address space.
const raceSlack = 2 << 30
