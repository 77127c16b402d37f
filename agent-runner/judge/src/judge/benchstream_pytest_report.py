"""Judge-owned pytest plugin: the per-test report of a SWE-bench-format task's judging.

Imported first by the judge's entry point (`benchstream_pytest_judge.py`), before any
module of the repository can run. BENCH_JUDGE_REPORT names the report file, in the
judge's report directory; the token the judge left beside it (file `token`) is read and
deleted, and the report opened, when this module is imported. The report holds one `passed <nodeid>` / `failed <nodeid>`
line per test that ran and a `duration <seconds> <nodeid>` line after each, then
`complete <token>`, with a `shadows <module> <path>` line before it for each module of the
repository named like an installed one (noted by the entry point). What passes follows SWE-bench: a test whose phases all passed, or an
expected failure (xfail); a failure or error in any phase, a skip and an unexpected
success (xpass) do not.
"""

import os

_path = os.environ.pop("BENCH_JUDGE_REPORT")
_token_path = os.path.join(os.path.dirname(_path), "token")
with open(_token_path, encoding="utf-8") as _f:
    _TOKEN = _f.read().strip()
os.remove(_token_path)
_REPORT = open(_path, "w", encoding="utf-8")
# nodeid -> [passed, duration seconds], in the order tests ran.
_OUTCOMES = {}
_SHADOWS = []


def note_shadow(name, path):
    _SHADOWS.append((name, path))


def pytest_runtest_logreport(report):
    outcome = _OUTCOMES.setdefault(report.nodeid, [True, 0.0])
    outcome[1] += getattr(report, "duration", 0.0) or 0.0
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        ok = (report.skipped and xfail) or (report.passed and not xfail)
    else:
        # Setup and teardown: an error fails the test; a skip at setup is a skip.
        ok = report.passed or (report.skipped and xfail)
    if not ok:
        outcome[0] = False


def pytest_sessionfinish(session, exitstatus):
    for nodeid, (passed, duration) in _OUTCOMES.items():
        _REPORT.write(("passed " if passed else "failed ") + nodeid + "\n")
        _REPORT.write("duration %.6f %s\n" % (duration, nodeid))
    for name, path in _SHADOWS:
        _REPORT.write("shadows %s %s\n" % (name, path))
    _REPORT.write("complete " + _TOKEN + "\n")
    _REPORT.close()
