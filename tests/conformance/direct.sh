# Sourced by run.sh: the direct-mode comparison. Uses run.sh's $here,
# $repo, $out, $node, $suite, $revisions, $server_bin (built by run.sh),
# start_kiln, stop_kiln, and appends to failed and flaky.

# free_port prints a loopback port nothing listens on.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# start_server runs the everything-server over HTTP as the suite's authors
# do for each revision: with sessions on 2025-11-25 (sampling and
# elicitation need a stream back to the client), stateless on 2026-07-28.
start_server() {
	local rev=$1 dir=$2 port stateless=true
	[[ $rev == 2025-11-25 ]] && stateless=false
	port=$(free_port)
	"$server_bin" -http "127.0.0.1:$port" -stateless="$stateless" 2>"$dir/server.log" &
	server_pid=$!
	server_url=http://127.0.0.1:$port/mcp
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "conformance: everything-server did not start; its log:" >&2
	cat "$dir/server.log" >&2
	return 1
}

# mcp_post sends one JSON-RPC message to kiln's streamable HTTP endpoint.
mcp_post() {
	curl -s --max-time 5 -X POST "$url" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25' \
		${sid:+-H "Mcp-Session-Id: $sid"} "$@"
}

# wait_listed waits until kiln's answer to METHOD (tools/list,
# resources/list) names WHAT: the backend is not compiled in, so kiln
# serves its fixtures once it connects.
wait_listed() {
	local dir=$1 method=$2 what=$3 hdr=$dir/probe.headers sid=
	mcp_post -D "$hdr" -o /dev/null \
		-d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"run.sh","version":"1"}}}'
	sid=$(grep -i '^mcp-session-id:' "$hdr" | cut -d' ' -f2 | tr -d '\r')
	mcp_post -o /dev/null -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	for _ in $(seq 300); do
		if mcp_post -d '{"jsonrpc":"2.0","id":2,"method":"'"$method"'"}' | grep -qF "$what"; then
			curl -s --max-time 5 -X DELETE "$url" -H "Mcp-Session-Id: $sid" -o /dev/null || true
			return 0
		fi
		sleep 0.1
	done
	echo "conformance: kiln's $method never named $what; its log:" >&2
	cat "$dir/kiln.log" >&2
	return 1
}

# compare_direct runs the suite against the server directly and through
# kiln for each revision and compares the two. A scenario kiln loses is run
# once more through the same kiln, which keeps whatever state the whole
# suite left in it (a loss that state causes is lost again; a fresh kiln
# would hide it, though a loss that needs the scenario just before it may
# still pass alone): lost again, the revision fails; passing the second
# time, it is reported as flaky with the first run's failed checks
# (KILN_CONFORMANCE_RERUN=0 fails on the first loss). A kiln that exits
# while the suite runs fails the revision either way, with its log's last
# lines.
compare_direct() {
	local rev dir rc lost
	for rev in "${revisions[@]}"; do
		dir=$out/direct-$rev
		mkdir -p "$dir/server" "$dir/kiln"
		start_server "$rev" "$dir" || { stop_server; failed+=("direct-$rev (the everything-server did not start)"); continue; }
		echo "== conformance $rev against the everything-server directly at $server_url"
		(cd "$dir/server" && "$node" "$suite" server --url "$server_url" --requirements "$rev" \
			-o "$dir/server/results") >"$dir/server/summary.txt" 2>&1 || true
		stop_server

		start_direct_kiln "$dir/kiln" || { failed+=("direct-$rev (kiln did not start or never listed the backend's tools; see $dir/kiln/kiln.log)"); continue; }
		echo "== conformance $rev against kiln (expose: direct) fronting it over stdio at $url"
		(cd "$dir/kiln" && "$node" "$suite" server --url "$url" --requirements "$rev" \
			-o "$dir/kiln/results") >"$dir/kiln/summary.txt" 2>&1 || true
		if ! kiln_lived "$dir/kiln"; then
			# The table still goes in the log, for the record.
			"$node" "$here/compare.mjs" "$rev" "$dir/server/results" "$dir/kiln/results" 2>&1 | tee "$dir/compare.txt" || true
			failed+=("direct-$rev (kiln exited during the suite)")
			continue
		fi

		rc=0
		"$node" "$here/compare.mjs" "$rev" "$dir/server/results" "$dir/kiln/results" "$dir/lost.txt" 2>&1 | tee "$dir/compare.txt" || rc=$?
		if ((rc != 0)); then
			lost=$(paste -sd ' ' "$dir/lost.txt" 2>/dev/null || true)
			if [[ ${KILN_CONFORMANCE_RERUN:-1} == 0 || -z $lost ]]; then
				failed+=("direct-$rev (kiln lost: ${lost:-see compare.txt})")
			else
				rerun_lost "$rev" "$dir" "$lost"
			fi
		fi
		stop_kiln
	done
}

# start_direct_kiln starts kiln on direct.yaml and waits until it serves
# the backend's tools.
start_direct_kiln() {
	local dir=$1
	KILN_CONFORMANCE_SERVER=$server_bin start_kiln "$dir" "$here/direct.yaml" || { stop_kiln; return 1; }
	wait_listed "$dir" tools/list test_simple_text || { stop_kiln; return 1; }
}

# kiln_lived reports whether the kiln the suite just ran against is still
# running; when it is not, it prints how it ended and its log's last lines.
kiln_lived() {
	local dir=$1 rc=0
	kill -0 "$kiln_pid" 2>/dev/null && return 0
	wait "$kiln_pid" || rc=$?
	kiln_pid=
	echo "conformance: kiln exited (status $rc) while the suite ran against it; the last lines of $dir/kiln.log:" >&2
	tail -n 40 "$dir/kiln.log" >&2
	return 1
}

# rerun_lost runs the scenarios kiln lost (LOST, space separated) once more
# through the kiln still running at $url and records the revision as failed
# or flaky.
rerun_lost() {
	local rev=$1 dir=$2 lost=$3 again=$2/kiln-again s still rc=0
	mkdir -p "$again"
	echo "== conformance $rev: running the scenarios kiln lost once more through the same kiln: $lost"
	for s in $lost; do
		# --force: the revision's requirements include extension
		# scenarios, which --spec-version alone skips.
		(cd "$again" && "$node" "$suite" server --url "$url" --scenario "$s" --spec-version "$rev" --force \
			-o "$again/results") >>"$again/summary.txt" 2>&1 || true
	done
	if ! kiln_lived "$dir/kiln"; then
		failed+=("direct-$rev (kiln lost: $lost; kiln exited on the second run)")
		return
	fi
	# shellcheck disable=SC2086 # lost is a list of scenario names
	still=$("$node" "$here/compare.mjs" --again "$rev" "$dir/server/results" "$again/results" $lost 2>&1) || rc=$?
	local twice passed=
	twice=$(sed -nE 's/^  - ([^:]+):.*/\1/p' <<<"$still" | paste -sd ' ')
	if ((rc != 0)) && [[ -z $twice ]]; then
		echo "$still"
		failed+=("direct-$rev (kiln lost: $lost; compare.mjs failed on the second run, see above)")
		return
	fi
	for s in $lost; do
		[[ " $twice " == *" $s "* ]] || passed+="${passed:+ }$s"
	done
	if [[ -n $passed ]]; then
		flaky+=("direct-$rev: $passed")
		echo "$rev: passed through kiln the second time, reported as flaky: $passed"
	fi
	if ((rc != 0)); then
		echo "$still"
		failed+=("direct-$rev (kiln lost, twice: $twice)")
	fi
}
