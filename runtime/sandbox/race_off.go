//go:build !race

package sandbox

// raceSlack widens RLIMIT_AS under the race detector (race_on.go).
const raceSlack = 0
