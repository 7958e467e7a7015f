#!/usr/bin/env bash
# Runs every fuzz target in the module for the given budget each: an
# execution count such as 50000x (default). Counts, not durations, because
# Go 1.26's fuzz coordinator can fail a duration run at its deadline with a
# bare "context deadline exceeded" and no finding (golang/go#75804).
# Minimization is capped: on a busy 2-core machine the default 60s
# minimization of a large input can use a whole run's budget.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-50000x}"
# Targets that run a whole MCP session per input cost ~5 ms an execution;
# they get a tenth of the budget so CI stays within its time.
slow=" FuzzJSONRPC "
total=0
for pkg in $(go list ./...); do
  targets=$(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
  for target in $targets; do
    budget=$fuzztime
    if [[ $slow == *" $target "* && $fuzztime =~ ^([0-9]+)x$ ]]; then
      budget="$(( BASH_REMATCH[1] / 10 ))x"
    fi
    echo "== $pkg $target ($budget)"
    out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$budget" -fuzzminimizetime 3s "$pkg" 2>&1) || { echo "$out"; exit 1; }
    execs=$(grep -o 'execs: [0-9]*' <<<"$out" | tail -1 | grep -o '[0-9]*' || echo 0)
    echo "   ok, ${execs} executions"
    total=$((total + execs))
  done
done
echo "fuzz: ${total} executions in total"
