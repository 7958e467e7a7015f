#!/usr/bin/env bash
# Builds one of the go-sdk's conformance programs: everything-server (the
# reference server run.sh fronts with kiln in direct mode) or
# everything-client (the reference client client.sh compares kiln with), at
# the go-sdk version kiln's go.mod requires, in a scratch module (their
# packages need go.sum entries kiln's module does not carry).
#
#   tests/conformance/build-gosdk.sh everything-server|everything-client OUT_BINARY
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
prog=${1:?usage: build-gosdk.sh everything-server|everything-client OUT_BINARY}
out=${2:?usage: build-gosdk.sh everything-server|everything-client OUT_BINARY}
case $prog in
everything-server | everything-client) ;;
*) echo "build-gosdk: unknown program $prog; want everything-server or everything-client" >&2; exit 2 ;;
esac
pkg=github.com/modelcontextprotocol/go-sdk/conformance/$prog
ver=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/modelcontextprotocol/go-sdk)
scratch=$repo/.cache/conformance-$prog/$ver

if [[ ! -f $scratch/go.sum ]]; then
	rm -rf "$scratch"
	mkdir -p "$scratch"
	(cd "$scratch" && go mod init "kiln.local/conformance-$prog" >/dev/null 2>&1 &&
		go get "$pkg@$ver" >/dev/null 2>&1) || {
		echo "build-gosdk: go get $pkg@$ver failed in $scratch" >&2
		rm -rf "$scratch"
		exit 1
	}
fi
(cd "$scratch" && CGO_ENABLED=0 go build -o "$out" "$pkg")
