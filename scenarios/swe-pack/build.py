#!/usr/bin/env python3
"""Builds the git repositories of the SWE-bench-format task pack from PyPI sdists.

Owns: fetching the pinned source distributions (from PyPI, or from a directory of
already downloaded files), checking their sha256, and turning each base version into one
deterministic git commit, so that the `base_commit` recorded in `instances.jsonl` is the
same on every machine. It does not touch the tasks' patches or run any test
(`check.py` does that).

Layout of the output (`--out DIR`): one repository per project, `DIR/owner__name` (the
name the SWE-bench importer looks for). Each base version a task needs is a root commit
of its own on the branch `pypi/<version>`: a task at version N never sees the sources of
a later version in its history, and each commit's id depends only on its own sdist.
HEAD is the branch of the newest base version, checked out.

Determinism: the tree is exactly the sdist's files (its top directory stripped; ignored
files included), with mode 644, or 755 when the archive marks a file executable; author
and committer are fixed and dated with the upload time of the sdist on PyPI; git runs
without the user's or the system's configuration.

Standard library only. Usage:
    build.py --out DIR [--sdists DIR] [--cache DIR] [--instances FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_INSTANCES = HERE / "instances.jsonl"
PYPI_JSON = "https://pypi.org/pypi/{project}/json"

AUTHOR_NAME = "benchstream swe-pack"
AUTHOR_EMAIL = "swe-pack@benchstream.invalid"


class BuildError(Exception):
    """A pinned sdist cannot be had, does not match its pin, or git failed."""


@dataclass(frozen=True)
class BaseVersion:
    """One commit to build: a project's sdist at the version some task starts from."""

    repo: str  # upstream GitHub slug, owner/name
    project: str  # PyPI project name
    version: str
    sdist: str  # file name on PyPI
    sha256: str
    released: str  # upload time on PyPI, ISO 8601 UTC: the commit date

    @property
    def repo_dir(self) -> str:
        return self.repo.replace("/", "__")

    @property
    def branch(self) -> str:
        return f"pypi/{self.version}"


def load_instances(path: Path) -> list[dict]:
    """Reads the pack's instances, JSON lines."""
    instances = []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    instances.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise BuildError(f"{path}:{number}: not JSON: {e}") from e
    return instances


def base_versions(instances: list[dict]) -> list[BaseVersion]:
    """The distinct base versions the instances start from, in a stable order."""
    seen: dict[tuple[str, str], BaseVersion] = {}
    for inst in instances:
        try:
            src = inst["source"]
            base = src["base"]
            bv = BaseVersion(
                repo=inst["repo"],
                project=src["project"],
                version=base["version"],
                sdist=base["sdist"],
                sha256=base["sha256"],
                released=base["released"],
            )
        except (KeyError, TypeError) as e:
            raise BuildError(f"{inst.get('instance_id', '?')}: incomplete source record: {e}") from e
        key = (bv.repo, bv.version)
        if key in seen and seen[key] != bv:
            raise BuildError(f"{bv.repo} {bv.version}: two different pins for one base version")
        seen[key] = bv
    return sorted(seen.values(), key=lambda b: (b.repo, version_key(b.version)))


def version_key(version: str) -> tuple:
    """Orders dotted numeric versions numerically (enough for the pinned releases)."""
    return tuple(int(p) if p.isdigit() else p for p in version.split("."))


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def download_url(bv: BaseVersion) -> str:
    """Finds the sdist's URL in PyPI's JSON API (the files' host may be a mirror, so the
    URL is taken from the API answer and resolved against it, never guessed)."""
    api = PYPI_JSON.format(project=bv.project)
    try:
        with urllib.request.urlopen(api, timeout=60) as r:
            meta = json.load(r)
    except (OSError, ValueError) as e:
        raise BuildError(f"{api}: {e}") from e
    for f in meta.get("releases", {}).get(bv.version, []):
        if f.get("filename") == bv.sdist:
            return urllib.parse.urljoin(api, f["url"])
    raise BuildError(f"{bv.sdist} is not listed by {api} for version {bv.version}")


def fetch_sdist(bv: BaseVersion, sdists: Path | None, cache: Path) -> Path:
    """The pinned sdist, checked: from `sdists` if it holds it, else from the cache,
    else downloaded into the cache. A file with another sha256 is an error, never used."""
    candidates = ([sdists / bv.sdist] if sdists else []) + [cache / bv.sdist]
    for path in candidates:
        if path.is_file():
            got = sha256_of(path)
            if got != bv.sha256:
                raise BuildError(f"{path}: sha256 {got}, pinned {bv.sha256}")
            return path
    cache.mkdir(parents=True, exist_ok=True)
    url = download_url(bv)
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=120) as r:
            shutil.copyfileobj(r, out)
        got = sha256_of(Path(tmp))
        if got != bv.sha256:
            raise BuildError(f"{url}: sha256 {got}, pinned {bv.sha256}")
        os.replace(tmp, cache / bv.sdist)
    except OSError as e:
        raise BuildError(f"{url}: {e}") from e
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return cache / bv.sdist


def safe_relpath(name: str) -> str | None:
    """The member's path below the sdist's top directory, or None for the top directory
    itself. Absolute paths and `..` are refused: an archive must not write outside."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if name.startswith("/") or ".." in parts:
        raise BuildError(f"unsafe path in archive: {name!r}")
    return "/".join(parts[1:]) or None


def unpack(archive: Path, dest: Path) -> None:
    """Writes the archive's regular files under `dest`, top directory stripped, with mode
    644 or 755 only (what git records). Links and devices are refused."""
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                rel = safe_relpath(info.filename)
                if rel is None or info.is_dir():
                    continue
                executable = bool((info.external_attr >> 16) & 0o111)
                write_file(dest / rel, z.read(info), executable)
        return
    with tarfile.open(archive) as t:
        for m in t.getmembers():
            rel = safe_relpath(m.name)
            if rel is None or m.isdir():
                continue
            if not m.isfile():
                raise BuildError(f"{archive.name}: {m.name} is not a regular file")
            f = t.extractfile(m)
            if f is None:
                raise BuildError(f"{archive.name}: {m.name} has no content")
            write_file(dest / rel, f.read(), bool(m.mode & 0o111))


def write_file(path: Path, data: bytes, executable: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o755 if executable else 0o644)


def git(args: list[str], cwd: Path, env: dict | None = None, stdin: bytes | None = None) -> str:
    """Runs git isolated from the user's and the system's configuration (a global
    `core.autocrlf` or attributes file would change the blobs, and so the commit ids)."""
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }
    full_env.update(env or {})
    cmd = ["git", "-c", "core.autocrlf=false", "-c", "core.fileMode=true",
           "-c", "commit.gpgSign=false", "-c", "init.defaultBranch=main", *args]
    r = subprocess.run(cmd, cwd=cwd, env=full_env, input=stdin, capture_output=True)
    if r.returncode != 0:
        raise BuildError(f"git {' '.join(args)}: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout.decode().strip()


def commit_base(repo: Path, bv: BaseVersion, tree_dir: Path) -> str:
    """Commits `tree_dir` as a root commit on `bv.branch` without touching the
    repository's work tree (a private index), and returns the commit id."""
    index = repo / ".git" / f"index-{bv.version}"
    env = {"GIT_INDEX_FILE": str(index), "GIT_WORK_TREE": str(tree_dir), "GIT_DIR": str(repo / ".git")}
    try:
        git(["add", "--all", "--force", "."], tree_dir, env)
        tree = git(["write-tree"], tree_dir, env)
    finally:
        if index.exists():
            index.unlink()
    date = f"{bv.released} +0000"
    ident = {
        "GIT_AUTHOR_NAME": AUTHOR_NAME,
        "GIT_AUTHOR_EMAIL": AUTHOR_EMAIL,
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": AUTHOR_NAME,
        "GIT_COMMITTER_EMAIL": AUTHOR_EMAIL,
        "GIT_COMMITTER_DATE": date,
    }
    message = f"{bv.project} {bv.version}\n\nThe PyPI sdist {bv.sdist}, sha256 {bv.sha256}.\n"
    commit = git(["commit-tree", tree], repo, ident, stdin=message.encode())
    git(["update-ref", f"refs/heads/{bv.branch}", commit], repo)
    return commit


def build(instances: list[dict], out: Path, sdists: Path | None, cache: Path) -> dict[tuple[str, str], str]:
    """Builds every base version into `out`; returns (repo, version) -> commit id."""
    commits: dict[tuple[str, str], str] = {}
    newest: dict[str, BaseVersion] = {}
    for bv in base_versions(instances):
        archive = fetch_sdist(bv, sdists, cache)
        repo = out / bv.repo_dir
        if not (repo / ".git").is_dir():
            repo.mkdir(parents=True, exist_ok=True)
            git(["init", "-q", "."], repo)
        with tempfile.TemporaryDirectory(prefix="swe-pack-") as tmp:
            unpack(archive, Path(tmp))
            commits[(bv.repo, bv.version)] = commit_base(repo, bv, Path(tmp))
        newest[bv.repo_dir] = bv  # base_versions() is sorted, so the last one wins
    for repo_dir, bv in newest.items():
        git(["checkout", "-q", "-f", bv.branch], out / repo_dir)
    return commits


def check_base_commits(instances: list[dict], commits: dict[tuple[str, str], str]) -> list[str]:
    """Instances whose recorded base_commit is not what was built."""
    problems = []
    for inst in instances:
        built = commits.get((inst["repo"], inst["source"]["base"]["version"]))
        if inst.get("base_commit") != built:
            problems.append(f"{inst['instance_id']}: base_commit {inst.get('base_commit')}, built {built}")
        if inst.get("environment_setup_commit") != inst.get("base_commit"):
            problems.append(f"{inst['instance_id']}: environment_setup_commit differs from base_commit")
    return problems


def default_cache() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "benchstream" / "swe-pack"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="where the owner__name repositories go")
    p.add_argument("--sdists", type=Path,
                   help="a directory holding the pinned sdists (nothing is downloaded for those)")
    p.add_argument("--cache", type=Path, default=default_cache(),
                   help="download cache (default: %(default)s)")
    p.add_argument("--instances", type=Path, default=DEFAULT_INSTANCES, help="default: %(default)s")
    args = p.parse_args(argv)
    try:
        instances = load_instances(args.instances)
        commits = build(instances, args.out, args.sdists, args.cache)
    except (OSError, BuildError) as e:
        print(f"build.py: error: {e}", file=sys.stderr)
        return 1
    for (repo, version), commit in sorted(commits.items()):
        print(f"{repo.replace('/', '__')} {version} {commit}")
    problems = check_base_commits(instances, commits)
    for line in problems:
        print(f"build.py: mismatch: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
