"""`sandbox try` without an engine: its commands are the run's (every exec arm's argv in the
golden demo run), what it reads of an output is what the golden run's scorer read of the
same bytes, hostile output stays on its own lines, and bad input is one error."""

from __future__ import annotations

import dataclasses
import json
import shutil
import unicodedata
from pathlib import Path

import pytest

from orchestrator import arms, suite
from orchestrator.sandbox import tool_try
from orchestrator.errors import InputError
from orchestrator.settings import Settings, load_settings
from orchestrator.suite import every_scorer_source
from orchestrator.run.transcripts import StreamInfo, read_record

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
RUN = GOLDEN / "demo-run"
GOLDEN_SUITE = suite.load_suite(GOLDEN / "suites", "demo")
CHECKOUT = load_settings()
SCORES = json.loads((RUN / "scores.json").read_text())
# Every exec arm's cell the golden run graded on its cold rep (an MCP arm's REP record is
# derived from its session: the integration test runs one).
EXEC_CELLS = sorted((c["arm"], c["task"]) for c in SCORES["cells"]
                    if c["graded_rep"] == 0 and not arms.load_arms(
                        CHECKOUT.arms_dir, [c["arm"]])[0].mcp)
GRADE_KEYS = ("verdict", "recall", "precision", "files_named", "hits", "missed", "outside",
              "answer", "notes")


def _spec(name: str) -> arms.ArmSpec:
    (spec,) = arms.load_arms(CHECKOUT.arms_dir, [name])
    return spec


def _task(task_id: str) -> suite.Task:
    return next(t for t in GOLDEN_SUITE.tasks if t.id == task_id)


def _golden_cell(arm: str, task: str) -> dict:
    return next(c for c in SCORES["cells"] if (c["arm"], c["task"]) == (arm, task))


def _tried(arm: str, task_id: str, stdout: bytes | None = None) -> dict:
    """The entry `try` makes of the golden run's cold rep of (arm, task), or of `stdout`
    in its place."""
    cell = RUN / "cells" / arm / task_id / "0"
    record = read_record(cell / "record.json")
    if stdout is not None:
        record = dataclasses.replace(record, stdout=StreamInfo("stdout", len(stdout),
                                                               len(stdout), False, ""))
    spec = _spec(arm)
    return tool_try.tried(GOLDEN_SUITE, spec, tool_try.render(spec, _task(task_id)), record,
                          (cell / "stdout").read_bytes() if stdout is None else stdout,
                          (cell / "stderr").read_bytes())


def test_golden_run_has_exec_cells_of_every_kind() -> None:
    assert {_task(t).kind for _, t in EXEC_CELLS} == {"locate", "references", "impact",
                                                      "e2e-retrieval"}
    assert {a for a, _ in EXEC_CELLS} >= {"rg", "ast-grep", "ctags", "code-review-graph"}


@pytest.mark.parametrize(("arm", "task_id"), EXEC_CELLS)
def test_rendered_command_is_the_one_the_run_ran(arm: str, task_id: str) -> None:
    rendered = tool_try.render(_spec(arm), _task(task_id))
    record = read_record(RUN / "cells" / arm / task_id / "0" / "record.json")
    assert list(rendered.argv) == record.argv
    assert rendered.command == _golden_cell(arm, task_id)["command"]


@pytest.mark.parametrize(("arm", "task_id"), EXEC_CELLS)
def test_what_the_parser_reads_is_what_the_scorer_read(arm: str, task_id: str) -> None:
    entry = _tried(arm, task_id)
    golden = _golden_cell(arm, task_id)
    assert entry["failure"] == golden["failure"]
    assert entry["parse_error"] == golden["parse_error"]
    assert {k: entry["truth"][k] for k in GRADE_KEYS} == {k: golden["grade"][k]
                                                          for k in GRADE_KEYS}
    if golden["failure"] is None:
        assert entry["parsed"]["calls"] == golden["calls"]
        assert entry["parsed"]["files"] == golden["grade"]["files_named"]


def test_a_tasks_own_command_is_rendered_in_place_of_the_arms_template() -> None:
    published = suite.load_suite(CHECKOUT.suites_dir, "csharp-published-rg")
    task = next(t for t in published.tasks if t.id == "l1-message-urn-prefix")
    rendered = tool_try.render(_spec("rg"), task)
    assert (rendered.command, rendered.argv) == (
        "task", ("rg", "-n", "-g", "*.cs", "urn:message:", "/corpus"))
    assert tool_try.text_lines(rendered.to_json())[:2] == [
        "l1-message-urn-prefix  (locate, the task's own command)",
        "  $ rg -n -g '*.cs' urn:message: /corpus"]


def test_not_attempted_kinds_show_the_arms_quote_and_run_nothing() -> None:
    spec = _spec("code-index-mcp")
    rendered = tool_try.render(spec, _task("impact-sku"))
    assert rendered.argv == () and rendered.skipped == {
        "not_attempted": spec.not_attempted["impact"].reason,
        "source": spec.not_attempted["impact"].source}
    lines = tool_try.text_lines(rendered.to_json())
    assert lines[0] == "impact-sku  (impact, not attempted)"


def test_an_mcp_arm_renders_its_call() -> None:
    spec = _spec("code-index-mcp")
    task = _task("references-cart-line")
    rendered = tool_try.render(spec, task)
    assert rendered.call == {"tool": "search_code_advanced", "arguments": {
        **spec.calls["references"].arguments, "pattern": "\\bCartLine\\b",
        "file_pattern": "*.ts"}}
    assert rendered.argv == () and rendered.command == "arm"
    lines = tool_try.text_lines(rendered.to_json())
    assert lines[1] == ('  tools/call search_code_advanced {"case_sensitive": true, "file_pattern":'
                        ' "*.ts", "max_results": 1000, "pattern": "\\\\bCartLine\\\\b", '
                        '"regex": true}')


HOSTILE = (b"\x1b[2J\x1b]0;owned\x07./src/a.rs:1:x\r\n\xff\xfe\n"
           b"./src/\xe2\x80\xaeb.rs:2:" + b"A" * 50_000 + b"\n\x9b31m\n" * 40)


def test_hostile_output_is_bounded_escaped_and_stays_on_its_own_lines() -> None:
    good = _tried("rg", "references-price-quote")
    hostile = _tried("rg", "references-cart-line", HOSTILE)
    text = "\n".join(tool_try.text_lines(hostile))
    assert not any(unicodedata.category(ch) in ("Cc", "Cf") for ch in text.replace("\n", ""))
    assert "\\x1b[2J" in text and "\\u202e" in text and "\\xff\\xfe" in text
    assert len(hostile["excerpt"]) == tool_try.EXCERPT_LINES
    assert max(len(line) for line in text.split("\n")) < 400
    alone = tool_try.Tried(tool_try.Planned(GOLDEN_SUITE, _spec("rg"), ()), [good])
    together = dataclasses.replace(alone, entries=[hostile, good])
    assert "\n".join(tool_try.text_report(together)).endswith(
        "\n".join(tool_try.text_report(alone)[1:]))


def test_a_long_answer_shows_its_first_rows_and_how_many_more() -> None:
    entry = _tried("rg", "locate-bulk-threshold")
    lines = tool_try.text_lines(entry)
    rows = entry["parsed"]["rows"]
    assert rows > tool_try.SHOWN_ROWS and len(entry["parsed"]["first_rows"]) == \
        tool_try.SHOWN_ROWS
    at = lines.index(f"  parser: {rows} rows, 5 files, 2 calls")
    assert lines[at + tool_try.SHOWN_ROWS + 1] == \
        f"    ... ({rows - tool_try.SHOWN_ROWS} more rows)"


def test_a_parse_error_is_the_tasks_own() -> None:
    entry = _tried("rg", "references-cart-line", b"/etc/passwd:1:root\n")
    assert entry["failure"] == "parse-error" and entry["parsed"] is None
    assert entry["truth"]["verdict"] == "wrong"
    assert tool_try.text_lines(entry)[-2:] == [
        "  parser: rg: absolute path outside /corpus: '/etc/passwd'",
        "  the scorer grades this output wrong (parse-error)"]


def test_an_exec_that_did_not_end_ok_is_not_parsed_as_the_scorer_does() -> None:
    cell = RUN / "cells" / "rg" / "references-price-quote" / "0"
    record = dataclasses.replace(read_record(cell / "record.json"), outcome="timeout")
    spec = _spec("rg")
    task = _task("references-price-quote")
    entry = tool_try.tried(GOLDEN_SUITE, spec, tool_try.render(spec, task), record,
                           (cell / "stdout").read_bytes(), b"rg: \x1b[31mslow\n")
    assert (entry["failure"], entry["parsed"], entry["truth"]["verdict"]) == (
        "timeout", None, "wrong")
    assert tool_try.text_lines(entry)[-3:] == [
        "  stderr| rg: \\x1b[31mslow",
        "  parser: not read (the exec's outcome is timeout)",
        "  the scorer grades this output wrong (timeout)"]


# -- the suite, the arm and the tasks named ------------------------------------------------

@pytest.fixture
def project(tmp_path: Path) -> Settings:
    """A sealed copy of the demo suite with the project's arms and scorer sources."""
    root = CHECKOUT.project_root
    for part in ("arms", "suites/demo", "corpus.lock", *every_scorer_source(root)):
        source, dest = root / part, tmp_path / "project" / part
        if source.is_dir():
            shutil.copytree(source, dest)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest)
    settings = Settings(project_root=tmp_path / "project", bench_root=tmp_path / "bench")
    suite.seal(suite.load_suite(settings.suites_dir, "demo"), settings)
    return settings


def test_tasks_come_in_id_order_whatever_order_they_are_named(project: Settings) -> None:
    planned = tool_try.plan(project, "demo", "rg", ["references-price-quote", "impact-sku",
                                                    "references-price-quote"])
    assert [r.task.id for r in planned.tasks] == ["impact-sku", "references-price-quote"]
    assert [r.task.id for r in tool_try.plan(project, "demo", "rg", []).tasks] == sorted(
        t.id for t in GOLDEN_SUITE.tasks)


def test_an_arm_outside_the_suite_is_tried_on_its_tasks(project: Settings) -> None:
    planned = tool_try.plan(project, "demo", "aider-repomap", ["locate-bulk-threshold"])
    assert planned.tasks[0].argv and planned.tasks[0].command == "arm"


@pytest.mark.parametrize(("arm", "tasks", "message", "fix"), [
    ("nope", [], "unknown arm 'nope'", "known arms: "),
    ("rg", ["impact-sku", "nope"], "suite 'demo' has no task 'nope'", "its tasks: "),
    ("oracle-rust-analyzer", [], "kind: expected an arm that answers tasks", None),
])
def test_bad_input_is_one_error(project: Settings, arm: str, tasks: list[str], message: str,
                                fix: str | None) -> None:
    with pytest.raises(InputError) as caught:
        tool_try.plan(project, "demo", arm, tasks)
    assert message in caught.value.what
    assert fix is None or fix in (caught.value.fix or "")


def test_a_suite_changed_since_its_seal_is_refused(project: Settings) -> None:
    task = project.suites_dir / "demo" / "tasks" / "impact-sku.toml"
    task.write_text(task.read_text() + "\n# changed\n")
    with pytest.raises(InputError) as caught:
        tool_try.plan(project, "demo", "rg", [])
    assert caught.value.what == ("suite 'demo' changed since its seal: "
                                 "suites/demo/tasks/impact-sku.toml")
    assert caught.value.fix == "review the change, then: sandbench suite seal demo"
    (project.suites_dir / "demo" / "manifest.json").unlink()
    with pytest.raises(InputError, match="suite 'demo' is not sealed"):
        tool_try.plan(project, "demo", "rg", [])
