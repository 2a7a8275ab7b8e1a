"""`sandbench sandbox try` against the real engine: a demo task run once in rg's verified
sandbox reads what the golden run's scorer read of that cell, and `--render-only` renders
every task's command as the golden run ran it, starting nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator import suite
from orchestrator.sandbox import cleanup
from orchestrator.isolation import guards
from orchestrator.cli import app
from orchestrator.engine import Engine
from orchestrator.settings import Settings
from orchestrator.run.transcripts import read_record
from tests.integration.conftest import project_copy

pytestmark = pytest.mark.integration
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"
SCORES = json.loads((GOLDEN / "scores.json").read_text())
# A ranked task (its answer cut at top_k) whose output is the same in every rep of the golden
# run, so the answer's order is the tool's, not its threads'.
TASK = "locate-bulk-threshold"
runner = CliRunner()


@pytest.fixture(scope="module")
def project(built: Settings, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A copy of the project's inputs with the demo corpus fetched, its demo suite sealed for
    the scorer sources the copy holds: this tests `try`, not the checkout's seal."""
    settings = project_copy(built, tmp_path_factory.mktemp("try"))
    suite.seal(suite.load_suite(settings.suites_dir, "demo"), settings)
    return settings


def _try(project: Settings, monkeypatch: pytest.MonkeyPatch, *args: str,
         arm: str = "rg") -> dict[str, Any]:
    monkeypatch.setenv("SANDBENCH_PROJECT", str(project.project_root))
    result = runner.invoke(app, ["sandbox", "try", arm, "--suite", "demo", "--bench-root",
                                 str(project.bench_root), "--json", *args],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_one_task_reads_what_the_golden_runs_scorer_read(
        engine: Engine, project: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _try(project, monkeypatch, "--task", TASK)
    (entry,) = out["tasks"]
    golden = next(c for c in SCORES["cells"] if (c["arm"], c["task"]) == ("rg", TASK))
    assert "output-varies" not in golden["flags"]
    assert entry["argv"] == golden["argv"]
    assert entry["exec"]["outcome"] == "ok" and entry["exec"]["exit_code"] == 0
    assert entry["exec"]["stdout_bytes"] == golden["cost"]["stdout_bytes"]
    assert entry["excerpt"] and entry["failure"] is None and entry["parse_error"] is None
    assert entry["parsed"]["calls"] == golden["calls"]
    assert entry["parsed"]["files"] == golden["grade"]["files_named"]
    assert {k: entry["truth"][k] for k in golden["grade"]} == golden["grade"]
    assert entry["truth"]["verdict"] == golden["verdict"]
    # Every guard verified, the command's transcript kept, the container gone.
    run_dir = Path(out["run_dir"])
    (verified,) = guards.audit(run_dir)
    assert verified.arm == "rg" and verified.ok
    assert read_record(run_dir / "cells" / "rg" / TASK / "record.json").argv == entry["argv"]
    assert not cleanup.find(engine, run_id=run_dir.name)


def test_an_mcp_arm_sends_each_call_in_a_session_and_reads_what_the_golden_scorer_read(
        engine: Engine, project: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """code-index-mcp: its set-up session, then the task's call in a session of its own; the
    call's record is derived from the session as a run derives its cold rep."""
    task = "references-cart-line"
    out = _try(project, monkeypatch, "--task", task, arm="code-index-mcp")
    assert out["setup"]["outcome"] == "ok"
    (entry,) = out["tasks"]
    golden = next(c for c in SCORES["cells"] if (c["arm"], c["task"]) == ("code-index-mcp", task))
    golden_call = json.loads((GOLDEN / "cells" / "code-index-mcp" / task / "0" /
                              "record.json").read_text())["argv"]
    assert ["tools/call", entry["call"]["tool"],
            json.dumps(entry["call"]["arguments"], sort_keys=True)] == golden_call
    assert entry["exec"]["outcome"] == "ok" and entry["failure"] is None
    assert entry["parsed"]["files"] == golden["grade"]["files_named"]
    assert sorted(entry["truth"]["hits"]) == sorted(golden["grade"]["hits"])
    assert entry["truth"]["verdict"] == golden["verdict"]
    run_dir = Path(out["run_dir"])
    (verified,) = guards.audit(run_dir)
    assert verified.arm == "code-index-mcp" and verified.ok
    cell = run_dir / "cells" / "code-index-mcp" / task
    assert read_record(cell / "0" / "record.json").argv == golden_call
    assert (cell / "session").is_dir()
    assert not cleanup.find(engine, run_id=run_dir.name)


def test_render_only_renders_every_task_as_the_golden_run_ran_it(
        project: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    runs_before = sorted(project.runs_dir.glob("*")) if project.runs_dir.is_dir() else []
    out = _try(project, monkeypatch, "--render-only")
    assert out["run_dir"] is None and out["setup"] is None
    assert (sorted(project.runs_dir.glob("*")) if project.runs_dir.is_dir() else []) == \
        runs_before  # nothing started: no run folder, no sandbox
    golden = sorted(p.name for p in (GOLDEN / "cells" / "rg").iterdir())
    assert [e["task"] for e in out["tasks"]] == golden
    for entry in out["tasks"]:
        record = read_record(GOLDEN / "cells" / "rg" / entry["task"] / "0" / "record.json")
        assert (entry["command"], entry["argv"]) == ("arm", record.argv), entry["task"]
        assert "exec" not in entry
