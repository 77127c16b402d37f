"""Judge-owned entry point of a SWE-bench-format task's test run.

Run as `python -I -X pycache_prefix=/tmp/judge-pycache benchstream_pytest_judge.py ARGS`:
isolated mode puts neither the working directory (the repository) nor PYTHON* variables
on the import path, so the standard library and the environment's installed packages
are all the interpreter sees when this file starts. It then
1. imports the report plugin (`benchstream_pytest_report`, beside this file), which takes
   the judge's token off disk before any code of the repository can run;
2. puts a finder first on `sys.meta_path` that resolves every top-level module the
   standard library or an installed distribution provides from where it is installed,
   whatever the repository or pytest later put ahead of it on `sys.path`; the
   repository's own top-level names (BENCH_JUDGE_OWN_MODULES, from the pristine fixture)
   are exempt, so a project that patches an installed package of its own name (pytest
   itself) is tested from its source;
3. notes every module of the repository that has the name of such a module while not
   being the repository's own (`shadows <name> <path>` in the report), for the run's
   `shadows_module` flag;
4. puts the repository first on `sys.path`, as `python -m pytest` does, and runs pytest
   with the plugin.
"""

import importlib.machinery
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import benchstream_pytest_report as _plugin  # noqa: E402  (takes the token first)

sys.path.remove(_HERE)
_REPO = os.getcwd()
_HARNESS_PATH = [p for p in sys.path if p]
_OWN = set(filter(None, os.environ.pop("BENCH_JUDGE_OWN_MODULES", "").split(",")))


class _InstalledFirst:
    """Top-level modules of the standard library and installed distributions, from there."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if path is not None or name in _OWN:
            return None
        return importlib.machinery.PathFinder.find_spec(name, _HARNESS_PATH)

    @staticmethod
    def invalidate_caches():
        pass


def _installed_names():
    import pkgutil

    # `sys.stdlib_module_names` is Python 3.10's; before it, the standard library is what
    # `_HARNESS_PATH` (sys.path under -I) holds anyway.
    names = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
    names.update(m.name for m in pkgutil.iter_modules(_HARNESS_PATH))
    return names - _OWN


def _module_name(entry, directory):
    if entry.endswith(".py"):
        return entry[:-3]
    if os.path.isdir(os.path.join(directory, entry)) and entry.isidentifier():
        return entry
    return None


def _path_dirs(test_files):
    """Directories of the repository that end up on sys.path: its root, `src`, and the
    first directory above each test file without an `__init__.py` (pytest's rootdir)."""
    dirs = {_REPO, os.path.join(_REPO, "src")}
    for test in test_files:
        d = os.path.dirname(os.path.join(_REPO, test))
        while d.startswith(_REPO) and os.path.isfile(os.path.join(d, "__init__.py")):
            d = os.path.dirname(d)
        dirs.add(d)
    return sorted(d for d in dirs if os.path.isdir(d))


def _shadows(test_files):
    installed = _installed_names()
    for d in _path_dirs(test_files):
        for entry in sorted(os.listdir(d)):
            name = _module_name(entry, d)
            if name and name in installed:
                _plugin.note_shadow(name, os.path.relpath(os.path.join(d, entry), _REPO))


sys.meta_path.insert(0, _InstalledFirst)
_args = sys.argv[1:]
_shadows([a.split("::")[0] for a in _args if a.endswith(".py") or ".py::" in a])
sys.path.insert(0, _REPO)
import pytest  # noqa: E402

sys.exit(pytest.main(_args, plugins=[_plugin]))
