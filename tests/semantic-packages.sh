#!/usr/bin/env bash
# Prints those of the packages named by its arguments (go list patterns)
# whose tests build other code under -tags semantic than without it: the
# packages holding a file with a semantic build constraint, and those whose
# test binaries link one. `make semantic` tests only these; every other
# package's tests run the same code in `make race`.
#
#   tests/semantic-packages.sh ./runtime/search/semantic/... ./cmd/...
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
tagged=$(grep -rlE '^//go:build .*\bsemantic\b' --include='*.go' --exclude-dir=node_modules --exclude-dir=.cache . |
  xargs -r dirname | sort -u | sed "s|^\.|$mod|")
# -test lists each package P and its test main, "P.test", whose Deps are
# all of its test binary; a dependency built for that test reads
# "Q [P.test]". A package with no test files (a main) counts for vet.
go list -tags semantic -test -f '{{.ImportPath}}|{{join .Deps ","}}' "$@" |
  awk -F'|' -v tagged="$tagged" '
    BEGIN { n = split(tagged, t, "\n"); for (i = 1; i <= n; i++) T[t[i]] = 1 }
    $1 ~ / / { next }
    {
      p = $1; sub(/\.test$/, "", p)
      hit = p in T
      n = split($2, deps, ",")
      for (i = 1; i <= n && !hit; i++) {
        d = deps[i]; sub(/ \[.*\]$/, "", d)
        hit = d in T
      }
      if (hit && !(p in seen)) { seen[p] = 1; print p }
    }'
