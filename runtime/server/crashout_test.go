package server

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
)

// Go's fuzz coordinator discards its workers' stdout and stderr, so a crash
// testing cannot catch (a panic on one of the server's goroutines, a fatal
// error such as a concurrent map write) reads only "fuzzing process hung or
// terminated unexpectedly". With $KILN_CRASH_DIR set (tests/fuzz.sh sets
// it), every process of this test binary also writes such a crash's report
// to a file of its own there, and fuzz.sh prints the ones that are not
// empty.
func init() {
	dir := os.Getenv("KILN_CRASH_DIR")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("crash-%d.txt", os.Getpid())))
	if err != nil {
		fmt.Fprintf(os.Stderr, "KILN_CRASH_DIR: %v\n", err)
		return
	}
	if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
		fmt.Fprintf(os.Stderr, "KILN_CRASH_DIR: %v\n", err)
	}
	f.Close() // SetCrashOutput keeps its own descriptor
}
