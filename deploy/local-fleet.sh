#!/usr/bin/env bash
# A kiln fleet on loopback to try shared state: three `kiln serve --http`
# replicas sharing one Redis (gateway.state_url) behind HAProxy, which keeps
# each MCP session on its replica (sticky on Mcp-Session-Id) and sends
# nothing to a replica whose /readyz fails. Ctrl-C stops everything.
#
#   deploy/local-fleet.sh [kiln.yaml]      # default: the repository's kiln.yaml
#
# Needs bin/kiln (make build), redis-server, haproxy and curl on PATH
# (Debian: apt-get install redis-server haproxy curl). Ports: KILN_FLEET_PORT
# (default 8080) for the fleet, the next three for the replicas, the fourth
# for Redis, the fifth for HAProxy's stats page. Nothing is written outside
# a temporary folder, removed on exit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
config="$(realpath "${1:-$root/kiln.yaml}")"
port="${KILN_FLEET_PORT:-8080}"
kiln="${KILN_BIN:-$root/bin}/kiln"

for tool in redis-server haproxy curl; do
	command -v "$tool" >/dev/null || { echo "local-fleet: $tool is not on PATH; install it (apt-get install ${tool/redis-server/redis-server})" >&2; exit 1; }
done
[[ -x "$kiln" ]] || { echo "local-fleet: $kiln is missing; run make build first" >&2; exit 1; }
[[ -f "$config" ]] || { echo "local-fleet: config $config does not exist" >&2; exit 1; }

dir="$(mktemp -d "${TMPDIR:-/tmp}/kiln-fleet.XXXXXX")"
pids=()
# keep_logs is set when the fleet fails, so the logs it points to stay.
keep_logs=""
stop() {
	trap - INT TERM EXIT
	echo
	echo "local-fleet: stopping"
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [[ -n "$keep_logs" ]]; then
		echo "local-fleet: logs kept in $dir" >&2
	else
		rm -rf "$dir"
	fi
}
trap 'stop; exit 130' INT TERM
trap stop EXIT

# wait_ready URL WHAT: up to 60s for URL to answer 200.
wait_ready() {
	for _ in $(seq 600); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "local-fleet: $2 did not answer $1 within 60s; its log:" >&2
	tail -20 "$dir/${2##* }.log" >&2 2>/dev/null || true
	keep_logs=1
	exit 1
}

redis_port=$((port + 4))
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no \
	--daemonize no --loglevel warning >"$dir/redis.log" 2>&1 &
pids+=($!)
state_url="redis://127.0.0.1:$redis_port/0"
# The replicas refuse to start without their Redis: wait for it first.
for _ in $(seq 300); do
	(exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null && break
	sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null || {
	echo "local-fleet: redis-server did not listen on port $redis_port within 30s; its log:" >&2
	tail -20 "$dir/redis.log" >&2
	keep_logs=1
	exit 1
}

servers=""
for i in 1 2 3; do
	p=$((port + i))
	mkdir -p "$dir/k$i"
	# Each replica gets its own state_dir (backends' files such as
	# server-memory's); what replicas share goes to Redis.
	(cd "$root" && KILN_GATEWAY_STATE_URL="$state_url" KILN_GATEWAY_STATE_DIR="$dir/k$i" \
		exec "$kiln" serve --config "$config" --http "127.0.0.1:$p") >"$dir/k$i.log" 2>&1 &
	pids+=($!)
	servers+="  server k$i 127.0.0.1:$p check"$'\n'
done

cat >"$dir/haproxy.cfg" <<CFG
global
  maxconn 2000
defaults
  mode http
  timeout connect 2s
  timeout client 5m
  timeout server 5m
  option redispatch 1
  retries 3
  # A replica shutting down closes idle connections; retry a request
  # HAProxy had just sent on one. This also replays a call whose replica
  # was killed before answering.
  retry-on conn-failure empty-response
frontend mcp
  bind 127.0.0.1:$port
  default_backend kiln
frontend stats
  bind 127.0.0.1:$((port + 5))
  stats enable
  stats uri /
backend kiln
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter 1s fall 1 rise 2
  stick-table type string len 128 size 100k expire 30m
  stick match req.hdr(Mcp-Session-Id)
  stick store-response res.hdr(Mcp-Session-Id)
  http-response set-header X-Kiln-Replica %s
$servers
CFG

for i in 1 2 3; do wait_ready "http://127.0.0.1:$((port + i))/readyz" "replica k$i"; done
haproxy -db -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$port/readyz" "haproxy"

cat <<MSG
local-fleet: serving MCP at http://127.0.0.1:$port/mcp (3 replicas behind HAProxy)
  replicas:  k1 http://127.0.0.1:$((port + 1))  k2 http://127.0.0.1:$((port + 2))  k3 http://127.0.0.1:$((port + 3))
  redis:     $state_url
  stats:     http://127.0.0.1:$((port + 5))/
  logs:      $dir/*.log
Try: register a backend through one replica and call it through another; kill -9 a replica
(pids ${pids[1]} ${pids[2]} ${pids[3]}) and watch HAProxy move its sessions. Ctrl-C stops everything.
MSG
# Redis or HAProxy ending ends the fleet; a replica may be killed to try
# failover. (Polled: `wait -n PID...` needs bash 5.1.)
while kill -0 "${pids[0]}" 2>/dev/null && kill -0 "${pids[4]}" 2>/dev/null; do sleep 1; done
keep_logs=1
echo "local-fleet: redis-server or haproxy exited; see $dir/redis.log and $dir/haproxy.log" >&2
