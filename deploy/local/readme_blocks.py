#!/usr/bin/env python3
"""Runs the ```sh blocks of the repository's Markdown files as tests.

Every fenced ```sh block of a tracked *.md file is run as written, or carries the marker

    <!-- not-run: REASON -->

on the line just before its fence, saying why it cannot run here (a real provider, an
image registry, a server that runs until stopped, ...). This script finds the blocks,
prints each marked block's reason, and runs the others:

- from the root of a clone-like copy of the repository, one fresh copy per Markdown file
  (the tracked and untracked-but-not-ignored files of the working tree, as `git clone`
  of a commit of them would give; `target/` is a link to this repository's, so
  `cargo run` and `target/debug/...` reuse what is built);
- the blocks of one file in order, each in its own `bash` with `set -euo pipefail`,
  so any failing command fails its block;
- without the caller's `BENCH_*` variables, with `target/debug` first on PATH (the
  binaries of `cargo build --workspace --bins`, which must have run) and one nats-server
  and clickhouse-server for all blocks, started by deploy/local/services.sh on free
  loopback ports, their state in a temporary directory; the `BENCH_*` port, state and
  URL variables point at them;
- with a path outside the repository that a block writes (`/data/...`) mapped to the
  temporary directory, and printed.

Nothing else changes. The lines that run deploy/local/test.sh are left out (it runs
this script). A failing block is reported as FILE:LINE (the line of its fence) with the
last lines of its output; the exit status is 1 if any block failed.

Usage:
    deploy/local/readme_blocks.py                 # run every runnable block
    deploy/local/readme_blocks.py --list          # list the blocks, FILE:LINE and reason
    deploy/local/readme_blocks.py --only README.md:13 --only event-sink/analysis/README.md
                                                  # one block, or the blocks of one file
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^`]*)$")
FENCE_CLOSE = re.compile(r"^[ \t]*```[ \t]*$")
MARKER = re.compile(r"^[ \t]*<!--[ \t]*not-run:(?P<reason>.*?)-->[ \t]*$")
# A line that starts like the marker: it must be one, or a typo would silently make the
# block run.
MARKER_LIKE = re.compile(r"^[ \t]*<!--[ \t]*not[-_ ]?run", re.IGNORECASE)
# deploy/local/test.sh runs this script: a line invoking it is left out.
EXEMPT_LINE = re.compile(r"^[ \t]*(\./)?deploy/local/test\.sh\b")
# Absolute paths outside the repository a block may write: mapped into the temp dir.
OUTSIDE_PATH = re.compile(r"(?<![\w./-])/data/")

TAIL_LINES = 40
BINARIES = ("agent-runner", "event-sink", "bench-analysis")


class BlockError(Exception):
    """A Markdown file whose blocks cannot be read (unclosed fence, bad marker)."""


@dataclass
class Block:
    file: str  # relative to the repository root
    line: int  # 1-based line of the opening fence
    text: str  # the commands, fence indentation removed
    skip: str | None  # the not-run reason, if marked

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def parse(file: str, content: str) -> list[Block]:
    """The ```sh blocks of one Markdown file, in order (fences of other languages are
    passed over whole). A malformed or misplaced marker is an error."""
    blocks: list[Block] = []
    lines = content.splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            check_marker(file, lines, i)
            i += 1
            continue
        start = i
        indent = fence.group("indent")
        i += 1
        while i < len(lines) and not FENCE_CLOSE.match(lines[i]):
            i += 1
        if i == len(lines):
            raise BlockError(f"{file}:{start + 1}: code block is never closed")
        if fence.group("info").strip() == "sh":
            body = [dedent(ln, indent) for ln in lines[start + 1 : i]]
            marker = MARKER.match(lines[start - 1]) if start > 0 else None
            skip = marker.group("reason").strip() if marker else None
            blocks.append(Block(file, start + 1, "\n".join(body) + "\n", skip))
        i += 1
    return blocks


def dedent(line: str, indent: str) -> str:
    """A line of a block without the indentation of its fence."""
    return line[len(indent) :] if line.startswith(indent) else line.lstrip()


def check_marker(file: str, lines: list[str], i: int) -> None:
    """Fails on line i if it starts like a marker but is none, has no reason, or is not
    on the line before a ```sh fence."""
    if not MARKER_LIKE.match(lines[i]):
        return
    where = f"{file}:{i + 1}"
    marker = MARKER.match(lines[i])
    if not marker:
        raise BlockError(
            f"{where}: malformed marker {lines[i].strip()!r}; write <!-- not-run: REASON -->"
        )
    if not marker.group("reason").strip():
        raise BlockError(f"{where}: not-run marker without a reason")
    fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
    if not fence or fence.group("info").strip() != "sh":
        raise BlockError(f"{where}: not-run marker not on the line just before a ```sh fence")


def without_exempt(text: str) -> str:
    """The block without the lines that run deploy/local/test.sh."""
    return "".join(line for line in text.splitlines(True) if not EXEMPT_LINE.match(line))


def repo_files(repo: Path) -> list[str]:
    """Tracked and untracked-but-not-ignored files, as a commit of the working tree holds."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        check=True,
        capture_output=True,
    ).stdout
    return sorted({f for f in out.decode().split("\0") if f and os.path.lexists(repo / f)})


def markdown_files(files: list[str]) -> list[str]:
    """README.md first (its demo is the first command a reader runs), then path order."""
    docs = [f for f in files if f.endswith(".md")]
    return sorted(docs, key=lambda f: (f != "README.md", f))


def collect(repo: Path, files: list[str]) -> list[Block]:
    blocks = []
    for f in markdown_files(files):
        blocks.extend(parse(f, (repo / f).read_text(encoding="utf-8")))
    return blocks


def select(blocks: list[Block], only: list[str]) -> list[Block]:
    """The blocks named by --only (FILE:LINE or FILE); every block without it."""
    if not only:
        return blocks
    chosen = []
    for spec in only:
        hits = [b for b in blocks if spec in (b.where, b.file)]
        if not hits:
            raise SystemExit(f"--only {spec}: no ```sh block there (see --list)")
        chosen.extend(b for b in hits if b not in chosen)
    return sorted(chosen, key=blocks.index)


def clone_like(repo: Path, files: list[str], dest: Path) -> None:
    """Copies the files (modes and times kept) into a git repository of one commit, as a
    clone has, and links target/ to the repository's."""
    for f in files:
        src, dst = repo / f, dest / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)
    git = ["git", "-c", "user.name=readme-blocks", "-c", "user.email=readme-blocks@localhost"]
    git += ["-c", "commit.gpgsign=false", "-C", str(dest)]
    commit = ["commit", "-q", "--no-verify", "-m", "the working tree"]
    for args in (["init", "-q"], ["add", "-A", "-f"], commit):
        subprocess.run(git + args, check=True, stdout=subprocess.DEVNULL)
    (dest / "target").symlink_to(repo / "target")
    with open(dest / ".git" / "info" / "exclude", "a") as exclude:
        exclude.write("/target\n")


def clean_environ() -> dict[str, str]:
    """This process's environment without its BENCH_* settings: the blocks get the
    defaults, as in a fresh shell, and the services' variables."""
    return {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}


def free_ports(n: int) -> list[int]:
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class Services:
    """nats-server and clickhouse-server from deploy/local/services.sh, on free ports."""

    def __init__(self, repo: Path, state: Path):
        nats, monitor, http, tcp, inter = free_ports(5)
        self.repo = repo
        self.env = {
            "BENCH_STATE_DIR": str(state),
            "BENCH_NATS_PORT": str(nats),
            "BENCH_NATS_MONITOR_PORT": str(monitor),
            "BENCH_CH_HTTP_PORT": str(http),
            "BENCH_CH_TCP_PORT": str(tcp),
            "BENCH_CH_INTERSERVER_PORT": str(inter),
            "BENCH_NATS_URL": f"nats://127.0.0.1:{nats}",
            "BENCH_CLICKHOUSE_URL": f"http://127.0.0.1:{http}",
        }

    def _run(self, action: str) -> None:
        env = {**clean_environ(), **self.env}
        subprocess.run([str(self.repo / "deploy/local/services.sh"), action], env=env, check=True)

    def __enter__(self) -> Services:
        try:
            self._run("up")
        except BaseException:
            self._run("down")
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._run("down")


def run_block(text: str, cwd: Path, env: dict, log: Path, timeout: float) -> int:
    """Runs one block in its own process group; its exit status (124 on timeout)."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["bash", "-c", "set -euo pipefail\n" + text],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            out.write(f"\n[readme-blocks] timed out after {timeout:.0f}s\n".encode())
            return 124
        finally:
            # Whatever the block left behind in its group (a background job) ends with it.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def tail(log: Path, n: int = TAIL_LINES) -> str:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[-n:])


def print_list(blocks: list[Block]) -> None:
    for b in blocks:
        first = next((ln for ln in b.text.splitlines() if ln.strip()), "")
        if b.skip:
            status = f"not-run: {b.skip}"
        elif not without_exempt(b.text).strip():
            status = "exempt: deploy/local/test.sh"
        else:
            status = "run"
        print(f"{b.where}\t{status}\t{first}")


def runnable(blocks: list[Block]) -> list[tuple[Block, str]]:
    """The blocks to run, with the text to run; prints why each other block is skipped."""
    chosen = []
    for b in blocks:
        if b.skip:
            print(f"-- skip {b.where}: {b.skip}")
            continue
        text = without_exempt(b.text)
        if not text.strip():
            print(f"-- skip {b.where}: only deploy/local/test.sh (it runs this script)")
            continue
        chosen.append((b, text))
    return chosen


def run_all(
    repo: Path,
    files: list[str],
    blocks: list[tuple[Block, str]],
    timeout: float,
    keep: bool,
    services=Services,
    work_root: str | None = None,
) -> int:
    """Runs the blocks, one clone-like copy per file, with the services up; 1 if any failed."""
    bin_dir = repo / "target" / "debug"
    work = Path(tempfile.mkdtemp(prefix="readme-blocks.", dir=work_root))
    outside = work / "outside"
    failed: list[tuple[Block, int]] = []
    try:
        with services(repo, work / "state") as up:
            env = {
                **clean_environ(),
                **up.env,
                "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            }
            clones: dict[str, Path] = {}
            for n, (b, text) in enumerate(blocks):
                if b.file not in clones:
                    clones[b.file] = work / f"clone-{len(clones)}"
                    clone_like(repo, files, clones[b.file])
                mapped = OUTSIDE_PATH.sub(f"{outside}/data/", text)
                if mapped != text:
                    print(f"   {b.where}: /data/ is {outside}/data/")
                log = work / f"block-{n}.log"
                print(f"-> {b.where}", flush=True)
                started = time.monotonic()
                rc = run_block(mapped, clones[b.file], env, log, timeout)
                took = time.monotonic() - started
                if rc == 0:
                    print(f"ok {b.where} ({took:.0f}s)", flush=True)
                    continue
                failed.append((b, rc))
                print(f"FAILED {b.where} (exit {rc}, {took:.0f}s); last lines of its output:")
                print(tail(log), end="\n\n", flush=True)
    finally:
        if keep or failed:
            print(f"outputs and clones kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{len(blocks) - len(failed)} of {len(blocks)} README blocks passed")
    for b, rc in failed:
        print(f"FAILED {b.where} (exit {rc})")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run the ```sh blocks of the repository's Markdown files.",
        epilog="A block marked <!-- not-run: REASON --> on the line before its fence is skipped.",
    )
    parser.add_argument("--list", action="store_true", help="list the blocks, do not run them")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="FILE[:LINE]",
        help="run only this block (LINE of its fence) or this file's blocks; repeatable",
    )
    parser.add_argument(
        "--timeout", type=float, default=600, help="seconds one block may take (default 600)"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary clones and outputs"
    )
    args = parser.parse_args(argv)

    files = repo_files(REPO)
    try:
        blocks = select(collect(REPO, files), args.only)
    except BlockError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.list:
        print_list(blocks)
        return 0
    to_run = runnable(blocks)
    if not to_run:
        return 0
    bin_dir = REPO / "target" / "debug"
    missing = [b for b in BINARIES if not (bin_dir / b).exists()]
    if missing:
        print(f"error: no {', '.join(missing)} in {bin_dir}: run cargo build --workspace --bins")
        return 2
    # A SIGTERM (CI cancelling) unwinds like Ctrl-C, so the services are stopped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    return run_all(REPO, files, to_run, args.timeout, args.keep)


if __name__ == "__main__":
    sys.exit(main())
