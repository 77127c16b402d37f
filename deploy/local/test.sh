#!/usr/bin/env bash
# THE test command of benchstream (what .ci/run executes):
#
#   1. deploy/local/install.sh          install what is missing (servers, chdb); stops on failure
#   2. cargo fmt --all --check          formatting
#   3. cargo clippy ... -D warnings     lints, all targets
#   4. cargo build --workspace --bins   the binaries the end-to-end tests run as processes
#                                       (event-sink, bench-analysis) from target/debug/
#   5. cargo test --workspace           unit + end-to-end tests (they start their own servers)
#   6. deploy/clickhouse/chdb_check.py  DDL and shipped queries on current ClickHouse (if present)
#   7. scenarios/swe-pack/check.py      every SWE-bench task of the pack: repositories built from
#                                       the pinned PyPI sdists (cached under target/), gold patch
#                                       turns FAIL_TO_PASS from failing to passing, PASS_TO_PASS
#                                       passes both times
#
# Steps 2-7 all run even if one fails, so one run shows every problem; the exit status
# is non-zero if any failed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

export RUST_BACKTRACE=1
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

failed=()

step() {
	local name=$1
	shift
	printf '\n==> %s\n' "$name"
	if "$@"; then
		printf '==> %s: ok\n' "$name"
	else
		printf '==> %s: FAILED (exit %s)\n' "$name" "$?"
		failed+=("$name")
	fi
}

printf '==> install\n'
./deploy/local/install.sh

step "cargo fmt" cargo fmt --all --check
step "cargo clippy" cargo clippy --workspace --all-targets -- -D warnings
step "cargo build" cargo build --workspace --bins
step "cargo test" cargo test --workspace --no-fail-fast
if [ -f deploy/clickhouse/chdb_check.py ]; then
	step "chdb check" python3 deploy/clickhouse/chdb_check.py
else
	printf '\n==> chdb check: skipped (no deploy/clickhouse/chdb_check.py)\n'
fi
step "swe-pack check" python3 scenarios/swe-pack/check.py --cache target/swe-pack-sdists

if [ "${#failed[@]}" -gt 0 ]; then
	printf '\nFAILED: %s\n' "${failed[*]}"
	exit 1
fi
printf '\nall checks passed\n'
