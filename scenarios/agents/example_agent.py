#!/usr/bin/env python3
"""Minimal external agent for `agent-runner exec` (protocol: agent-runner/docs/exec-protocol.md).

    agent-runner exec --scenario smoke --task sh-ci-exit-status -- python3 scenarios/agents/example_agent.py

It does not solve anything: it looks around its working directory (a scratch copy of the
task's fixture), reads the largest file, and stops, writing one JSON line per event on
stdout. The runner adds ids, seq, timestamps and hashes, emits run_start, and, since this
agent sends no run_stop, judges the working directory and emits run_stop itself.
Standard library only; anything printed on stderr is just log.
"""

import hashlib
import json
import os
import subprocess
import sys
import time


def emit(event_type, data, step=None):
    """Writes one event line; `step` groups the events of one agent step."""
    line = {"type": event_type, "data": data}
    if step is not None:
        line["step"] = step
    sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def args_hash(args):
    """SHA-256 of the canonical JSON of the tool arguments (sorted keys, no whitespace)."""
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def text_step(step_type, content, wall_time_ms=None):
    """A step; what this agent did not measure (tokens: it calls no model; the time of a
    step it did not time; the context it sent to no model) is null, never 0."""
    return {
        "step_type": step_type,
        "content": content,
        "tokens_in": None,
        "tokens_out": None,
        "wall_time_ms": wall_time_ms,
        "planned_step": None,
        "context_kb": None,
    }


def run_tool(step, command, files_read=()):
    """Runs a shell command as one tool call: act, tool_call, observe."""
    emit("step", text_step("act", command), step)
    started = time.monotonic()
    proc = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30)
    latency_ms = int((time.monotonic() - started) * 1000)
    output = proc.stdout + proc.stderr
    call = {
        "tool_name": "bash",
        "tool_args_hash": args_hash({"command": command}),
        "latency_ms": latency_ms,
        "retries": 0,
        "exit_kind": "ok" if proc.returncode == 0 else "deterministic",
        "evidence_footprint": {
            "files_read": list(files_read),
            "files_modified": [],
            "lines_changed": 0,
            "tests_added": 0,
            "tests_modified": 0,
            "bytes_read": len(output.encode("utf-8")),
            "bytes_written": 0,
        },
    }
    emit("tool_call", call, step)
    emit("step", text_step("observe", output, latency_ms), step)
    return output


def main():
    os.chdir(os.environ["BENCH_WORKDIR"])
    task = os.environ["BENCH_TASK_ID"]
    config = json.loads(os.environ["BENCH_RUN_CONFIG"])
    print(f"example agent: task {task}, run {os.environ['BENCH_RUN_ID']}, "
          f"model {config['model']}", file=sys.stderr)

    emit("step", text_step("reason", "List the project files first."), step=1)
    listing = run_tool(1, "find . -type f | sort")

    files = [line[2:] for line in listing.splitlines() if line.startswith("./")]
    if files:
        largest = max(files, key=lambda f: os.path.getsize(f))
        emit("step", text_step("reason", f"Read the largest file, {largest}."), step=2)
        run_tool(2, f"cat '{largest}'", files_read=[largest])

    emit("step", text_step("conclude", "Example agent: looked around, changed nothing."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
