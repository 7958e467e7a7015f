// Command testreport turns the `go test -json` event streams of a test run
// into what a person reads: live progress shaped like plain `go test`
// output while a stage runs, and, at the end of `make test`, one table of
// every stage's wall time and result with each skipped test and its
// reason and each failed test by name. A bare "ok" line per package hides
// that a fleet test skipped because redis-server was missing; the table
// is where that shows.
//
//	go test -json ./... | testreport stream [-quiet] FILE
//	testreport summary DIR
//
// stream copies the events to FILE unchanged and prints, like go test in
// package list mode, one line per package and the full output of each
// failed test and failed package; with -quiet it prints only failures.
//
// summary reads DIR/stages.tsv (one "name start end exit-status" line per
// stage, times in Unix seconds, written by tests/testrun.sh) and every
// DIR/<stage>.json, prints the table and exits 1 when a stage failed. With
// CI=true a skipped test fails the run too, so a green CI run is one that
// ran everything; $KILN_ALLOW_SKIP names tests (space separated, as
// Package.TestName or TestName) whose skip is the machine's and not the
// setup's, such as a kernel without Landlock.
package main
