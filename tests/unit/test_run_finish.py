"""The run's last write: a bench root with no room for the final run.json is one error that
says how to go on (the run stays resumable), not a traceback."""

from __future__ import annotations

import errno
from pathlib import Path
from types import SimpleNamespace

import pytest

from orchestrator.run import document as run_document, runner
from orchestrator.errors import SandbenchError

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"


def _run(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(settings=SimpleNamespace(bench_root=tmp_path),
                           plan=SimpleNamespace(suite=SimpleNamespace(name="demo")),
                           run_dir=tmp_path / "runs" / "run-1", pristine=tmp_path / "pristine",
                           pin=SimpleNamespace(id="demo"))


def _full(run_dir: Path, doc: run_document.RunDoc) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_no_room_for_the_last_run_json_says_free_space_then_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = run_document.read(GOLDEN)
    monkeypatch.setattr(runner.corpus, "tree_digest", lambda _: doc.corpus.pristine_digest_before)
    monkeypatch.setattr(runner.run_document, "write", _full)
    r = _run(tmp_path)
    with pytest.raises(SandbenchError, match="is full") as info:
        runner.finish(r, doc)  # type: ignore[arg-type]
    assert info.value.fix == f"free space, then: sandbench run demo --resume {r.run_dir}"


def test_another_os_error_of_the_last_write_is_not_called_a_full_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = run_document.read(GOLDEN)
    monkeypatch.setattr(runner.corpus, "tree_digest", lambda _: doc.corpus.pristine_digest_before)

    def denied(run_dir: Path, doc: run_document.RunDoc) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(runner.run_document, "write", denied)
    with pytest.raises(PermissionError):
        runner.finish(_run(tmp_path), doc)  # type: ignore[arg-type]
