"""The run's one pre-flight: a run and its --dry-run find the same problems with the same
code, every one of them, and a run stops at them before anything is made; the options are
checked once, where they are built; with or without --engine the engines are connected the
same way (one engine is a pool of one)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.errors import InputError, SandbenchError
from orchestrator.run import pool, preflight
from orchestrator.run.options import RunOptions
from orchestrator.run.plan import plan
from orchestrator.settings import Settings

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _problems(stderr: str) -> list[str]:
    """The problems listed on the error's lines, without the leading (N)."""
    text = " ".join(stderr.split())
    return [p for p in ("--resume", "arm 'nope' is not in suite 'demo'",
                        "no Docker engine answers") if p in text]


@pytest.mark.parametrize("dry", [True, False])
def test_a_run_stops_at_every_problem_its_dry_run_lists(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, dry: bool) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    args = ["run", "demo", "--arm", "nope", "--resume", str(tmp_path), "--bench-root",
            str(tmp_path / "b")]
    result = runner.invoke(app, args + (["--dry-run"] if dry else []))
    assert result.exit_code == 2, result.output
    assert "the run could not start: 3 problems" in result.stderr
    assert _problems(result.stderr) == ["--resume", "arm 'nope' is not in suite 'demo'",
                                        "no Docker engine answers"]
    assert f"--resume {tmp_path}: no run.json: not a run directory to resume" in \
        " ".join(result.stderr.split())
    assert "Traceback" not in result.output and not (tmp_path / "b").exists()


@pytest.mark.parametrize(("option", "value"), [("runtime", "kata"), ("exec_path", "ssh"),
                                               ("on_engine_refused", "retry"), ("jobs", 0)])
def test_options_refuse_a_value_where_they_are_built(option: str, value: Any) -> None:
    flag = "--" + option.replace("_", "-")
    with pytest.raises(InputError, match=f"{flag}: expected ") as info:
        RunOptions("demo", **{option: value})
    assert info.value.data["key"] == flag


@pytest.mark.parametrize("urls", [(), ("unix:///var/run/other.sock",)])
def test_with_or_without_engine_the_preflight_connects_the_pool(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, urls: tuple[str, ...]) -> None:
    asked: list[tuple[tuple[str, ...], bool]] = []

    def connect(given: tuple[str, ...], insecure: bool) -> list[pool.Member]:
        asked.append((given, insecure))
        return []
    monkeypatch.setattr(pool, "connect", connect)
    settings = Settings(project_root=REPO, bench_root=tmp_path / "b")
    checked = preflight.check(settings, RunOptions("demo", engine_urls=urls))
    assert asked == [(urls, False)]
    assert checked.plan is not None and checked.plan.suite.name == "demo"
    assert any("corpus 'demo' is not fetched" in p.text for p in checked.problems)
    with pytest.raises(SandbenchError, match="corpus 'demo' is not fetched"):
        checked.ready()


def test_a_broken_seal_is_one_problem_with_the_error_the_run_raises(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = Settings(project_root=REPO, bench_root=tmp_path / "b")
    the_plan = plan(settings, "demo")
    changed = SimpleNamespace(file="suites/demo/suite.toml", expected="aa", found="bb")
    monkeypatch.setattr(preflight.suite, "verify_seal", lambda *_: [changed])
    (problem,) = [p for p in preflight.plan_problems(the_plan, settings, None, [])
                  if "seal" in p.text]
    assert problem.text == ("suite 'demo': suites/demo/suite.toml changed since the seal "
                            "(sealed aa, now bb) (fix: review the change, then: sandbench "
                            "suite seal demo)")
    assert problem.exit_code == 2 and isinstance(problem.error, InputError)
    assert preflight.could_not_start([problem]) is problem.error
