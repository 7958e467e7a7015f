#!/usr/bin/env bash
# Runs every fuzz target in the module for the given budget each: an
# execution count such as 50000x (default). Counts, not durations, because
# Go 1.26's fuzz coordinator can fail a duration run at its deadline with a
# bare "context deadline exceeded" and no finding (golang/go#75804).
# Minimization is capped: on a busy 2-core machine the default 60s
# minimization of a large input can use a whole run's budget.
#
# Each run's `go test -json` events are appended to $KILN_TESTRUN_JSON
# (default .cache/testrun/fuzz.json) for testreport's summary; $TESTREPORT
# is the testreport binary (default: go run ./tests/testreport).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-50000x}"
json=${KILN_TESTRUN_JSON:-.cache/testrun/fuzz.json}
read -ra report <<<"${TESTREPORT:-go run ./tests/testreport}"
mkdir -p "$(dirname "$json")"
: >"$json"
one=$(mktemp -d)
trap 'rm -rf "$one"' EXIT
# Test binaries that read it write a crash their fuzz worker could not
# report (see replay) to a file here.
export KILN_CRASH_DIR="$one/crashes"
mkdir -p "$KILN_CRASH_DIR"
# Targets that run a whole MCP session per input cost ~5 ms an execution;
# they get a tenth of the budget so CI stays within its time.
slow=" FuzzJSONRPC "
total=0

# replay shows a finding again outside the fuzzer. A fuzz worker's own
# stdout and stderr go nowhere, so when it crashes (a panic on a goroutine
# of its own, a fatal error) the coordinator says only "hung or terminated
# unexpectedly"; run alone, the input prints its panic and stack, and the
# input itself is shown so a CI log is enough to reproduce it.
replay() {
  local pkg=$1 target=$2 events=$3 dir input crash
  for crash in "$KILN_CRASH_DIR"/*; do
    [[ -s $crash ]] || continue
    echo "== a fuzz worker's crash ($crash):"
    head -c 20000 "$crash"
  done
  input=$(grep -o "testdata/fuzz/${target}/[0-9a-f]*" "$events" | tail -1) || return 0
  dir=$(go list -f '{{.Dir}}' "$pkg")
  echo "== the failing input, $pkg $input:"
  head -c 4000 "$dir/$input"
  echo
  echo "== replayed outside the fuzzer: go test -run '^${target}\$/^${input##*/}\$' $pkg"
  go test -count=3 -v -run "^${target}\$/^${input##*/}\$" "$pkg" 2>&1 | tail -n 80 || true
}
# The targets come from the test files go list selects, not from
# `go test -list`, which links a test binary of every package in the
# module (a minute on 2 cores) to find 26 functions.
while read -r pkg files; do
  [[ -n $files ]] || continue
  # shellcheck disable=SC2086 # files is a list
  targets=$(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(\w+ \*testing\.F\).*/\1/p' $files)
  for target in $targets; do
    budget=$fuzztime
    if [[ $slow == *" $target "* && $fuzztime =~ ^([0-9]+)x$ ]]; then
      budget="$(( BASH_REMATCH[1] / 10 ))x"
    fi
    echo "== $pkg $target ($budget)"
    rc=0
    go test -json -run '^$' -fuzz "^${target}\$" -fuzztime "$budget" -fuzzminimizetime 3s "$pkg" 2>"$one/stderr" |
      "${report[@]}" stream -quiet "$one/events.json" || rc=$?
    cat "$one/events.json" >>"$json"
    if ((rc != 0)); then
      cat "$one/stderr"
      replay "$pkg" "$target" "$one/events.json"
      exit 1
    fi
    execs=$(grep -o 'execs: [0-9]*' "$one/events.json" | tail -1 | grep -o '[0-9]*' || echo 0)
    echo "   ok, ${execs} executions"
    total=$((total + execs))
  done
done < <(go list -f '{{.ImportPath}}{{range .TestGoFiles}} {{$.Dir}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$.Dir}}/{{.}}{{end}}' ./...)
echo "fuzz: ${total} executions in total"
