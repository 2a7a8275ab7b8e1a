"""The golden run: a real run of the demo suite, trimmed to what the scorer reads, scores and
renders to the committed scores.json and results.md byte for byte.

`tests/golden/demo-run/` holds the run (run.json; every record; the streams of each graded
invocation, REP 0; arms/*/state.json; guards/*/verdict.json; pin-lines.json, the line index
the scorer saved while the arms' corpus copies still existed) and the committed outputs.
`tests/golden/suites/demo/` is the suite exactly as sealed for that run.

After an intended change of the scores or the document, review the difference, then write the
new expected files:

    SANDBENCH_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/test_golden.py

To replace the golden run by a newer complete run (with its suite as sealed for it):

    SANDBENCH_GOLDEN_FROM=bench/runs/RUN_ID SANDBENCH_GOLDEN_SUITE=suites/demo \
        .venv/bin/python -m pytest tests/unit/test_golden.py
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from orchestrator import report
from orchestrator.predictions.model import PREDICTIONS
from orchestrator.score import score_run, self_check
from orchestrator.line_index import PIN_LINES

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
RUN = GOLDEN / "demo-run"
SUITE = GOLDEN / "suites" / "demo"
OUTPUTS = ("scores.json", "results.md")
SUITE_FILES = ("suite.toml", "preregistration.md", "manifest.json")


def trim_run(source: Path, dest: Path) -> None:
    """Copy what the scorer reads, and nothing else, from a complete run directory."""
    shutil.copy2(source / "run.json", dest / "run.json")
    for record in sorted((source / "cells").rglob("record.json")):
        rel = record.parent.relative_to(source)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        shutil.copy2(record, dest / rel / "record.json")
        if rel.name.isdigit() and rel.parent.name != "_setup" and _needs_streams(record):
            for stream in ("stdout", "stderr"):
                shutil.copy2(record.parent / stream, dest / rel / stream)
    for name in ("arms/*/state.json", "guards/*/verdict.json"):
        for file in sorted(source.glob(name)):
            rel = file.relative_to(source)
            (dest / rel.parent).mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, dest / rel)


def _streams_of(record: Path) -> tuple[object, ...]:
    data = json.loads(record.read_text())
    return data["outcome"], data["stdout"]["sha256"], data["stderr"]["sha256"]


def _needs_streams(record: Path) -> bool:
    """The cold rep's streams, and a warm rep's whose output differs from the cold one's:
    the scorer grades every rep, and reuses a grade for a rep whose streams are the same."""
    return record.parent.name == "0" or _streams_of(record) != _streams_of(
        record.parent.parent / "0" / "record.json")


def _refresh_from_run(source: Path, suite: Path) -> None:
    """Replace the golden run and suite by a newer real run (see the module docstring)."""
    shutil.rmtree(RUN, ignore_errors=True)
    shutil.rmtree(SUITE, ignore_errors=True)
    RUN.mkdir(parents=True)
    (SUITE / "tasks").mkdir(parents=True)
    for name in SUITE_FILES:
        shutil.copy2(suite / name, SUITE / name)
    if (suite / PREDICTIONS).is_file():  # sealed with the suite when it has them
        shutil.copy2(suite / PREDICTIONS, SUITE / PREDICTIONS)
    for task in sorted((suite / "tasks").glob("*.toml")):
        shutil.copy2(task, SUITE / "tasks" / task.name)
    scratch = RUN.parent / ".golden-full"
    shutil.rmtree(scratch, ignore_errors=True)
    # Not work/: the arms' file-system images are sparse, gigabytes once copied, and the
    # scorer reads the line index the run saved (pin-lines.json), not the corpus copies.
    shutil.copytree(source, scratch, symlinks=True,
                    ignore=lambda folder, _: ["work"] if Path(folder) == source else [])
    try:
        (scratch / "scores.json").unlink(missing_ok=True)
        score_run(scratch, SUITE)
        trim_run(scratch, RUN)
        shutil.copy2(scratch / PIN_LINES, RUN / PIN_LINES)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _diff(expected: bytes, found: bytes, name: str) -> str:
    lines = difflib.unified_diff(expected.decode().splitlines(), found.decode().splitlines(),
                                 f"committed {name}", f"rendered {name}", lineterm="", n=1)
    return "\n".join(list(lines)[:60])


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("SANDBENCH_GOLDEN_FROM"):
        _refresh_from_run(Path(os.environ["SANDBENCH_GOLDEN_FROM"]),
                          Path(os.environ.get("SANDBENCH_GOLDEN_SUITE", "suites/demo")))
    if not (RUN / "run.json").is_file():
        pytest.fail(f"{RUN} holds no run: see this test's docstring")
    run = tmp_path_factory.mktemp("golden") / "demo-run"
    shutil.copytree(RUN, run, ignore=shutil.ignore_patterns(*OUTPUTS))
    score_run(run, SUITE)
    report.write(run)
    if os.environ.get("SANDBENCH_UPDATE_GOLDEN") or os.environ.get("SANDBENCH_GOLDEN_FROM"):
        for name in OUTPUTS:
            shutil.copy2(run / name, RUN / name)
    return run


def test_the_golden_run_scores_to_the_committed_scores(rendered: Path) -> None:
    expected = (RUN / "scores.json").read_bytes()
    found = (rendered / "scores.json").read_bytes()
    if found != expected:
        grades = self_check(json.loads(expected), json.loads(found))
        pytest.fail("scores.json differs from the committed one\n"
                    + ("grades that differ:\n" + "\n".join(grades) + "\n" if grades else "")
                    + _diff(expected, found, "scores.json"))


def test_the_golden_run_renders_to_the_committed_document(rendered: Path) -> None:
    expected = (RUN / "results.md").read_bytes()
    found = (rendered / "results.md").read_bytes()
    assert found == expected, _diff(expected, found, "results.md")


def test_the_committed_document_passes_check(rendered: Path) -> None:
    assert report.differences(RUN) == (RUN / "results.md", [])


def test_the_golden_run_stays_small() -> None:
    total = sum(f.stat().st_size for f in RUN.rglob("*") if f.is_file())
    # A trimmed run: about 1.6 MB of records, the cold streams and the warm streams that differ.
    assert total < 2_000_000, total
    assert not (RUN / "work").exists() and not (RUN / "log.jsonl").exists()


def test_the_golden_scores_hold_no_host_path() -> None:
    text = (RUN / "scores.json").read_text() + (RUN / "results.md").read_text()
    assert str(GOLDEN.parents[1]) not in text
    assert re.findall(r"(?<![\w.:/-])/(?:home|root|work|tmp|Users)/", text) == []
