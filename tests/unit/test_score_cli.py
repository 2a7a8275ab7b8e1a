"""`sandbench score` and `sandbench report` end to end with typer's CliRunner: exit codes,
the scorecard on the terminal, one clear message and no traceback on bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from test_score_fixtures import Arm, Cell, RunBuilder, rg_rows
from typer.testing import CliRunner

from orchestrator.cli import SandbenchGroup, score as score_cli

runner = CliRunner()


def make_app() -> typer.Typer:
    """The two commands as cli/__init__.py registers them."""
    app = typer.Typer(cls=SandbenchGroup, add_completion=False, pretty_exceptions_enable=False)
    app.command("score")(score_cli.score)
    app.command("report")(score_cli.report)
    return app


@pytest.fixture
def built(tmp_path: Path) -> RunBuilder:
    b = RunBuilder(tmp_path, arms=[Arm("rg", tool_version="ripgrep 13.0.0"), Arm("peer")])
    b.cells[("rg", "ref-money")] = Cell(rg_rows("src/a.cs:2:Money", "src/b.cs:2:Money",
                                                "src/d.cs:1:Money"))
    return b.build()


def scorecard_rows(output: str) -> list[list[str]]:
    """The scorecard's lines as cells: columns are two or more spaces apart."""
    return [re.split(r"\s{2,}", line.strip()) for line in output.splitlines()]


HEADER = ["ARM", "KIND", "CORRECT", "PARTIAL", "WRONG", "NOT ATTEMPTED", "UNSCORED"]


def _score(built: RunBuilder, *extra: str):
    return runner.invoke(make_app(), ["score", str(built.run_dir), "--suite-dir",
                                      str(built.suite_dir), *extra])


def test_score_prints_the_scorecard_and_writes_scores(built: RunBuilder) -> None:
    result = _score(built)
    assert result.exit_code == 0, result.output
    rows = scorecard_rows(result.stdout)
    assert HEADER in rows  # every column named in words, no legend needed
    assert ["rg (baseline)", "references", "1", "0", "0", "0", "0"] in rows
    assert ["peer", "all", "0", "0", "4", "0", "0"] in rows
    assert (built.run_dir / "scores.json").is_file()


def test_the_default_suite_is_the_projects(built: RunBuilder,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBENCH_PROJECT", str(built.root / "project"))
    result = runner.invoke(make_app(), ["score", str(built.run_dir)])
    assert result.exit_code == 0, result.output


def test_rescoring_that_differs_exits_1_naming_the_cells(built: RunBuilder) -> None:
    assert _score(built).exit_code == 0
    again = _score(built)
    assert again.exit_code == 0 and "self-check: all 8 cells reproduce" in again.output
    path = built.run_dir / "scores.json"
    data = json.loads(path.read_text())
    data["cells"][0]["verdict"] = "correct"
    path.write_text(json.dumps(data))
    result = _score(built)
    assert result.exit_code == 1
    assert "re-scoring does not reproduce 1" in result.output
    assert "--update" in result.output and "Traceback" not in result.output
    assert _score(built, "--update").exit_code == 0


def test_bad_input_exits_2_with_one_message(built: RunBuilder) -> None:
    record = built.run_dir / "cells" / "peer" / "loc-a" / "1" / "record.json"
    record.unlink()
    result = _score(built)
    assert result.exit_code == 2
    assert f"{record} is missing" in result.output
    assert "Traceback" not in result.output
    assert not (built.run_dir / "scores.json").exists()


def test_report_writes_checks_and_prints_json(built: RunBuilder) -> None:
    assert _score(built).exit_code == 0
    app = make_app()
    result = runner.invoke(app, ["report", str(built.run_dir)])
    assert result.exit_code == 0, result.output
    document = built.run_dir / "results.md"
    assert f"markdown: {document}" in result.output
    assert ["rg (baseline)", "references", "1", "0", "0", "0", "0"] in scorecard_rows(
        result.stdout)
    check = runner.invoke(app, ["report", str(built.run_dir), "--check"])
    assert check.exit_code == 0 and "identical" in check.output
    document.write_text(document.read_text() + "edited by hand\n")
    check = runner.invoke(app, ["report", str(built.run_dir), "--check"])
    assert check.exit_code == 1 and "+edited by hand" not in check.output
    assert "-edited by hand" in check.output
    as_json = runner.invoke(app, ["report", str(built.run_dir), "--format", "json"])
    assert as_json.exit_code == 0
    assert as_json.output == (built.run_dir / "scores.json").read_text()


def test_report_to_another_path(built: RunBuilder, tmp_path: Path) -> None:
    assert _score(built).exit_code == 0
    target = tmp_path / "docs" / "2026-01-01-mini.md"
    app = make_app()
    assert runner.invoke(app, ["report", str(built.run_dir), "-o", str(target)]).exit_code == 0
    assert target.is_file() and not (built.run_dir / "results.md").exists()
    result = runner.invoke(app, ["report", str(built.run_dir), "-o", str(target), "--check"])
    assert result.exit_code == 0


def test_report_without_scores_exits_2(built: RunBuilder) -> None:
    result = runner.invoke(make_app(), ["report", str(built.run_dir)])
    assert result.exit_code == 2 and "scores.json is missing" in result.output
