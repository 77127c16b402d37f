#!/usr/bin/env python3
"""Tests of readme_blocks.py, the runner of the README command blocks.

    python3 -m unittest discover -s deploy/local -p 'test_*.py'

The running tests use a small git repository of their own and no services (the real
ones are deploy/local/services.sh's, exercised by the doc-test step of test.sh).
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import tempfile
import unittest
from pathlib import Path

import readme_blocks as rb

FENCE = "```"


def sh(*lines: str, marker: str | None = None) -> str:
    head = f"<!-- not-run: {marker} -->\n" if marker else ""
    return head + f"{FENCE}sh\n" + "".join(f"{ln}\n" for ln in lines) + f"{FENCE}\n"


class Parse(unittest.TestCase):
    def test_a_marked_block_is_skipped_with_its_reason_and_others_run(self):
        doc = "# T\n\n" + sh("echo one") + "\n" + sh("tail -f x", marker="runs forever") + "\n"
        blocks = rb.parse("README.md", doc)
        self.assertEqual([(b.line, b.skip) for b in blocks], [(3, None), (8, "runs forever")])
        self.assertEqual(blocks[0].text, "echo one\n")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            chosen = rb.runnable(blocks)
        self.assertEqual([b.line for b, _ in chosen], [3])
        self.assertIn("-- skip README.md:8: runs forever", out.getvalue())

    def test_blocks_of_other_languages_and_their_contents_are_not_blocks(self):
        doc = f"{FENCE}text\n{FENCE}sh\n{FENCE}\n{FENCE}toml\na = 1\n{FENCE}\n" + sh("true")
        blocks = rb.parse("x.md", doc)
        self.assertEqual([b.line for b in blocks], [7])

    def test_an_indented_block_loses_its_indentation(self):
        doc = "1. Import.\n\n   <!-- not-run: data -->\n   ```sh\n   a \\\n     --b\n   ```\n"
        (block,) = rb.parse("x.md", doc)
        self.assertEqual((block.line, block.skip, block.text), (4, "data", "a \\\n  --b\n"))

    def test_a_bad_or_misplaced_marker_is_an_error_naming_its_line(self):
        cases = {
            "<!-- not run: typo -->\n" + sh("true"): "x.md:1: malformed marker",
            "<!-- not-run: -->\n" + sh("true"): "x.md:1: not-run marker without a reason",
            "<!-- not-run: why -->\n\n" + sh("true"): "x.md:1: not-run marker not on the line",
            "<!-- not-run: why -->\n```toml\n```\n": "x.md:1: not-run marker not on the line",
            "text\n```sh\necho\n": "x.md:2: code block is never closed",
        }
        for doc, message in cases.items():
            with self.subTest(doc=doc), self.assertRaises(rb.BlockError) as caught:
                rb.parse("x.md", doc)
            self.assertIn(message, str(caught.exception))

    def test_the_marker_quoted_in_prose_is_no_marker(self):
        doc = "Mark it with `<!-- not-run: REASON -->` on the line before.\n" + sh("true")
        self.assertEqual([b.skip for b in rb.parse("x.md", doc)], [None])

    def test_lines_running_test_sh_are_left_out(self):
        text = "./deploy/local/demo.sh\n./deploy/local/test.sh     # all\n"
        self.assertEqual(rb.without_exempt(text), "./deploy/local/demo.sh\n")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            chosen = rb.runnable([rb.Block("README.md", 5, "deploy/local/test.sh\n", None)])
        self.assertEqual(chosen, [])
        self.assertIn("-- skip README.md:5: only deploy/local/test.sh", out.getvalue())

    def test_only_selects_a_block_by_file_and_line_or_a_file(self):
        blocks = [rb.Block(f, n, "", None) for f, n in (("a.md", 3), ("a.md", 9), ("b.md", 1))]
        self.assertEqual(rb.select(blocks, ["a.md:9"]), [blocks[1]])
        self.assertEqual(rb.select(blocks, ["b.md", "a.md"]), blocks)
        with self.assertRaises(SystemExit):
            rb.select(blocks, ["a.md:4"])

    def test_the_repositorys_own_markdown_reads_and_runs_the_demo(self):
        blocks = rb.collect(rb.REPO, rb.repo_files(rb.REPO))
        first = blocks[0]
        self.assertEqual((first.file, first.skip), ("README.md", None))
        self.assertIn("./deploy/local/demo.sh", rb.without_exempt(first.text))


class NoServices:
    """Stands in for Services: these blocks need none."""

    env: dict[str, str] = {}

    def __init__(self, repo: Path, state: Path):
        pass

    def __enter__(self) -> NoServices:
        return self

    def __exit__(self, *exc) -> None:
        pass


class Run(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.repo = Path(self.tmp.name) / "repo"
        self.repo.mkdir()

    def tearDown(self):
        self.tmp.cleanup()

    def run_readme(self, doc: str, extra: dict[str, str] | None = None) -> tuple[int, str]:
        """Commits nothing: the files are untracked, as a contributor's new README is."""
        (self.repo / "README.md").write_text(doc)
        for name, content in (extra or {}).items():
            (self.repo / name).write_text(content)
        subprocess.run(["git", "init", "-q"], cwd=self.repo, check=True)
        files = rb.repo_files(self.repo)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            blocks = rb.runnable(rb.collect(self.repo, files))
            rc = rb.run_all(
                self.repo, files, blocks, 60, False, services=NoServices, work_root=self.tmp.name
            )
        return rc, out.getvalue()

    def test_a_failing_block_is_named_by_file_and_line_with_its_output(self):
        doc = "# T\n\n" + sh("echo fine") + "\n" + sh("echo about to fail", "false", "echo never")
        rc, out = self.run_readme(doc)
        self.assertEqual(rc, 1)
        self.assertIn("ok README.md:3", out)
        self.assertIn("FAILED README.md:7 (exit 1", out)
        failure = out[out.index("FAILED README.md:7") :]
        self.assertIn("about to fail", failure)
        self.assertNotIn("never", failure)
        self.assertIn("1 of 2 README blocks passed", out)

    def test_blocks_run_in_order_from_the_root_of_a_copy_and_leave_the_repository_alone(self):
        doc = sh("test -f notes.txt", "echo made > made.txt") + sh("grep -q made made.txt")
        rc, out = self.run_readme(doc, {"notes.txt": "a file of the repository\n"})
        self.assertEqual(rc, 0, out)
        self.assertIn("2 of 2 README blocks passed", out)
        self.assertFalse((self.repo / "made.txt").exists())

    def test_a_path_under_data_goes_to_a_temporary_directory(self):
        rc, out = self.run_readme(sh("mkdir -p /data/x && touch /data/x/y && test -f /data/x/y"))
        self.assertEqual(rc, 0, out)
        self.assertIn("README.md:1: /data/ is ", out)
        self.assertNotIn("/data/ is /data/", out)


if __name__ == "__main__":
    unittest.main()
