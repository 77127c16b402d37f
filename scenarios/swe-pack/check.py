#!/usr/bin/env python3
"""Checks every task of the SWE-bench-format pack against the real projects.

Owns: the proof that each instance is a valid SWE-bench task. It builds the repositories
with `build.py` into a temporary directory (base_commit must come out as recorded), then,
for every instance, in a checkout of base_commit:

  1. `git apply --check` succeeds for `patch` and for `test_patch`;
  2. with `test_patch` applied, FAIL_TO_PASS ∪ PASS_TO_PASS run with plain pytest
     (`python -m pytest -rA`, the statuses read from its summary lines): every
     FAIL_TO_PASS test fails (or errors, or is not reported) and every PASS_TO_PASS
     test passes;
  3. with `patch` applied as well, every one of them passes.

It prints one line per instance and a summary, and exits 1 if any check failed. It runs
the projects' own tests on the host with the current python (pytest and the
`pip_packages` of each instance must be installed: deploy/local/install.sh does it); it
changes nothing outside its temporary directory and the sdist cache.

Standard library only. Usage:
    check.py [--sdists DIR] [--cache DIR] [--instances FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ of build.py in the source tree
import build  # noqa: E402 (after the line above on purpose)

# The summary lines of `pytest -rA`: "PASSED <node id>", "FAILED <node id> - <message>".
SUMMARY_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.+)$")


@dataclass
class Outcome:
    """What one instance's check found; `problems` empty means valid."""

    instance_id: str
    f2p: int
    p2p: int
    problems: list[str] = field(default_factory=list)


def test_ids(inst: dict, key: str) -> list[str]:
    """FAIL_TO_PASS / PASS_TO_PASS: a JSON-encoded string in the published dataset, a
    list in some copies of it; both are accepted."""
    value = inst[key]
    return json.loads(value) if isinstance(value, str) else list(value)


def statuses(stdout: str, ids: list[str]) -> dict[str, str]:
    """Each test id's status in the pytest summary; ids it does not name are absent.
    A FAILED/ERROR line carries " - <message>" after the id, so ids are matched exactly
    or as a prefix followed by that separator (ids may contain spaces)."""
    wanted = set(ids)
    found: dict[str, str] = {}
    for line in stdout.splitlines():
        m = SUMMARY_LINE.match(line)
        if not m:
            continue
        status, rest = m.groups()
        if rest in wanted:
            found[rest] = status
        elif " - " in rest:
            head = rest.split(" - ", 1)[0]
            if head in wanted:
                found[head] = status
    return found


def run_tests(checkout: Path, ids: list[str]) -> tuple[dict[str, str], str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *ids],
        cwd=checkout, env=env, capture_output=True, text=True,
    )
    return statuses(r.stdout, ids), r.stdout + r.stderr


def git_apply(checkout: Path, diff: str, check_only: bool) -> str | None:
    """None when the diff applies, else git's complaint."""
    args = ["git", "apply", "--check", "-"] if check_only else ["git", "apply", "-"]
    r = subprocess.run(args, cwd=checkout, input=diff, text=True, capture_output=True)
    return None if r.returncode == 0 else r.stderr.strip()


def check_instance(inst: dict, repo: Path, work: Path) -> Outcome:
    f2p, p2p = test_ids(inst, "FAIL_TO_PASS"), test_ids(inst, "PASS_TO_PASS")
    out = Outcome(inst["instance_id"], len(f2p), len(p2p))
    checkout = work / inst["instance_id"]
    try:
        build.git(["worktree", "add", "-q", "--detach", str(checkout), inst["base_commit"]], repo)
    except build.BuildError as e:
        out.problems.append(f"no checkout of base_commit: {e}")
        return out
    for name in ("patch", "test_patch"):
        err = git_apply(checkout, inst[name], check_only=True)
        if err:
            out.problems.append(f"{name} does not apply: {err}")
    if out.problems:
        return out
    if err := git_apply(checkout, inst["test_patch"], check_only=False):
        out.problems.append(f"test_patch: {err}")
        return out
    before, log_before = run_tests(checkout, f2p + p2p)
    if err := git_apply(checkout, inst["patch"], check_only=False):
        out.problems.append(f"patch: {err}")
        return out
    after, log_after = run_tests(checkout, f2p + p2p)
    for t in f2p:
        if before.get(t) == "PASSED":
            out.problems.append(f"FAIL_TO_PASS passes before the gold patch: {t}")
        if after.get(t) != "PASSED":
            out.problems.append(f"FAIL_TO_PASS {after.get(t, 'not reported')} after the gold patch: {t}")
    for t in p2p:
        for when, got in (("before", before), ("after", after)):
            if got.get(t) != "PASSED":
                out.problems.append(f"PASS_TO_PASS {got.get(t, 'not reported')} {when} the gold patch: {t}")
    if out.problems:
        out.problems.append(f"pytest before: {not_passed(log_before)}")
        out.problems.append(f"pytest after: {not_passed(log_after)}")
    return out


def not_passed(log: str) -> str:
    """The summary lines of a pytest log that are not passes, and its last line."""
    lines = [ln for ln in log.splitlines() if SUMMARY_LINE.match(ln) and not ln.startswith("PASSED ")]
    last = log.strip().splitlines()[-1:] if log.strip() else ["(no output)"]
    return "\n       ".join(["", *lines, *last])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sdists", type=Path, help="a directory holding the pinned sdists")
    p.add_argument("--cache", type=Path, default=build.default_cache(),
                   help="download cache (default: %(default)s)")
    p.add_argument("--instances", type=Path, default=build.DEFAULT_INSTANCES,
                   help="default: %(default)s")
    p.add_argument("--keep", type=Path,
                   help="build into this directory and keep it, instead of a temporary one")
    args = p.parse_args(argv)

    try:
        instances = build.load_instances(args.instances)
    except (OSError, build.BuildError) as e:
        print(f"check.py: {e}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="swe-pack-check-"))
    out_dir = args.keep or work / "repos"
    try:
        try:
            commits = build.build(instances, out_dir, args.sdists, args.cache)
        except build.BuildError as e:
            print(f"check.py: build failed: {e}", file=sys.stderr)
            return 1
        failed = False
        for line in build.check_base_commits(instances, commits):
            print(f"FAIL build: {line}")
            failed = True
        outcomes = []
        for inst in instances:
            repo = out_dir / inst["repo"].replace("/", "__")
            outcome = check_instance(inst, repo, work / "checkouts")
            outcomes.append(outcome)
            if outcome.problems:
                print(f"FAIL {outcome.instance_id}: FAIL_TO_PASS {outcome.f2p}, PASS_TO_PASS {outcome.p2p}")
            else:
                print(f"ok   {outcome.instance_id}: FAIL_TO_PASS {outcome.f2p} fail -> pass, "
                      f"PASS_TO_PASS {outcome.p2p} pass -> pass")
            for problem in outcome.problems:
                print(f"     {problem}")
        if args.keep:
            for inst in instances:
                build.git(["worktree", "prune"], out_dir / inst["repo"].replace("/", "__"))
        bad = [o for o in outcomes if o.problems]
        f2p, p2p = sum(o.f2p for o in outcomes), sum(o.p2p for o in outcomes)
        print(f"{len(outcomes) - len(bad)} of {len(outcomes)} instances valid "
              f"({f2p} FAIL_TO_PASS, {p2p} PASS_TO_PASS tests)")
        return 1 if failed or bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
