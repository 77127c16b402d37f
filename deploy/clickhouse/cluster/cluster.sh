#!/usr/bin/env bash
# A local ClickHouse cluster on 127.0.0.1: 2 shards x 2 replicas of clickhouse-server and
# one ZooKeeper, for trying the cluster layout (event-sink --cluster benchstream)
# on one machine. Configs are rendered into the state dir from
# deploy/local/clickhouse/config.xml.in (what every local server runs), cluster.xml.in
# (remote_servers, macros, ZooKeeper) and zoo.cfg.in.
#
#   deploy/clickhouse/cluster/cluster.sh up       start what is not running, wait until every
#                                                 server answers and sees ZooKeeper
#   deploy/clickhouse/cluster/cluster.sh down     stop the servers, then ZooKeeper: SIGTERM,
#                                                 SIGKILL after BENCH_STOP_TIMEOUT
#   deploy/clickhouse/cluster/cluster.sh status   one line per process and the HTTP URLs;
#                                                 exit 0 if all five run, 3 otherwise
#   deploy/clickhouse/cluster/cluster.sh url      the HTTP URL of the first server
#
# Servers: s1r1 s1r2 (shard 1), s2r1 s2r2 (shard 2); server number N = 1..4 in that order.
#
# Environment (defaults):
#   BENCH_CH_CLUSTER_DIR         <repo>/.local/clickhouse-cluster   data, logs, configs, pids
#   BENCH_CH_CLUSTER_HTTP_BASE   8130        server N: HTTP on base+N (8131..8134)
#   BENCH_CH_CLUSTER_TCP_BASE    9130        server N: native protocol on base+N
#   BENCH_CH_CLUSTER_INTER_BASE  9180        server N: interserver (replication) on base+N
#   BENCH_ZK_PORT                2191        ZooKeeper client port
#   BENCH_ZK_HEAP_MB             128         ZooKeeper's Java heap
#   BENCH_READY_TIMEOUT          60          seconds to wait for readiness
#   BENCH_STOP_TIMEOUT           30          seconds between SIGTERM and SIGKILL
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
state=${BENCH_CH_CLUSTER_DIR:-$repo/.local/clickhouse-cluster}
http_base=${BENCH_CH_CLUSTER_HTTP_BASE:-8130}
tcp_base=${BENCH_CH_CLUSTER_TCP_BASE:-9130}
inter_base=${BENCH_CH_CLUSTER_INTER_BASE:-9180}
zk_port=${BENCH_ZK_PORT:-2191}
zk_heap_mb=${BENCH_ZK_HEAP_MB:-128}
zk_classpath=/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar
ready_timeout=${BENCH_READY_TIMEOUT:-60}
stop_timeout=${BENCH_STOP_TIMEOUT:-30}
servers=(s1r1 s1r2 s2r1 s2r2)
zk_dir=$state/zookeeper

log() { printf '[ch-cluster] %s\n' "$*"; }
die() {
	printf '[ch-cluster] error: %s\n' "$*" >&2
	exit 1
}

usage() {
	printf 'usage: %s up|down|status|url\n' "$0" >&2
	exit 2
}

# Server number (1..4) of name $1.
number() {
	local i
	for i in "${!servers[@]}"; do
		[ "${servers[$i]}" = "$1" ] && printf '%s\n' $((i + 1)) && return
	done
	return 1
}

# Prints the pid in pid file $1 if that process runs and its command line holds $2
# (guards against a stale pid file whose pid was reused).
running_pid() {
	local pid
	[ -f "$1" ] || return 1
	pid=$(<"$1")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2" || return 1
	printf '%s\n' "$pid"
}

port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# ZooKeeper serves sessions (`ruok` answers before the data is loaded; `stat` names the
# mode only once it serves).
zk_ready() {
	(exec 3<>"/dev/tcp/127.0.0.1/$zk_port" && printf stat >&3 && timeout 2 cat <&3) 2>/dev/null | grep -q '^Mode: '
}

start_zookeeper() {
	local pid
	if pid=$(running_pid "$zk_dir/zookeeper.pid" "$zk_dir/zoo.cfg"); then
		log "zookeeper already running (pid $pid)"
		return
	fi
	[ -f /usr/share/java/zookeeper.jar ] || die "zookeeper not installed; run deploy/local/install.sh"
	command -v java >/dev/null || die "java not found; run deploy/local/install.sh"
	port_open "$zk_port" && die "port $zk_port (zookeeper) is in use by another process; set BENCH_ZK_PORT"
	mkdir -p "$zk_dir/data" "$zk_dir/log"
	local config
	config=$(<"$here/zoo.cfg.in")
	config=${config//@DIR@/"$zk_dir"}
	config=${config//@PORT@/"$zk_port"}
	printf '%s\n' "$config" >"$zk_dir/zoo.cfg"
	# Debian's jar (its manifest names its dependencies) and one slf4j binding, the one
	# that logs to stderr: with several on the classpath slf4j picks one, maybe the no-op.
	setsid nohup java -Xmx"${zk_heap_mb}m" -Xms16m -XX:+UseSerialGC \
		-cp "$zk_classpath" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$zk_dir/zoo.cfg" \
		>>"$zk_dir/log/console.log" 2>&1 </dev/null &
	printf '%s\n' "$!" >"$zk_dir/zookeeper.pid"
	log "zookeeper started (pid $!, port $zk_port, log $zk_dir/log/console.log)"
}

# Renders config.xml, users.xml and config.d/cluster.xml of server $1.
render_server() {
	local name=$1 n dir config
	n=$(number "$name")
	dir=$state/$name
	mkdir -p "$dir"/{data,tmp,user_files,format_schemas,log,config.d}
	config=$(<"$repo/deploy/local/clickhouse/config.xml.in")
	config=${config//@DIR@/"$dir"}
	config=${config//@HTTP_PORT@/$((http_base + n))}
	config=${config//@TCP_PORT@/$((tcp_base + n))}
	config=${config//@INTERSERVER_HTTP_PORT@/$((inter_base + n))}
	printf '%s\n' "$config" >"$dir/config.xml"
	cp "$repo/deploy/local/clickhouse/users.xml" "$dir/users.xml"
	config=$(<"$here/cluster.xml.in")
	config=${config//@SHARD@/${name:1:1}}
	config=${config//@REPLICA@/"$name"}
	config=${config//@ZK_PORT@/"$zk_port"}
	config=${config//@S1R1_TCP_PORT@/$((tcp_base + 1))}
	config=${config//@S1R2_TCP_PORT@/$((tcp_base + 2))}
	config=${config//@S2R1_TCP_PORT@/$((tcp_base + 3))}
	config=${config//@S2R2_TCP_PORT@/$((tcp_base + 4))}
	printf '%s\n' "$config" >"$dir/config.d/cluster.xml"
}

start_server() {
	local name=$1 n dir pid port
	n=$(number "$name")
	dir=$state/$name
	if pid=$(running_pid "$dir/clickhouse-server.pid" clickhouse-server); then
		log "$name already running (pid $pid)"
		return
	fi
	command -v clickhouse-server >/dev/null || die "clickhouse-server not found; run deploy/local/install.sh"
	for port in $((http_base + n)) $((tcp_base + n)) $((inter_base + n)); do
		port_open "$port" && die "port $port ($name) is in use by another process; set the BENCH_CH_CLUSTER_*_BASE variables"
	done
	render_server "$name"
	setsid nohup clickhouse-server --config-file="$dir/config.xml" \
		>>"$dir/log/console.log" 2>&1 </dev/null &
	printf '%s\n' "$!" >"$dir/clickhouse-server.pid"
	log "$name started (pid $!, http 127.0.0.1:$((http_base + n)), logs $dir/log/)"
}

# Server $1 answers, and reads ZooKeeper (system.zookeeper needs a session).
server_ready() {
	local n
	n=$(number "$1")
	[ "$(curl -fsS --max-time 2 "http://127.0.0.1:$((http_base + n))/" \
		--data-binary "SELECT count() > 0 FROM system.zookeeper WHERE path = '/'" 2>/dev/null)" = 1 ]
}

up() {
	local name deadline ready
	deadline=$((SECONDS + ready_timeout))
	start_zookeeper
	# A server loading Replicated tables at start gives up if ZooKeeper does not answer.
	until zk_ready; do
		running_pid "$zk_dir/zookeeper.pid" "$zk_dir/zoo.cfg" >/dev/null || {
			tail -n 20 "$zk_dir/log/console.log" >&2 || true
			die "zookeeper exited during start-up"
		}
		[ "$SECONDS" -lt "$deadline" ] || die "zookeeper not ready after ${ready_timeout}s (log $zk_dir/log/console.log)"
		sleep 0.2
	done
	for name in "${servers[@]}"; do start_server "$name"; done
	while :; do
		running_pid "$zk_dir/zookeeper.pid" "$zk_dir/zoo.cfg" >/dev/null || {
			tail -n 20 "$zk_dir/log/console.log" >&2 || true
			die "zookeeper exited during start-up"
		}
		ready=0
		for name in "${servers[@]}"; do
			running_pid "$state/$name/clickhouse-server.pid" clickhouse-server >/dev/null || {
				tail -n 20 "$state/$name/log/clickhouse-server.err.log" >&2 || true
				die "$name exited during start-up"
			}
			server_ready "$name" && ready=$((ready + 1))
		done
		[ "$ready" -eq "${#servers[@]}" ] && zk_ready && break
		[ "$SECONDS" -lt "$deadline" ] || die "cluster not ready after ${ready_timeout}s (logs in $state/)"
		sleep 0.3
	done
	log "cluster benchstream ready: 2 shards x 2 replicas; first server $(url)"
}

# Stops the process of pid file $1 (command line holding $2), named $3.
stop_process() {
	local pid deadline
	pid=$(running_pid "$1" "$2") || return 0
	kill -TERM "$pid"
	deadline=$((SECONDS + stop_timeout))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			kill -KILL "$pid" 2>/dev/null || true
			log "$3 killed after ${stop_timeout}s"
			break
		fi
		sleep 0.1
	done
	rm -f "$1"
	log "$3 stopped"
}

down() {
	local name
	for name in "${servers[@]}"; do
		stop_process "$state/$name/clickhouse-server.pid" clickhouse-server "$name"
	done
	stop_process "$zk_dir/zookeeper.pid" "$zk_dir/zoo.cfg" zookeeper
}

url() {
	printf 'http://127.0.0.1:%s\n' $((http_base + 1))
}

status() {
	local name pid running=0
	if pid=$(running_pid "$zk_dir/zookeeper.pid" "$zk_dir/zoo.cfg"); then
		running=$((running + 1))
		printf 'zookeeper  running  pid %s  127.0.0.1:%s\n' "$pid" "$zk_port"
	else
		printf 'zookeeper  stopped\n'
	fi
	for name in "${servers[@]}"; do
		if pid=$(running_pid "$state/$name/clickhouse-server.pid" clickhouse-server); then
			running=$((running + 1))
			printf '%s       running  pid %s  http://127.0.0.1:%s\n' "$name" "$pid" $((http_base + $(number "$name")))
		else
			printf '%s       stopped\n' "$name"
		fi
	done
	[ "$running" -eq $((${#servers[@]} + 1)) ] || exit 3
}

case ${1:-} in
up) up ;;
down) down ;;
status) status ;;
url) url ;;
*) usage ;;
esac
