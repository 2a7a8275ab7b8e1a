"""Every document and terminal output rendered from a scores.json (and a compiler truth) whose
tool-derived strings carry Markdown structure, raw HTML, links and terminal control
sequences (`hostile_text.PAYLOAD`): the structure is the honest rendering's, nothing is raw."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hostile_text import (HOSTILE_ARM, PAYLOAD, control_chars, headings, honest_scores,
                          hostile_scores, measure, table_rows)
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.errors import InputError, SandbenchError
from orchestrator.oracle import compare
from orchestrator.report.html import render_html
from orchestrator.report.markdown import render_markdown

REPO = Path(__file__).resolve().parents[2]
CLEAN = {"raw_html_tags": 0, "javascript_links": 0, "markdown_links": 0, "control_chars": 0}


def _run_dir(root: Path, scores: dict[str, Any]) -> Path:
    run = root / "run"
    run.mkdir(parents=True)
    (run / "scores.json").write_text(json.dumps(scores, sort_keys=True), encoding="utf-8")
    return run


def _other_arms_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if HOSTILE_ARM not in line]


def test_results_md_holds_no_injected_structure() -> None:
    honest, hostile = render_markdown(honest_scores()), render_markdown(hostile_scores())
    figures = measure(hostile)
    assert {k: figures[k] for k in CLEAN} == CLEAN
    assert headings(hostile) == headings(honest)
    assert table_rows(hostile) == table_rows(honest)
    assert re.findall(r"<[a-z]", hostile) == re.findall(r"<[a-z]", honest)
    # Every other arm's lines are as they were; the payload is shown, escaped.
    assert [line for line in _other_arms_lines(hostile) if "evil" not in line] == \
        list(_other_arms_lines(honest))
    assert ("outside the truth: outside-evil\\\\n# Scorecard\\\\n\\| a \\| b \\|\\\\n"
            "\\|---\\|---\\|\\\\n&lt;img src=x onerror=alert(1)&gt;\\[x\\]\\(javascript\\:"
            "alert(1))") in hostile
    hostile.encode("utf-8")
    assert render_markdown(hostile_scores()) == hostile  # byte-identical every time


def test_results_html_escapes_everything() -> None:
    page = render_html(hostile_scores())
    body, honest_body = page.split("<script>")[0], render_html(honest_scores()).split("<script>")[0]
    tags = re.findall(r"<[a-zA-Z/!][^>]*>", body)
    honest_tags = re.findall(r"<[a-zA-Z/!][^>]*>", honest_body)
    # The hostile arm's answers name files outside the truth, so its tasks carry notes (list
    # items) the honest ones do not: every other tag is the honest page's, in its order.
    notes = {"<ul>", "</ul>", "<li>", "</li>"}
    assert [t for t in tags if t not in notes] == [t for t in honest_tags if t not in notes]
    assert set(tags) <= set(honest_tags)
    assert not control_chars(body)  # (plotly.js itself, inlined, holds tabs)
    figures = page.split("</script>\n<script>\n")[1]
    assert "<" not in figures.split("</script>")[0] and not control_chars(figures)
    assert "&lt;img src=x onerror=alert(1)&gt;" in body
    page.encode("utf-8")


def test_truth_comparison_md_holds_no_injected_structure(tmp_path: Path) -> None:
    def document(root: Path, scores: dict[str, Any], extra_path: str, version: str) -> str:
        suites = root / "project" / "suites"
        shutil.copytree(REPO / "suites" / "demo", suites / "demo")
        toml = suites / "demo" / "suite.toml"
        toml.write_text(toml.read_text() + '\n[oracle]\narm = "oracle-scip-typescript"\n'
                        'project = "web"\n')
        (suites / "demo" / "truth").mkdir()
        (suites / "demo" / "truth" / "oracle-scip-typescript.json").write_text(json.dumps({
            "oracle": {"arm": "oracle-scip-typescript", "tool_version": version,
                       "image_id": "sha256:" + "0" * 64, "argv": ["scip-oracle", "web"]},
            "resolution": {"documents": 13, "occurrences": 747, "defined_in_corpus": 462,
                           "defined_outside": 140, "local": 145},
            "tasks": {"references-cart-line": {"kind": "references", "core": [
                "web/src/cart/cart.ts", "web/src/cart/cartLine.ts", extra_path]}}}))
        path, _ = compare.compare(_run_dir(root, scores), suites)
        return path.read_text(encoding="utf-8")

    honest = document(tmp_path / "honest", honest_scores(), "web/test/cart.test.ts", "scip 0.4")
    hostile = document(tmp_path / "hostile", hostile_scores(), "core-" + PAYLOAD,
                       "version-" + PAYLOAD)
    figures = measure(hostile)
    assert {k: figures[k] for k in CLEAN} == CLEAN
    assert headings(hostile) == headings(honest) and table_rows(hostile) == table_rows(honest)
    assert "<" not in hostile


def test_the_report_commands_terminal_output_is_clean(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, hostile_scores())
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert not control_chars(result.output)
    honest = CliRunner().invoke(app, ["report", str(_run_dir(tmp_path / "h", honest_scores()))])
    assert len(result.output.splitlines()) == len(honest.output.splitlines())
    # A committed document that holds the payload raw: the diff --check prints is escaped.
    md = run / "results.md"
    md.write_text(md.read_text() + PAYLOAD.replace("\udcff", "") + "\n", encoding="utf-8")
    check = CliRunner().invoke(app, ["report", str(run), "--check"])
    assert check.exit_code == 1
    assert "\\x1b]0;pwned-title\\x07" in check.output and not control_chars(check.output)


def test_an_error_message_is_escaped_and_keeps_its_own_lines(tmp_path: Path) -> None:
    err = SandbenchError(f"cannot read {PAYLOAD}", why=f"stderr: {PAYLOAD}\nsecond line",
                         fix=PAYLOAD, found=PAYLOAD)
    text = err.render()
    assert not control_chars(text)
    lines = text.split("\n")
    assert lines[0].startswith("error: cannot read evil\\n# Scorecard")
    assert [line[:7] for line in lines if not line.startswith(" " * 7)] == \
        ["error: ", "  why: ", "  fix: "]  # a quoted line break is indented under its label
    assert "       second line" in lines
    # Through the CLI: a scores.json with a hostile key is named in one escaped message.
    scores = honest_scores()
    scores[PAYLOAD.replace("\udcff", "")] = 1
    result = CliRunner().invoke(app, ["report", str(_run_dir(tmp_path, scores))])
    assert result.exit_code == InputError.exit_code
    assert "not in the schema" in result.output and not control_chars(result.output)
    assert result.output.count("\n") == 2  # error and fix: one line each


@pytest.mark.parametrize("markup", ["[bold red]RED[/]", "[link=http://x]l[/link]"])
def test_rich_markup_in_a_table_cell_is_shown_as_written(markup: str) -> None:
    from orchestrator.cli._common import console, table
    out = console()
    with out.capture() as captured:
        out.print(table([{"found": markup + "\x1b[2J"}], ["found"]))
    assert markup + "\\x1b[2J" in captured.get() and not control_chars(captured.get())


class _Terminal:
    """A stream that says it is a terminal, so the console renderer is chosen."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_the_console_log_escapes_what_a_tool_wrote() -> None:
    from orchestrator import log
    stream = _Terminal()
    log.configure(stream=stream)
    try:
        log.get("test").warning("oracle failed", stderr=PAYLOAD, path=PAYLOAD)
        try:
            raise ValueError(PAYLOAD)
        except ValueError:
            log.get("test").exception("crashed")
    finally:
        log.configure()
    for raw in ("\x1b]0;", "\x1b]52;", "\x1b[2J", "\r", "\x07", "\u202e", "\x9b", "\n# Score"):
        assert raw not in stream.text, repr(raw)
    assert stream.text.count("pwned-title") == 3  # shown (the renderer quotes a value)
