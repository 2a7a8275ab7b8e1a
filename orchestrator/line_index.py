"""The line index of a corpus at its pin: the line count of every file tracked at the pinned
commit, which follow-up reach checks a row's line against (`orchestrator/score/reach.py`).

It is read from the PRISTINE copy, never from an arm's: the arm owned its copy's `.git`,
config, hooks and object store included, and git run there would run what the arm put in
them, as root. The pristine copy is the host's own, verified at the pin before the run and
proved unchanged after it. The run saves the index as `RUN_DIR/pin-lines.json`; the scorer
reads only that file and never reads the corpus store. Every object read is checked against
its id, from the pinned commit down through every tree to every blob. With no index saved,
nothing is known, and reach says so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator import log
from orchestrator.corpus.git import GIT_DIR, Git, clean_git
from orchestrator.errors import InputError, SandbenchError
from orchestrator.fsutil import canonical_json
from orchestrator.untrusted.strings import portable

PIN_LINES = "pin-lines.json"
PIN_LINES_SCHEMA = "sandbench.pin-lines/1"
PRISTINE = "pristine"  # the source of an index read from the pristine copy

logger = log.get(__name__)


@dataclass(frozen=True)
class LineIndex:
    """Line count of every regular file tracked at the pin, or nothing known."""

    corpus_sha: str
    files: dict[str, int] | None
    source: str | None = None  # where it came from: pristine or pin-lines.json

    @property
    def available(self) -> bool:
        return self.files is not None


def line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


# -- the index ----------------------------------------------------------------------------

class _Unverified(Exception):
    pass


def _read_objects(git: Git, git_dir: Path,
                  ids: Sequence[str]) -> dict[str, tuple[str, bytes]]:
    """(type, content) of each object, each checked to hash to its id."""
    try:
        proc = git.run(f"--git-dir={git_dir}", "cat-file", "--batch",
                       stdin="".join(f"{i}\n" for i in ids).encode(), check=False)
    except SandbenchError as exc:
        raise _Unverified(exc.what) from exc
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


def index_from_pristine(pristine: Path, sha: str) -> dict[str, int]:
    """Line counts at `sha`, read from the pristine copy's object store (the host's own,
    never an arm's copy), every object verified."""
    git_dir = pristine / GIT_DIR
    if not git_dir.is_dir():
        raise _Unverified("no .git")
    with clean_git() as git:
        kind, commit = _read_objects(git, git_dir, [sha])[sha]
        if kind != "commit" or not commit.startswith(b"tree "):
            raise _Unverified(f"{sha} is not a commit")
        root = commit[5:commit.index(b"\n")].decode()
        id_len = len(sha) // 2
        files: dict[str, int] = {}
        level = [("", root)]
        while level:
            trees = _read_objects(git, git_dir, sorted({oid for _, oid in level}))
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
                contents = _read_objects(git, git_dir, sorted({oid for _, oid in blobs}))
                for path, oid in blobs:
                    # keyed as an answer's path is (the one rule for names, injective)
                    files[portable(path)] = line_count(contents[oid][1])
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


def load_index(run_dir: Path, sha: str, pristine: Path | None = None) -> LineIndex:
    """The index `RUN_DIR/pin-lines.json` holds; else, given the pristine copy, read from it
    (as the run saves it); else nothing known."""
    files = _read_pin_lines(run_dir / PIN_LINES, sha)
    if files is not None:
        return LineIndex(sha, files, PIN_LINES)
    if pristine is not None:
        try:
            return LineIndex(sha, index_from_pristine(pristine, sha), PRISTINE)
        except _Unverified as why:
            logger.warning("reach.pristine_unverified", why=str(why))
    return LineIndex(sha, None)


def pin_lines_text(index: LineIndex) -> str:
    return canonical_json({"schema": PIN_LINES_SCHEMA, "corpus_sha": index.corpus_sha,
                           "source": index.source, "files": index.files})
