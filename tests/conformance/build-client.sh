#!/usr/bin/env bash
# Builds the go-sdk's conformance everything-client (the yardstick kiln's
# client harness is compared with) at go.mod's go-sdk version, in a scratch
# module: its package needs go.sum entries kiln's module does not carry.
#
#   tests/conformance/build-client.sh OUT_BINARY
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?usage: build-client.sh OUT_BINARY}
pkg=github.com/modelcontextprotocol/go-sdk/conformance/everything-client
ver=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/modelcontextprotocol/go-sdk)
scratch=$repo/.cache/conformance-client/$ver

if [[ ! -f $scratch/go.sum ]]; then
	rm -rf "$scratch"
	mkdir -p "$scratch"
	(cd "$scratch" && go mod init kiln.local/conformance-client >/dev/null 2>&1 &&
		go get "$pkg@$ver" >/dev/null 2>&1) || {
		echo "build-client: go get $pkg@$ver failed in $scratch" >&2
		rm -rf "$scratch"
		exit 1
	}
fi
(cd "$scratch" && CGO_ENABLED=0 go build -o "$out" "$pkg")
