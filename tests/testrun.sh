#!/usr/bin/env bash
# make test: emit-check and the shared builds first, then the stages side by
# side in lanes, then tests/testreport's summary of what ran, skipped and
# failed, and each stage's wall time.
#
# A lane runs its stages one after another; the lanes run at once. On 2
# cores the Go test stages are CPU bound and gain nothing from sharing the
# cores with each other, so they form one lane; e2e and conformance spend
# most of their time waiting on the processes and sockets they drive, and
# lint and the release checks are short, so they fill the gaps beside it.
#
# Each stage is a make target whose output goes to .cache/testrun/<stage>.log
# and is printed as one block when the stage ends, so lines of two stages
# never mix. A failed stage fails the run; the other stages still finish,
# so the summary covers the whole run, and the failed stages' last lines
# follow it.
set -uo pipefail
cd "$(dirname "$0")/.."
read -ra make <<<"${MAKE:-make}"
make+=(--no-print-directory)
report=${TESTREPORT:-.cache/bin/testreport}
dir=.cache/testrun
lanes=(
	"race semantic fuzz-short"
	"e2e conformance"
	"lint release-check helm-check"
)

rm -rf "$dir"
mkdir -p "$dir"

# say prints a block under a lock, whole, between other stages' blocks.
say() {
	{
		flock 9
		cat
	} 9>"$dir/.print"
}

# stage runs make NAME with BUILT=1, records its wall time in stages.tsv
# and prints its log when it ends.
stage() {
	local name=$1 start end rc=0
	echo "-- $name started" | say
	start=$(date +%s)
	"${make[@]}" BUILT=1 "$name" >"$dir/$name.log" 2>&1 || rc=$?
	end=$(date +%s)
	echo "$name $start $end $rc" >>"$dir/stages.tsv"
	{
		if ((rc == 0)); then
			echo "== $name: ok, $((end - start))s"
		else
			echo "== $name: FAILED (exit $rc), $((end - start))s"
		fi
		cat "$dir/$name.log"
	} | say
	return "$rc"
}

lane() {
	local s rc=0
	for s in "$@"; do
		stage "$s" || rc=1
	done
	return "$rc"
}

status=0
# emit rewrites generated/, which every other stage compiles, so it runs
# alone; test-deps builds bin/ and the tools once for all.
stage emit-check || status=1
stage test-deps || status=1
if ((status == 0)); then
	pids=()
	for l in "${lanes[@]}"; do
		# shellcheck disable=SC2086 # a lane is a list of stages
		lane $l &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || status=1
	done
fi
"$report" summary "$dir" || status=1
# Each failed stage's last lines once more, at the very end, where a CI log
# cut to its tail still shows why.
while read -r name _ _ rc; do
	((rc == 0)) && continue
	echo "== $name failed; the last lines of $dir/$name.log:"
	tail -n 25 "$dir/$name.log"
done <"$dir/stages.tsv"
exit "$status"
