"""One damaged file through its reader and one CLI command, in a private project and bench root.

The workspace is a copy of the repo's inputs (arms/, suites/, images/, corpus.lock, and the
sealed scorer sources, suite.every_scorer_source) as the project root
(SANDBENCH_PROJECT), and a bench root holding a real images.lock, a real exec record and a
real set of guard snapshots (tests/unit/bad_input/fixtures/, taken from this host's bench/),
and the committed golden run (tests/golden/demo-run, with its sealed suite) for `score`.
Every example damages one file, checks, and restores it; a workspace that an example changed
in any other way is rebuilt from its pristine copy before the next example.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.errors import InputError
from orchestrator.suite import every_scorer_source

from .damage import Damage

REPO = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROJECT_INPUTS = ("arms", "suites", "images", "corpus.lock", *every_scorer_source(REPO))
GUARD_RUN = "runs/check-20261202T140501Z-be4aa6"
GUARD_DIR = f"{GUARD_RUN}/guards/rg"
RECORD = "runs/run-demo-20261202T144318Z-d65d42/cells/rg/references-cart-line/3/record.json"
# The committed golden run and the suite it was sealed with, for `sandbench score`.
GOLDEN_RUN = "runs/golden-demo"
GOLDEN_SUITE = "golden/suites/demo"

runner = CliRunner()


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    else:
        shutil.copy2(src, dst)


Listing = dict[str, tuple[Any, ...]]


def listing(root: Path) -> Listing:
    """Every directory and file under root: kind, and for files size, mtime and inode (a write
    in place changes the mtime, an atomic rename the inode)."""
    out: Listing = {}
    stack = [(str(root), "")]
    while stack:
        folder, prefix = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    out[rel] = ("dir",)
                    stack.append((entry.path, rel + "/"))
                else:
                    st = entry.stat(follow_symlinks=False)
                    out[rel] = ("link" if entry.is_symlink() else "file", st.st_size,
                                st.st_mtime_ns, st.st_ino)
    return out


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root

    def __repr__(self) -> str:
        return f"Workspace({self.root})"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def bench(self) -> Path:
        return self.root / "bench"

    @property
    def _pristine(self) -> Path:
        return self.root / "pristine"

    @classmethod
    def create(cls, root: Path, golden: bool = False) -> Workspace:
        """The project inputs and bench fixtures; or, with `golden`, only the golden run (as
        the bench root's runs/golden-demo) and its sealed suite, kept apart because listing
        its 300 files would slow every other example."""
        ws = cls(root.resolve())
        if golden:
            _copy(REPO / "tests/golden/demo-run", ws._pristine / "bench" / GOLDEN_RUN)
            _copy(REPO / "tests/golden/suites/demo", ws._pristine / "project" / GOLDEN_SUITE)
        else:
            for rel in PROJECT_INPUTS:
                _copy(REPO / rel, ws._pristine / "project" / rel)
            _copy(FIXTURES / "images.lock", ws._pristine / "bench" / "images.lock")
            _copy(FIXTURES / "record.json", ws._pristine / "bench" / RECORD)
            _copy(FIXTURES / "guards" / "rg", ws._pristine / "bench" / GUARD_DIR)
        ws._restore()
        return ws

    def _restore(self) -> None:
        for name in ("project", "bench"):
            shutil.rmtree(self.root / name, ignore_errors=True)
            shutil.copytree(self._pristine / name, self.root / name)

    def snapshot(self) -> dict[str, Listing]:
        return {"project": listing(self.project), "bench": listing(self.bench)}

    @contextlib.contextmanager
    def damaged(self, target: Path, damage: Damage) -> Iterator[dict[str, Listing]]:
        """The workspace with `target` replaced by the damaged bytes (or deleted); yields the
        listing taken after the damage, for the nothing-written check. The caller asserts
        that nothing else changed: when it does not return normally the whole workspace is
        rebuilt from its pristine copy."""
        assert target.is_relative_to(self.root), target
        original = self._pristine / target.relative_to(self.root)
        if damage.data is None:
            target.unlink()
        else:
            target.write_bytes(damage.data)
        try:
            yield self.snapshot()
        except BaseException:
            self._restore()  # whatever the failed example left behind goes with it
            raise
        shutil.copy2(original, target)  # the caller checked that nothing else changed


# -- the checks ---------------------------------------------------------------------------------

def related(a: str, b: str) -> bool:
    """The same key, or one names a table holding the other."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def spellings(key: str) -> list[str]:
    """How a message may spell a dotted key: as is, or as tomllib's tuple of parts."""
    parts = key.split(".")
    tuple_form = "(" + ", ".join(repr(p) for p in parts) + ("," if len(parts) == 1 else "") + ")"
    return [key, tuple_form]


def key_named(text: str, data_key: Any, keys: Sequence[str]) -> str | None:
    """The key the error names, if it names one of `keys` (or a table above/below one)."""
    if isinstance(data_key, str) and data_key:
        if any(related(data_key, k) for k in keys) and data_key in text:
            return data_key
        return None
    for k in keys:
        for spelled in spellings(k):
            if spelled in text:
                return spelled
    return None


def _describe(damage: Damage, extra: str) -> str:
    return f"\n  damage: {damage!r}\n  {extra}"


def check_reader(reader: Callable[[], Any], target: Path, damage: Damage) -> str | None:
    """The reader refuses with one InputError (exit code 2) naming the file and the key;
    returns the key it named (None when the damage is not about one key)."""
    try:
        accepted = reader()
    except InputError as err:
        rendered = err.render()
        assert err.exit_code == 2, _describe(damage, f"exit_code {err.exit_code}: {rendered}")
        file = str(err.data.get("file", ""))
        assert str(target) in file or str(target) in rendered, _describe(
            damage, f"the error does not name {target}: {rendered!r} (file={file!r})")
        if not damage.keys:
            return None
        named = key_named(rendered, err.data.get("key"), damage.keys)
        assert named is not None, _describe(
            damage, f"the error does not name the key {damage.keys}: {rendered!r} "
            f"(key={err.data.get('key')!r})")
        return named
    raise AssertionError(_describe(damage, f"the reader accepted it: {accepted!r:.300}"))


def check_cli(argv: list[str], target: Path, damage: Damage, key: str | None) -> None:
    """Exit code 2, one `error:` line on stderr naming the file (and the key), nothing on
    stdout, no traceback. A traceback raises out of here (catch_exceptions=False)."""
    result = runner.invoke(app, argv, catch_exceptions=False)
    shown = f"`sandbench {' '.join(argv)}` -> {result.exit_code}\n  stdout: " \
            f"{result.stdout[-400:]!r}\n  stderr: {result.stderr[-600:]!r}"
    assert "Traceback" not in result.output, _describe(damage, shown)
    assert result.exit_code == 2, _describe(damage, shown)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, _describe(damage, "not one error line: " + shown)
    assert str(target) in result.stderr, _describe(damage, f"{target} not named: " + shown)
    if key is not None:
        assert key in result.stderr, _describe(damage, f"key {key!r} not named: " + shown)
    elif damage.keys:
        assert any(s in result.stderr for k in damage.keys for s in spellings(k)), \
            _describe(damage, f"none of the keys {damage.keys} named: " + shown)
    assert result.stdout == "", _describe(damage, "output on stdout: " + shown)


def refused(ws: Workspace, target: Path, damage: Damage, reader: Callable[[], Any],
            argv: list[str] | None) -> None:
    """The whole property: reader, then CLI, then the workspace is unchanged."""
    with ws.damaged(target, damage) as before:
        key = check_reader(reader, target, damage)
        if argv is not None:
            check_cli(argv, target, damage, key)
        after = ws.snapshot()
        assert after == before, _describe(damage, "files changed: " + changed(before, after))


def changed(before: dict[str, Listing], after: dict[str, Listing]) -> str:
    out = []
    for tree, b in before.items():
        a = after[tree]
        out += [f"{tree}/{p} added" for p in sorted(a.keys() - b.keys())]
        out += [f"{tree}/{p} removed" for p in sorted(b.keys() - a.keys())]
        out += [f"{tree}/{p} modified" for p in sorted(a.keys() & b.keys()) if a[p] != b[p]]
    return ", ".join(out) or "(none)"


def fill(argv: Sequence[str], **paths: Path | str) -> list[str]:
    return [a.format(**{k: str(v) for k, v in paths.items()}) for a in argv]
