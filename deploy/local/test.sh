#!/usr/bin/env bash
# THE test command of benchstream (what .ci/run executes):
#
#   1. deploy/local/install.sh          install what is missing (servers, chdb); stops on failure
#   2. cargo fmt --all --check          formatting
#   3. cargo clippy ... -D warnings     lints, all targets
#   4. cargo build --workspace --bins   the binaries the end-to-end tests run as processes
#                                       (event-sink, bench-analysis) from target/debug/
#   5. cargo test --workspace           unit + end-to-end tests (they start their own servers);
#                                       the output is kept in target/test-output.log and each
#                                       failing test's panic message is repeated at the end
#   6. deploy/clickhouse/chdb_check.py  DDL and shipped queries on current ClickHouse (if present)
#   7. scenarios/swe-pack/check.py      every SWE-bench task of the pack: repositories built from
#                                       the pinned PyPI sdists (cached under target/), gold patch
#                                       turns FAIL_TO_PASS from failing to passing, PASS_TO_PASS
#                                       passes both times
#   8. the pack through agent-runner    `tasks import swe-bench` of the pack's repositories, then
#                                       `tasks validate --repeat 2`: every task imported, none
#                                       broken, in the agent sandbox with the judge's own rules
#   9. deploy/local/test_readme_blocks.py  the tests of the README block runner
#  10. deploy/local/readme_blocks.py    every ```sh block of the Markdown files, as written, in
#                                       a fresh copy of the repository with services of its own
#                                       (or marked <!-- not-run: REASON -->); this script's own
#                                       line is left out
#
# Steps 2-10 all run even if one fails, so one run shows every problem; the exit status
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
# The test output is kept, so that the end of this script can repeat why each failing test
# failed: the last lines of a long run are what a CI log shows first.
test_log=target/test-output.log
run_tests() {
	mkdir -p target
	cargo test --workspace --no-fail-fast 2>&1 | tee "$test_log"
	return "${PIPESTATUS[0]}"
}
# Each failing test's name and panic message (without the captured output or backtrace).
failure_messages() {
	awk '
		/^---- .* ----$/ { print; next }
		/panicked at/ { grab = 15 }
		/^stack backtrace:/ || /^note: / { grab = 0 }
		grab > 0 { print; grab-- }
	' "$test_log"
}
step "cargo test" run_tests
if [ -f deploy/clickhouse/chdb_check.py ]; then
	step "chdb check" python3 deploy/clickhouse/chdb_check.py
else
	printf '\n==> chdb check: skipped (no deploy/clickhouse/chdb_check.py)\n'
fi
step "swe-pack check" python3 scenarios/swe-pack/check.py --cache target/swe-pack-sdists

# The pack as a user runs it: built, imported and validated by the runner built in step 4,
# started in a directory of its own with relative paths and the default `scenarios`
# directory, as scenarios/swe-pack/README.md writes it.
swe_pack_import() {
	local work root rc=0
	root=$PWD
	work=$(mktemp -d)
	python3 scenarios/swe-pack/build.py --out "$work/repos" --cache target/swe-pack-sdists >/dev/null &&
		cp scenarios/swe-pack/instances.jsonl "$work/" &&
		(cd "$work" &&
			"$root/target/debug/agent-runner" tasks import swe-bench \
				--instances instances.jsonl --repos repos --scenario swe-pack &&
			"$root/target/debug/agent-runner" tasks validate swe-pack --repeat 2) || rc=$?
	rm -rf "$work"
	return "$rc"
}
step "swe-pack import and validate" swe_pack_import

step "readme blocks runner tests" python3 -m unittest discover -s deploy/local -p 'test_*.py'
# The binaries of step 4 on PATH; the blocks' own `cargo run` reuses target/.
step "readme blocks" python3 deploy/local/readme_blocks.py

if [ "${#failed[@]}" -gt 0 ]; then
	if [[ " ${failed[*]} " == *" cargo test "* ]]; then
		printf '\n==> why the failing tests failed\n'
		failure_messages
	fi
	printf '\nFAILED: %s\n' "${failed[*]}"
	exit 1
fi
printf '\nall checks passed\n'
