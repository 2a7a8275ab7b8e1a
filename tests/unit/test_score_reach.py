"""Follow-up reach: a repo-relative path, a 1-based line that exists there at the pin, and a
reason, on every row; and the line index, read from a verified git copy or pin-lines.json."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.errors import InputError
from orchestrator import line_index
from orchestrator.score import reach

INDEX = line_index.LineIndex("sha", {"src/a.cs": 3, "src/b.cs": 1})
NO_INDEX = line_index.LineIndex("sha", None)
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_NOSYSTEM": "1",
       "GIT_CONFIG_GLOBAL": os.devnull}


@dataclass(frozen=True)
class R:
    path: str
    line: int | None
    reason: str | None


def test_rows_with_path_line_and_reason_reach() -> None:
    out = reach.task_reach([R("src/a.cs", 3, "Money m;"), R("./src/b.cs", 1, "CALLS")], INDEX)
    assert out["status"] == "reaches" and out["failing_rows"] == 0


def test_a_zero_based_line_fails_the_task() -> None:
    out = reach.task_reach([R("src/a.cs", 1, "ok"), R("src/a.cs", 0, "Money")], INDEX)
    assert out["status"] == "fails" and out["failing_rows"] == 1
    assert out["first_failures"] == [{"row": 2, "path": "src/a.cs", "line": 0,
                                      "problems": ["line not 1-based"]}]


def test_a_missing_reason_fails_the_task() -> None:
    for reason in (None, "", "   "):
        out = reach.task_reach([R("src/a.cs", 2, reason)], INDEX)
        assert out["status"] == "fails" and out["problems"] == {"no reason": 1}


def test_a_line_past_the_end_of_the_file_fails() -> None:
    out = reach.task_reach([R("src/a.cs", 4, "x")], INDEX)
    assert out["first_failures"][0]["problems"] == ["line past the end (3 lines)"]
    assert out["problems"] == {"line past the end": 1}


@pytest.mark.parametrize("row,problem", [
    (R("/corpus/src/a.cs", 1, "x"), "not repo-relative"),
    (R("../src/a.cs", 1, "x"), "not repo-relative"),
    (R("src/zz.cs", 1, "x"), "path not at the pin"),
    (R("src/a.cs", None, "x"), "no line"),
    (R("", 1, "x"), "no path"),
])
def test_each_missing_part_fails(row: R, problem: str) -> None:
    problems, _ = reach.row_problems(row, INDEX)
    assert problems == [problem]


def test_no_rows_is_empty_and_no_index_is_unverifiable() -> None:
    assert reach.task_reach([], INDEX)["status"] == "empty"
    out = reach.task_reach([R("src/a.cs", 99, "x")], NO_INDEX)
    assert out["status"] == "unverifiable" and out["unverifiable_rows"] == 1
    # what can be decided without an index still fails
    assert reach.task_reach([R("src/a.cs", 0, "x")], NO_INDEX)["status"] == "fails"


def test_line_count() -> None:
    assert line_index.line_count(b"") == 0
    assert line_index.line_count(b"a") == 1
    assert line_index.line_count(b"a\n") == 1
    assert line_index.line_count(b"a\nb") == 2


def _repo(path: Path) -> str:
    (path / "d").mkdir(parents=True)
    (path / "d" / "x.txt").write_text("1\n2\n3\n")
    (path / "top.txt").write_text("only")
    (path / "link").symlink_to("top.txt")
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "pin"]):
        subprocess.run(["git", "-C", str(path), *args], check=True, env=ENV)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], env=ENV, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_index_is_read_from_the_pristine_at_the_pin(tmp_path: Path) -> None:
    sha = _repo(tmp_path / "c")
    (tmp_path / "c" / "top.txt").write_text("changed\nin\nthe\nworktree\n")
    assert line_index.index_from_pristine(tmp_path / "c", sha) == {"d/x.txt": 3, "top.txt": 1}


def test_a_store_whose_objects_were_altered_is_not_trusted(tmp_path: Path) -> None:
    pristine = tmp_path / "pristine"
    sha = _repo(pristine)
    blob = subprocess.run(["git", "-C", str(pristine), "rev-parse", "HEAD:d/x.txt"], env=ENV,
                          check=True, capture_output=True, text=True).stdout.strip()
    loose = pristine / ".git" / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(b"blob 2\x001\n"))
    with pytest.raises(line_index._Unverified):
        line_index.index_from_pristine(pristine, sha)
    index = line_index.load_index(tmp_path / "run", sha, pristine)
    assert not index.available


HOSTILE_CONFIG = """[core]
\tfsmonitor = touch {marker}-fsmonitor; echo
\tsshCommand = touch {marker}-ssh
\thooksPath = {hooks}
[remote "origin"]
\turl = ext::sh -c touch% {marker}-ext
\tpromisor = true
\tuploadpack = touch {marker}-uploadpack; echo
[extensions]
\tpartialClone = origin
[include]
\tpath = {include}
[filter "x"]
\tclean = touch {marker}-clean
\tsmudge = touch {marker}-smudge
\tprocess = touch {marker}-process
"""


def test_an_arm_copy_in_the_run_dir_is_never_read(tmp_path: Path) -> None:
    """The arm owns work/ARM/corpus/.git: whatever its config asks for never runs, because no
    git runs there at all; the index comes from the pristine copy or pin-lines.json."""
    run_dir, marker = tmp_path / "run", tmp_path / "marker"
    copy = run_dir / "work" / "arm" / "corpus"
    pristine = tmp_path / "pristine"
    sha = _repo(pristine)
    shutil.copytree(pristine, copy, symlinks=True)
    hooks = copy / ".git" / "hooks-x"
    hooks.mkdir()
    for hook in ("post-checkout", "pre-commit", "reference-transaction", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}-{hook}\n")
        (hooks / hook).chmod(0o755)
    (copy / ".git" / "extra.cfg").write_text(f"[core]\n\tpager = touch {marker}-pager\n")
    (copy / ".git" / "config").write_text(HOSTILE_CONFIG.format(
        marker=marker, hooks=hooks, include=copy / ".git" / "extra.cfg"))
    (copy / ".gitattributes").write_text("* filter=x\n")
    assert not line_index.load_index(run_dir, sha).available
    index = line_index.load_index(run_dir, sha, pristine)
    assert index.source == line_index.PRISTINE and index.files == {"d/x.txt": 3, "top.txt": 1}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("marker")) == []


def test_the_index_falls_back_to_pin_lines(tmp_path: Path) -> None:
    pristine = tmp_path / "pristine"
    sha = _repo(pristine)
    first = line_index.load_index(tmp_path, sha, pristine)
    assert first.source == line_index.PRISTINE
    (tmp_path / line_index.PIN_LINES).write_text(line_index.pin_lines_text(first))
    again = line_index.load_index(tmp_path, sha)
    assert again.source == line_index.PIN_LINES and again.files == first.files
    with pytest.raises(InputError, match="corpus_sha"):
        line_index.load_index(tmp_path, "0" * 40)
    (tmp_path / line_index.PIN_LINES).write_text("{")
    with pytest.raises(InputError, match="pin-lines.json"):
        line_index.load_index(tmp_path, sha)


def test_pin_lines_are_canonical(tmp_path: Path) -> None:
    text = line_index.pin_lines_text(line_index.LineIndex("s", {"b": 1, "a": 2}, "work/x/corpus"))
    assert json.loads(text)["files"] == {"a": 2, "b": 1} and text.endswith("\n")
