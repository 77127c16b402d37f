"""Judge-owned unittest runner: runs tests of one test module and writes the report.

Usage: python3 -I unittest_report.py REPORT SRC SUITE [TEST]

REPORT is a file in the judge's report directory, SRC the task's source directory (the
scratch copy), SUITE the test module file relative to SRC, TEST `Class.method` (absent:
every test of the module). The report holds an `expect <id>` line per test of the
selection, then one `passed <id>` or `failed <id>` line per test that ran, then
`complete <token>`; anything else (no report, no such last line) fails every test. The
token is the one the judge left in REPORT's directory (file `token`): read and deleted
before any code of the task runs, it is known only to this process, so a report the code
under test writes in its place does not end with it.

It runs under `python3 -I`: no current directory, PYTHON* variable or user site on the
import path, so a workspace package cannot shadow the standard library; SRC goes at the
END of sys.path, after the standard library, and the test module is loaded from its file
(mounted pristine), not looked up by name. Bytecode of the task's modules (the tests
included) is read and written only under the sandbox's private /tmp, never from a
__pycache__ in the scratch copy, where earlier code could have left a forged one; the
standard library keeps its installed bytecode.
"""

import importlib.util
import os
import sys
import unittest


def main():
    report_path, src, suite = sys.argv[1:4]
    selector = sys.argv[4] if len(sys.argv) > 4 else None
    # Read, deleted and opened before any code of the task runs; the path leaves argv.
    token_path = os.path.join(os.path.dirname(report_path), "token")
    with open(token_path, encoding="utf-8") as f:
        token = f.read().strip()
    os.remove(token_path)
    report = open(report_path, "w", encoding="utf-8")
    del sys.argv[1:]
    sys.pycache_prefix = "/tmp/judge-pycache"
    sys.path.append(src)
    name = os.path.splitext(os.path.basename(suite))[0]
    spec = importlib.util.spec_from_file_location(name, os.path.join(src, suite))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    loader = unittest.TestLoader()
    if selector is None:
        tests = loader.loadTestsFromModule(module)
    else:
        tests = loader.loadTestsFromName(selector, module)
    # Every test the suite holds, named before any runs: one that then reports nothing
    # (skipped by patched machinery, or lost in a crash) is missing, not absent.
    for test_id in _ids(tests):
        report.write("expect " + test_id + "\n")
    result = Outcomes()
    tests.run(result)
    for test_id, passed in result.outcomes:
        report.write(("passed " if passed else "failed ") + test_id + "\n")
    report.write("complete " + token + "\n")
    report.close()
    for test, trace in result.errors + result.failures:
        sys.stderr.write("%s\n%s\n" % (test.id(), trace))


def _ids(suite):
    if isinstance(suite, unittest.TestSuite):
        for test in suite:
            yield from _ids(test)
    else:
        yield suite.id()


class Outcomes(unittest.TestResult):
    """Every test's outcome in run order; a test with a failing subtest fails."""

    def __init__(self):
        super().__init__()
        self.outcomes = []
        self.failed_subtests = set()

    def _add(self, test, passed):
        self.outcomes.append((test.id(), passed and test.id() not in self.failed_subtests))

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self.failed_subtests.add(test.id())

    def addSuccess(self, test):
        super().addSuccess(test)
        self._add(test, True)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._add(test, True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._add(test, False)

    def addError(self, test, err):
        super().addError(test, err)
        # A class or module fixture that failed is no test of its own.
        if isinstance(test, unittest.TestCase):
            self._add(test, False)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._add(test, False)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._add(test, False)


main()
