"""The line index of a corpus at its pin: the line count of every file tracked at the pinned
commit, which follow-up reach checks a row's line against (`orchestrator/score/reach.py`).

The run saves it while an arm's corpus copy is still mounted; the scorer reads it back and
never mounts anything. It comes from, in order:

1. an arm's own corpus copy under `RUN_DIR/work/ARM/corpus/`, read through git at the pinned
   sha. The arm could write to that copy, its object store included, so every object read is
   verified against its id, from the pinned commit down through every tree to every blob: a
   copy whose objects do not hash to the pin is skipped. The index is then saved as
   `RUN_DIR/pin-lines.json`, so the run directory scores the same after `work/` is deleted;
2. `RUN_DIR/pin-lines.json`, when no verifiable copy is left;
3. neither: nothing is known, and reach says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator import log
from orchestrator.errors import InputError
from orchestrator.fsutil import canonical_json

PIN_LINES = "pin-lines.json"
PIN_LINES_SCHEMA = "sandbench.pin-lines/1"

logger = log.get(__name__)


@dataclass(frozen=True)
class LineIndex:
    """Line count of every regular file tracked at the pin, or nothing known."""

    corpus_sha: str
    files: dict[str, int] | None
    source: str | None = None  # where it came from: work/ARM/corpus or pin-lines.json

    @property
    def available(self) -> bool:
        return self.files is not None


def line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


# -- the index ----------------------------------------------------------------------------

class _Unverified(Exception):
    pass


def _git_env(home: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", os.defpath), "HOME": home, "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_NO_REPLACE_OBJECTS": "1", "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0"}


def _read_objects(git_dir: Path, ids: Sequence[str],
                  env: dict[str, str]) -> dict[str, tuple[str, bytes]]:
    """(type, content) of each object, each checked to hash to its id."""
    argv = ["git", "-c", "safe.directory=*", "-c", "core.fsmonitor=false", "-c",
            "core.hooksPath=/dev/null", f"--git-dir={git_dir}", "cat-file", "--batch"]
    try:
        proc = subprocess.run(argv, input="".join(f"{i}\n" for i in ids).encode(),
                              capture_output=True, env=env, check=False, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _Unverified(f"git cat-file: {exc}") from exc
    if proc.returncode != 0:
        raise _Unverified(proc.stderr.decode("utf-8", "replace").strip()[-200:])
    out, pos, objects = proc.stdout, 0, {}
    for oid in ids:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode("ascii", "replace").split()
        if len(header) != 3 or header[0] != oid:
            raise _Unverified(f"object {oid} is missing")
        kind, size = header[1], int(header[2])
        content = out[end + 1:end + 1 + size]
        pos = end + 2 + size
        algo = hashlib.sha1 if len(oid) == 40 else hashlib.sha256
        if algo(f"{kind} {size}\0".encode() + content).hexdigest() != oid:
            raise _Unverified(f"object {oid} does not hash to its id")
        objects[oid] = (kind, content)
    return objects


def _tree_entries(content: bytes, id_len: int) -> Iterable[tuple[str, str, str]]:
    pos = 0
    while pos < len(content):
        space = content.index(b" ", pos)
        nul = content.index(b"\0", space)
        mode = content[pos:space].decode()
        name = content[space + 1:nul].decode("utf-8", "surrogateescape")
        oid = content[nul + 1:nul + 1 + id_len].hex()
        pos = nul + 1 + id_len
        yield mode, name, oid


def index_from_copy(copy: Path, sha: str) -> dict[str, int]:
    """Line counts at `sha`, read from `copy`'s object store, every object verified."""
    git_dir = copy / ".git"
    if not git_dir.is_dir():
        raise _Unverified("no .git")
    with tempfile.TemporaryDirectory(prefix="sandbench-score-git-") as home:
        env = _git_env(home)
        kind, commit = _read_objects(git_dir, [sha], env)[sha]
        if kind != "commit" or not commit.startswith(b"tree "):
            raise _Unverified(f"{sha} is not a commit")
        root = commit[5:commit.index(b"\n")].decode()
        id_len = len(sha) // 2
        files: dict[str, int] = {}
        level = [("", root)]
        while level:
            trees = _read_objects(git_dir, sorted({oid for _, oid in level}), env)
            blobs: list[tuple[str, str]] = []
            below: list[tuple[str, str]] = []
            for prefix, oid in level:
                kind, content = trees[oid]
                if kind != "tree":
                    raise _Unverified(f"{oid} is not a tree")
                for mode, name, child in _tree_entries(content, id_len):
                    path = f"{prefix}{name}"
                    if mode == "40000":
                        below.append((path + "/", child))
                    elif mode in ("100644", "100755"):
                        blobs.append((path, child))
            if blobs:
                contents = _read_objects(git_dir, sorted({oid for _, oid in blobs}), env)
                for path, oid in blobs:
                    files[path] = line_count(contents[oid][1])
            level = below
    return dict(sorted(files.items()))


def _read_pin_lines(path: Path, sha: str) -> dict[str, int] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: does not parse: {exc}", file=str(path)) from exc
    if not isinstance(data, dict) or data.get("schema") != PIN_LINES_SCHEMA:
        raise InputError.bad_value(path, "schema", PIN_LINES_SCHEMA,
                                   data.get("schema") if isinstance(data, dict) else data)
    if data.get("corpus_sha") != sha:
        raise InputError.bad_value(path, "corpus_sha", sha, data.get("corpus_sha"))
    files = data.get("files")
    if not isinstance(files, dict) or not all(isinstance(v, int) for v in files.values()):
        raise InputError.bad_value(path, "files", "an object of path -> line count", files)
    return files


def load_index(run_dir: Path, arms: Sequence[str], sha: str) -> LineIndex:
    for arm in arms:
        copy = run_dir / "work" / arm / "corpus"
        if not copy.is_dir():
            continue
        try:
            return LineIndex(sha, index_from_copy(copy, sha), f"work/{arm}/corpus")
        except _Unverified as why:
            logger.warning("reach.copy_unverified", arm=arm, why=str(why))
    files = _read_pin_lines(run_dir / PIN_LINES, sha)
    if files is not None:
        return LineIndex(sha, files, PIN_LINES)
    return LineIndex(sha, None)


def pin_lines_text(index: LineIndex) -> str:
    return canonical_json({"schema": PIN_LINES_SCHEMA, "corpus_sha": index.corpus_sha,
                           "source": index.source, "files": index.files})
