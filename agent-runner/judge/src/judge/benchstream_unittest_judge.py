"""Judge-owned entry point of a SWE-bench-format task whose tests a unittest runner script
runs (Django's `tests/runtests.py`): the per-test report, as the pytest plugin writes it.

Usage: python -I -X pycache_prefix=/tmp/judge-pycache benchstream_unittest_judge.py
       SCRIPT [ARGS...]

BENCH_JUDGE_REPORT names the report file, in the judge's report directory; the token the
judge left beside it (file `token`) is read and deleted, and the report opened, before any
code of the repository runs. Every outcome of `unittest`'s result machinery is recorded
by wrapping `unittest.TestResult` itself, which every runner's result class (Django's
included) extends: one `passed <id>` / `failed <id>` line per test that ran, then
`complete <token>` once the script has exited (`sys.exit`); a script that dies otherwise
leaves the report incomplete, which fails every test. An id is SWE-bench's:
`<method> (<module>.<Class>)`. What passes: a success, or an expected failure; a failure,
an error, a failed subtest, a skip and an unexpected success do not.

SCRIPT runs as `__main__` with its own directory first on the import path, as `python
SCRIPT` would put it; under `-I` nothing else of the repository or the environment's
PYTHON* variables is.
"""

import os
import runpy
import sys
import unittest.result

_path = os.environ.pop("BENCH_JUDGE_REPORT")
_token_path = os.path.join(os.path.dirname(_path), "token")
with open(_token_path, encoding="utf-8") as _f:
    _TOKEN = _f.read().strip()
os.remove(_token_path)
_REPORT = open(_path, "w", encoding="utf-8")
# id -> passed, in the order tests first reported; a failure sticks.
_OUTCOMES = {}


def _id(test):
    method = getattr(test, "_testMethodName", None)
    if method is None:
        # What unittest reports for a module that cannot be imported, a failed class
        # set-up: no test of the selection, so none passes through it.
        return str(test)
    cls = type(test)
    return "%s (%s.%s)" % (method, cls.__module__, cls.__qualname__)


def _note(test, passed):
    test_id = _id(test)
    _OUTCOMES[test_id] = _OUTCOMES.get(test_id, True) and passed


def _recording(original, passed):
    def method(self, test, *args):
        _note(test, passed)
        return original(self, test, *args)

    return method


_Result = unittest.result.TestResult
for _name, _passed in [
    ("addSuccess", True),
    ("addExpectedFailure", True),
    ("addFailure", False),
    ("addError", False),
    ("addSkip", False),
    ("addUnexpectedSuccess", False),
]:
    setattr(_Result, _name, _recording(getattr(_Result, _name), _passed))
_add_subtest = _Result.addSubTest


def _sub_test(self, test, subtest, err):
    if err is not None:
        _note(test, False)
    return _add_subtest(self, test, subtest, err)


_Result.addSubTest = _sub_test

_script = os.path.abspath(sys.argv[1])
sys.argv = [_script] + sys.argv[2:]
sys.path.insert(0, os.path.dirname(_script))
try:
    runpy.run_path(_script, run_name="__main__")
    _code = 0
except SystemExit as _exit:
    _code = _exit.code if isinstance(_exit.code, int) else (0 if _exit.code is None else 1)
for _test_id, _ok in _OUTCOMES.items():
    _REPORT.write(("passed " if _ok else "failed ") + _test_id + "\n")
_REPORT.write("complete " + _TOKEN + "\n")
_REPORT.close()
sys.exit(_code)
