#!/usr/bin/env bash
# The main job of benchstream, end to end on local services:
#
#   1. install what is missing (deploy/local/install.sh) and build the three binaries
#   2. start nats-server + clickhouse-server on loopback (deploy/local/services.sh up)
#   3. apply the ClickHouse migrations and start event-sink in the background
#   4. run a scenario with agent-runner (default `smoke`: the scripted reference solution of
#      every shipped coding task, judged by the task's tests)
#   5. wait until ClickHouse holds every event the runs produced, then print the runs, the
#      leaderboard, the event counts by type and the lost-event check, read from ClickHouse
#   6. stop event-sink with SIGTERM (it drains and acks); the services keep running
#      (`deploy/local/services.sh down` stops them)
#
# Usage: deploy/local/demo.sh [SCENARIO]   (a name in scenarios/ or a path)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

scenario=${1:-smoke}
state_dir=${BENCH_STATE_DIR:-$PWD/.local/state}
out_dir=$PWD/.local/runs/demo-$(date -u +%Y%m%dT%H%M%SZ)
started_utc=$(date -u '+%Y-%m-%d %H:%M:%S')

export BENCH_NATS_URL=${BENCH_NATS_URL:-nats://127.0.0.1:${BENCH_NATS_PORT:-4222}}
export BENCH_CLICKHOUSE_URL=${BENCH_CLICKHOUSE_URL:-http://127.0.0.1:${BENCH_CH_HTTP_PORT:-8123}}
export BENCH_CLICKHOUSE_DATABASE=${BENCH_CLICKHOUSE_DATABASE:-benchstream}

say() { printf '\n==> %s\n' "$*"; }

say "install what is missing"
./deploy/local/install.sh

say "build agent-runner, event-sink and bench-analysis"
cargo build --quiet -p agent-runner -p event-sink -p bench-analysis --bins
bin=$PWD/target/debug

say "start nats-server and clickhouse-server"
./deploy/local/services.sh up

say "apply ClickHouse migrations"
"$bin/event-sink" migrate

say "start event-sink (log: $state_dir/event-sink.log)"
mkdir -p "$state_dir"
"$bin/event-sink" run --metrics-listen off >"$state_dir/event-sink.log" 2>&1 &
sink_pid=$!
stop_sink() {
	if kill -0 "$sink_pid" 2>/dev/null; then
		kill -TERM "$sink_pid"
		wait "$sink_pid" || true
	fi
}
trap stop_sink EXIT

say "run scenario $scenario (artifacts: $out_dir)"
runner_status=0
"$bin/agent-runner" run "$scenario" --concurrency 2 --out "$out_dir" --create-stream --no-progress ||
	runner_status=$?

ch() {
	curl -sS --fail-with-body "$BENCH_CLICKHOUSE_URL/?database=$BENCH_CLICKHOUSE_DATABASE" --data-binary "$1"
}

expected=$(cat "$out_dir"/*/events.jsonl | wc -l)
run_ids=$(find "$out_dir" -mindepth 1 -maxdepth 1 -type d -printf "'%f'," | sed 's/,$//')
say "wait until ClickHouse holds the $expected events of these runs"
landed=0
for _ in $(seq 1 120); do
	landed=$(ch "SELECT count() FROM events_raw FINAL WHERE run_id IN ($run_ids)")
	[ "$landed" -ge "$expected" ] && break
	sleep 0.5
done
if [ "$landed" -lt "$expected" ]; then
	echo "only $landed of $expected events reached ClickHouse; see $state_dir/event-sink.log" >&2
	exit 1
fi
echo "$landed events in ClickHouse"

say "runs (bench-analysis query runs)"
"$bin/bench-analysis" query runs --param "since=$started_utc"

say "leaderboard (bench-analysis query leaderboard)"
"$bin/bench-analysis" query leaderboard --param "since=$started_utc"

say "events by type"
ch "SELECT type, count() AS events FROM events_raw FINAL WHERE run_id IN ($run_ids)
    GROUP BY type ORDER BY events DESC FORMAT PrettyCompactNoEscapes"

say "lost-event check (bench-analysis query lost_events): no rows = no gaps"
"$bin/bench-analysis" query lost_events

say "done: $bin/agent-runner tail shows live events (or nats sub 'bench.events.>' with the nats CLI); ./deploy/local/services.sh down stops the services"
exit "$runner_status"
