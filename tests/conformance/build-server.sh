#!/usr/bin/env bash
# Builds the go-sdk's conformance everything-server, the reference server
# that run.sh fronts with kiln in direct mode, at the go-sdk version kiln's
# go.mod requires, in a scratch module (the server's package needs go.sum
# entries kiln's module does not carry).
#
#   tests/conformance/build-server.sh OUT_BINARY
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?usage: build-server.sh OUT_BINARY}
pkg=github.com/modelcontextprotocol/go-sdk/conformance/everything-server
ver=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/modelcontextprotocol/go-sdk)
scratch=$repo/.cache/conformance-server/$ver

if [[ ! -f $scratch/go.sum ]]; then
	rm -rf "$scratch"
	mkdir -p "$scratch"
	(cd "$scratch" && go mod init kiln.local/conformance-server >/dev/null 2>&1 &&
		go get "$pkg@$ver" >/dev/null 2>&1) || {
		echo "build-server: go get $pkg@$ver failed in $scratch" >&2
		rm -rf "$scratch"
		exit 1
	}
fi
(cd "$scratch" && CGO_ENABLED=0 go build -o "$out" "$pkg")
