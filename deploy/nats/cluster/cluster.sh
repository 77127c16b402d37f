#!/usr/bin/env bash
# A 3-node NATS cluster with JetStream on 127.0.0.1, for trying R3 streams and failover
# on one machine. Each node runs deploy/nats/cluster/node-N.conf.
#
#   deploy/nats/cluster/cluster.sh up       start the nodes not running, wait until the
#                                           cluster has a JetStream meta leader
#   deploy/nats/cluster/cluster.sh down     stop every node: SIGTERM, SIGKILL after BENCH_STOP_TIMEOUT
#   deploy/nats/cluster/cluster.sh status   one line per node, the meta leader and the client
#                                           URLs; exit 0 if all three run, 3 otherwise
#
# Clients (runner, sink) take every node:  --nats-url "$(cluster.sh urls)"
# and the stream needs 3 replicas:         event-sink --stream-replicas 3
#
# Environment (defaults):
#   BENCH_CLUSTER_DIR            <repo>/.local/cluster   stores, logs, pid files (node-N/)
#   BENCH_CLUSTER_CLIENT_BASE    4230                    node N listens on base+N (4231..4233)
#   BENCH_CLUSTER_ROUTE_BASE     6230                    cluster routes on base+N
#   BENCH_CLUSTER_MONITOR_BASE   8230                    monitoring (/healthz, /jsz) on base+N
#   BENCH_READY_TIMEOUT          30                      seconds to wait for readiness
#   BENCH_STOP_TIMEOUT           30                      seconds between SIGTERM and SIGKILL
#
# The node configs carry the default ports; other bases are passed on the command line
# (-p, -m, --cluster, --routes), which nats-server lets win over the file.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
state=${BENCH_CLUSTER_DIR:-$repo/.local/cluster}
client_base=${BENCH_CLUSTER_CLIENT_BASE:-4230}
route_base=${BENCH_CLUSTER_ROUTE_BASE:-6230}
monitor_base=${BENCH_CLUSTER_MONITOR_BASE:-8230}
ready_timeout=${BENCH_READY_TIMEOUT:-30}
stop_timeout=${BENCH_STOP_TIMEOUT:-30}
nodes=(1 2 3)

log() { printf '[cluster] %s\n' "$*"; }
die() {
	printf '[cluster] error: %s\n' "$*" >&2
	exit 1
}

usage() {
	printf 'usage: %s up|down|status|urls\n' "$0" >&2
	exit 2
}

# Prints the pid of node $1 if it runs (and is a nats-server: guards against pid reuse).
node_pid() {
	local pidfile=$state/node-$1/nats-server.pid pid
	[ -f "$pidfile" ] || return 1
	pid=$(<"$pidfile")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q nats-server || return 1
	printf '%s\n' "$pid"
}

port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

urls() {
	local n out=()
	for n in "${nodes[@]}"; do out+=("nats://127.0.0.1:$((client_base + n))"); done
	(
		IFS=,
		printf '%s\n' "${out[*]}"
	)
}

routes() {
	local n out=()
	for n in "${nodes[@]}"; do out+=("nats://127.0.0.1:$((route_base + n))"); done
	(
		IFS=,
		printf '%s\n' "${out[*]}"
	)
}

# The JetStream meta leader as node $1 sees it; empty while there is none.
meta_leader() {
	curl -fsS --max-time 2 "http://127.0.0.1:$((monitor_base + $1))/jsz" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin).get("meta_cluster",{}).get("leader",""))' 2>/dev/null || true
}

node_ready() {
	curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$((monitor_base + $1))/healthz?js-enabled-only=true" 2>/dev/null
}

start_node() {
	local n=$1 dir=$state/node-$1 pid port
	if pid=$(node_pid "$n"); then
		log "node $n already running (pid $pid)"
		return
	fi
	for port in $((client_base + n)) $((route_base + n)) $((monitor_base + n)); do
		port_open "$port" && die "port $port (node $n) is in use by another process; set the BENCH_CLUSTER_*_BASE variables"
	done
	mkdir -p "$dir/store"
	# The config reads the store dir from the environment as a config value: quote it.
	BENCH_NATS_STORE_DIR="\"$dir/store\"" setsid nohup nats-server \
		-c "$here/node-$n.conf" \
		-a 127.0.0.1 -p $((client_base + n)) -m $((monitor_base + n)) \
		--cluster "nats://127.0.0.1:$((route_base + n))" --routes "$(routes)" \
		>>"$dir/nats-server.log" 2>&1 </dev/null &
	printf '%s\n' "$!" >"$dir/nats-server.pid"
	log "node $n started (pid $!, client port $((client_base + n)), log $dir/nats-server.log)"
}

up() {
	command -v nats-server >/dev/null || die "nats-server not found; run deploy/local/install.sh"
	local n deadline leader=
	for n in "${nodes[@]}"; do start_node "$n"; done
	deadline=$((SECONDS + ready_timeout))
	while :; do
		local ready=0
		for n in "${nodes[@]}"; do
			node_pid "$n" >/dev/null || {
				tail -n 20 "$state/node-$n/nats-server.log" >&2 || true
				die "node $n exited during start-up"
			}
			node_ready "$n" && ready=$((ready + 1))
		done
		leader=$(meta_leader 1)
		[ "$ready" -eq 3 ] && [ -n "$leader" ] && break
		[ "$SECONDS" -lt "$deadline" ] || die "cluster not ready after ${ready_timeout}s (logs in $state/node-*/)"
		sleep 0.2
	done
	log "cluster ready: JetStream meta leader $leader; clients: $(urls)"
}

down() {
	local n pid deadline
	for n in "${nodes[@]}"; do
		pid=$(node_pid "$n") || continue
		kill -TERM "$pid"
		deadline=$((SECONDS + stop_timeout))
		while kill -0 "$pid" 2>/dev/null; do
			if [ "$SECONDS" -ge "$deadline" ]; then
				kill -KILL "$pid" 2>/dev/null || true
				log "node $n killed after ${stop_timeout}s"
				break
			fi
			sleep 0.1
		done
		rm -f "$state/node-$n/nats-server.pid"
		log "node $n stopped"
	done
}

status() {
	local n pid running=0
	for n in "${nodes[@]}"; do
		if pid=$(node_pid "$n"); then
			running=$((running + 1))
			printf 'node %s  running  pid %s  client 127.0.0.1:%s\n' "$n" "$pid" $((client_base + n))
		else
			printf 'node %s  stopped\n' "$n"
		fi
	done
	for n in "${nodes[@]}"; do
		if node_pid "$n" >/dev/null; then
			printf 'meta leader: %s\n' "$(meta_leader "$n")"
			break
		fi
	done
	printf 'clients: %s\n' "$(urls)"
	[ "$running" -eq 3 ] || exit 3
}

case ${1:-} in
up) up ;;
down) down ;;
status) status ;;
urls) urls ;;
*) usage ;;
esac
