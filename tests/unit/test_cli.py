"""The CLI end to end with typer's CliRunner: exit codes and one clear message, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli import _common, app
from orchestrator.guards import GuardResult

runner = CliRunner()


def test_no_engine_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    result = runner.invoke(app, ["images", "ls", "--bench-root", str(tmp_path / "b")])
    assert result.exit_code == 1
    assert "no Docker engine answers at unix://" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "b").exists()


def test_dry_run_build_lists_every_image_without_an_engine(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    result = runner.invoke(app, ["images", "build", "--dry-run", "--bench-root",
                                 str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    for name in ("base", "rg", "ast-grep", "code-review-graph", "probe"):
        assert name in result.output
    assert "would-build" in result.output
    assert not (tmp_path / "b").exists()


def test_unknown_image_exits_2_naming_the_known_ones(tmp_path: Path) -> None:
    result = runner.invoke(app, ["images", "build", "nope", "--dry-run", "--bench-root",
                                 str(tmp_path)])
    assert result.exit_code == 2
    assert "unknown image 'nope'" in result.output and "rg" in result.output


def test_a_corrupt_image_lock_exits_2_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "images.lock").write_text("{oops")
    result = runner.invoke(app, ["images", "build", "--dry-run", "--bench-root", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'images.lock'}: does not parse" in result.output
    assert (tmp_path / "images.lock").read_text() == "{oops"


def test_audit_of_a_non_run_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["audit", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a sandbench run directory" in result.output


def test_tables_without_a_terminal_are_plain_one_line_rows(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "20")
    args = ["images", "build", "--dry-run", "--bench-root", str(tmp_path / "b")]
    first, again = runner.invoke(app, args), runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert first.stdout == again.stdout
    assert "\x1b" not in first.stdout
    assert first.stdout.splitlines()[0].split() == ["NAME", "ACTION", "REASON", "TAG",
                                                    "SECONDS"]
    rows = [line.split(maxsplit=2) for line in first.stdout.splitlines()]
    assert ["devscout", "unavailable", "needs --artifact devscout=PATH"] in rows
    assert all(line == line.rstrip() for line in first.stdout.splitlines())


def test_the_guard_table_shows_cells_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    found = "[bold]" + "x" * 300
    _common.show_guards("rg: REFUSED", [GuardResult("read_only_root", "outside", True, True, True),
                                        GuardResult("user", "inside", "[red]1000", found, False)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["", "rg: REFUSED"]
    rows = [line.split() for line in lines]
    assert ["GUARD", "SIDE", "OK", "EXPECTED", "FOUND"] in rows
    assert ["read_only_root", "outside", "ok", "True", "True"] in rows
    assert ["user", "inside", "FAIL", "[red]1000", found] in rows
