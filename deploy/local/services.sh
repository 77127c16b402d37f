#!/usr/bin/env bash
# Local nats-server (JetStream) and clickhouse-server for development, on 127.0.0.1.
#
#   deploy/local/services.sh up       start both (no-op for one already running), wait until ready
#   deploy/local/services.sh down     stop both: SIGTERM, SIGKILL after BENCH_STOP_TIMEOUT
#   deploy/local/services.sh status   print what runs; exit 0 if both run, 3 otherwise
#
# Tests do not use these servers: they start their own (tests/src/harness). This is for
# running the pipeline by hand.
#
# Environment (defaults):
#   BENCH_STATE_DIR            <repo>/.local/state   data, logs, pid files, rendered configs
#   BENCH_NATS_PORT            4222                  NATS clients
#   BENCH_NATS_MONITOR_PORT    8222                  NATS monitoring (/healthz, /varz, /jsz)
#   BENCH_CH_HTTP_PORT         8123                  ClickHouse HTTP
#   BENCH_CH_TCP_PORT          9000                  ClickHouse native (clickhouse-client)
#   BENCH_CH_INTERSERVER_PORT  9009                  ClickHouse interserver (unused, always opened)
#   BENCH_READY_TIMEOUT        30                    seconds to wait for readiness
#   BENCH_STOP_TIMEOUT         30                    seconds between SIGTERM and SIGKILL
#
# Configs: nats-server runs deploy/nats/nats-server.conf as is (ports from the command
# line, store dir from BENCH_NATS_STORE_DIR); clickhouse-server runs
# deploy/local/clickhouse/config.xml.in rendered into the state dir, the same template the
# test harness renders.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
state=${BENCH_STATE_DIR:-$repo/.local/state}
nats_port=${BENCH_NATS_PORT:-4222}
nats_monitor_port=${BENCH_NATS_MONITOR_PORT:-8222}
ch_http_port=${BENCH_CH_HTTP_PORT:-8123}
ch_tcp_port=${BENCH_CH_TCP_PORT:-9000}
ch_interserver_port=${BENCH_CH_INTERSERVER_PORT:-9009}
ready_timeout=${BENCH_READY_TIMEOUT:-30}
stop_timeout=${BENCH_STOP_TIMEOUT:-30}

nats_dir=$state/nats
nats_pid=$nats_dir/nats-server.pid
nats_log=$nats_dir/nats-server.log
ch_dir=$state/clickhouse
ch_pid=$ch_dir/clickhouse-server.pid
ch_log=$ch_dir/log/console.log

# Servers are started with `setsid nohup`: own session, so a Ctrl-C in this terminal
# later does not reach them, and no SIGHUP when it closes. Neither forks (the
# background job is no group leader), so $! is the server's pid.

log() { printf '[services] %s\n' "$*"; }
die() {
	printf '[services] error: %s\n' "$*" >&2
	exit 1
}

usage() {
	printf 'usage: %s up|down|status\n' "$0" >&2
	exit 2
}

# Prints the pid from pid file $1 if that process runs and is a $2 (guards against a
# stale pid file whose pid was reused by another program).
running_pid() {
	local pidfile=$1 name=$2 pid
	[ -f "$pidfile" ] || return 1
	pid=$(<"$pidfile")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$name" || return 1
	printf '%s\n' "$pid"
}

# Prints the pid from pid file $1 if that process is alive (not exited, not a zombie),
# whatever its command line. For a server this script has just started: $! is its pid,
# but until the background shell has exec'd setsid, nohup and the server (which can take
# a while on a fresh machine), /proc/PID/cmdline still shows this script, and
# running_pid would take the server for dead. The pid cannot be stale: it is our own
# unreaped child.
started_pid() {
	local pidfile=$1 pid stat state
	pid=$(cat "$pidfile" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
	# The state follows the command name in parentheses, which may hold spaces.
	state=${stat##*) }
	state=${state%% *}
	[ -n "$state" ] && [ "$state" != Z ] || return 1
	printf '%s\n' "$pid"
}

# True if something accepts TCP connections on 127.0.0.1:$1.
port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

nats_ready() {
	port_open "$nats_port" &&
		curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$nats_monitor_port/healthz?js-enabled-only=true" 2>/dev/null
}

ch_ready() {
	[ "$(curl -fsS --max-time 2 "http://127.0.0.1:$ch_http_port/?query=SELECT%201" 2>/dev/null)" = 1 ]
}

tail_log() {
	printf -- '---- last lines of %s\n' "$1" >&2
	tail -n 30 "$1" >&2 2>/dev/null || true
	printf -- '----\n' >&2
}

# Fails if one of the ports is taken by a process we did not start.
check_ports_free() {
	local what=$1 port
	shift
	for port in "$@"; do
		if port_open "$port"; then
			die "port $port (for $what) is already in use by another process; pick others with the BENCH_* port variables"
		fi
	done
}

start_nats() {
	local pid
	if pid=$(running_pid "$nats_pid" nats-server); then
		log "nats-server already running (pid $pid)"
		return
	fi
	command -v nats-server >/dev/null || die "nats-server not found; run deploy/local/install.sh"
	check_ports_free nats-server "$nats_port" "$nats_monitor_port"
	mkdir -p "$nats_dir/store"
	# The config reads the store dir from the environment as a config value: quote it.
	BENCH_NATS_STORE_DIR="\"$nats_dir/store\"" setsid nohup nats-server \
		-c "$repo/deploy/nats/nats-server.conf" \
		-a 127.0.0.1 -p "$nats_port" -m "$nats_monitor_port" \
		>>"$nats_log" 2>&1 </dev/null &
	printf '%s\n' "$!" >"$nats_pid"
	log "nats-server started (pid $!, log $nats_log)"
}

render_ch_config() {
	local template config
	template=$(<"$repo/deploy/local/clickhouse/config.xml.in")
	# Quoted replacements: bash 5.2 would otherwise expand '&' in them.
	config=${template//@DIR@/"$ch_dir"}
	config=${config//@HTTP_PORT@/"$ch_http_port"}
	config=${config//@TCP_PORT@/"$ch_tcp_port"}
	config=${config//@INTERSERVER_HTTP_PORT@/"$ch_interserver_port"}
	printf '%s\n' "$config" >"$ch_dir/config.xml"
	cp "$repo/deploy/local/clickhouse/users.xml" "$ch_dir/users.xml"
}

start_clickhouse() {
	local pid
	if pid=$(running_pid "$ch_pid" clickhouse-server); then
		log "clickhouse-server already running (pid $pid)"
		return
	fi
	command -v clickhouse-server >/dev/null || die "clickhouse-server not found; run deploy/local/install.sh"
	check_ports_free clickhouse-server "$ch_http_port" "$ch_tcp_port" "$ch_interserver_port"
	case $ch_dir in
	*'&'* | *'<'* | *'>'*) die "BENCH_STATE_DIR must not contain &, < or > (it goes into XML)" ;;
	esac
	mkdir -p "$ch_dir"/{data,tmp,user_files,format_schemas,log}
	render_ch_config
	setsid nohup clickhouse-server --config-file="$ch_dir/config.xml" \
		>>"$ch_log" 2>&1 </dev/null &
	printf '%s\n' "$!" >"$ch_pid"
	log "clickhouse-server started (pid $!, logs $ch_dir/log/)"
}

# Waits until both are ready; fails with the log tail of one that died or is late.
wait_ready() {
	local deadline=$((SECONDS + ready_timeout)) nats_up=false ch_up=false
	while :; do
		if [ "$nats_up" = false ]; then
			started_pid "$nats_pid" >/dev/null || {
				tail_log "$nats_log"
				die "nats-server exited during start-up"
			}
			if nats_ready; then
				nats_up=true
				log "nats-server ready: nats://127.0.0.1:$nats_port (monitor http://127.0.0.1:$nats_monitor_port)"
			fi
		fi
		if [ "$ch_up" = false ]; then
			started_pid "$ch_pid" >/dev/null || {
				tail_log "$ch_dir/log/clickhouse-server.err.log"
				tail_log "$ch_log"
				die "clickhouse-server exited during start-up"
			}
			if ch_ready; then
				ch_up=true
				log "clickhouse-server ready: http://127.0.0.1:$ch_http_port (native port $ch_tcp_port)"
			fi
		fi
		if [ "$nats_up" = true ] && [ "$ch_up" = true ]; then
			return
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			[ "$nats_up" = true ] || tail_log "$nats_log"
			[ "$ch_up" = true ] || tail_log "$ch_dir/log/clickhouse-server.err.log"
			die "not ready after ${ready_timeout}s (still running; see logs, or run: $0 down)"
		fi
		sleep 0.2
	done
}

# stop <name> <pidfile>: SIGTERM, wait, SIGKILL after the timeout.
stop_one() {
	local name=$1 pidfile=$2 pid deadline
	if ! pid=$(running_pid "$pidfile" "$name"); then
		log "$name not running"
		rm -f "$pidfile"
		return
	fi
	kill -TERM "$pid" 2>/dev/null || true
	deadline=$((SECONDS + stop_timeout))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "$name (pid $pid) still running after ${stop_timeout}s: SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	rm -f "$pidfile"
	log "$name stopped (pid $pid)"
}

status_one() {
	local name=$1 pidfile=$2 ready_check=$3 where=$4 pid
	if pid=$(running_pid "$pidfile" "$name"); then
		if "$ready_check"; then
			log "$name running (pid $pid), ready at $where"
		else
			log "$name running (pid $pid), NOT ready at $where"
			return 1
		fi
	else
		log "$name stopped"
		return 1
	fi
}

case ${1:-} in
up)
	mkdir -p "$state"
	start_nats
	start_clickhouse
	wait_ready
	log "state dir: $state"
	;;
down)
	stop_one nats-server "$nats_pid"
	stop_one clickhouse-server "$ch_pid"
	;;
status)
	rc=0
	status_one nats-server "$nats_pid" nats_ready "nats://127.0.0.1:$nats_port" || rc=3
	status_one clickhouse-server "$ch_pid" ch_ready "http://127.0.0.1:$ch_http_port" || rc=3
	log "state dir: $state"
	exit "$rc"
	;;
*) usage ;;
esac
