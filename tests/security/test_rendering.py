"""A hostile arm whose answers, /state file names and corpus-copy names forge Markdown
structure (a `# Scorecard` heading, table rows), bring raw HTML, `javascript:` links and
images, and carry terminal control sequences (window title, clipboard write, screen clear, a
carriage return before a fake success line, a bidi override), run on the real engine beside
rg: the run, the scorer and `sandbench report` complete; results.md, results.html and the
terminal output hold none of it raw, and rg's lines are those of a rendering without it."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator import suite
from orchestrator.cli import app
from orchestrator.engine import Engine
from orchestrator.report.markdown import render_markdown
from orchestrator.score import scorer
from orchestrator.settings import Settings
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.integration.conftest import built, project_copy  # noqa: F401 (the fixture)
from tests.security.conftest import TASKS, probe_arm, write_suite

pytestmark = pytest.mark.integration
ARM = "h-text"
# No lone surrogate and no NUL (neither can be a file name's or JSON's text); `/` is a
# separator in a name, so the names use the payload without it.
PAYLOAD = ("evil\n# Scorecard\n| a | b |\n|---|---|\n<img src=x onerror=alert(1)>"
           "[x](javascript:alert(1))![i](http:xi.png)<https:evil.example>"
           "\x1b]0;pwned-title\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x1b[H"
           "\r\u2714 all checks passed\u202etxt.exe[bold red]RED[/][link=http:x]l[/link]\x7f")
# The arm's one command, for every references task (no brace in it: an arm's argv reads
# {name} as a placeholder): names in /state and in its corpus copy,
# then a code-review-graph query answer naming the payload, a real file, and the payload
# again at a line that does not exist (a reach failure).
SCRIPT = f"""
import json, os, sys
P = {PAYLOAD!r}
N = P.replace('/', '_')
for i, name in enumerate([N, 'plain-' + N[-40:]]):
    with open(os.path.join('/state', str(i) + '-' + name), 'w') as f:
        f.write('x')
with open(os.path.join(b'/state', b'bad-\\xff\\x1b]0;t\\x07'), 'w') as f:
    f.write('x')
try:
    with open(os.path.join('/corpus', 'c-' + N), 'w') as f:
        f.write('x')
except OSError as exc:
    print('corpus write:', exc, file=sys.stderr)
edges = [dict(file_path='/corpus/a-' + P, line=1, kind='CALLS'),
         dict(file_path='/corpus/inventory/src/stock.rs', line=1, kind='CALLS'),
         dict(file_path='/corpus/b-' + P, line=99, kind=P)]
print(json.dumps(dict(status='ok', pattern=sys.argv[1], edges=edges)))
print(P, file=sys.stderr)
"""
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _arm_toml() -> str:
    return probe_arm("tests/security/test_rendering.py", "names that forge a document",
                     ["python3", "-c", SCRIPT, "{symbol}"], parser="code-review-graph")


@pytest.fixture(scope="module")
def rendered(engine: Engine, built: Settings,  # noqa: F811
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    settings = project_copy(built, tmp_path_factory.mktemp("rendering"))
    (settings.project_root / "arms" / f"{ARM}.toml").write_text(_arm_toml())
    write_suite(settings.project_root, "render", ["rg", ARM], TASKS)
    suite.seal(suite.load_suite(settings.suites_dir, "render"), settings)
    run_dir = runner.run(settings, RunOptions("render"), [pool.one(engine)])
    scorer.score_run(run_dir, settings.suite_dir("render"))
    result = CliRunner().invoke(app, ["report", str(run_dir)])
    yield run_dir, result


def _defused(scores: dict[str, Any]) -> dict[str, Any]:
    """The same scores with every string that holds the payload replaced by a plain name
    (the arm spec's argv aside): what an honest arm's answer would have rendered."""
    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return "plain-name" if ("evil" in value or "\x1b" in value) else value
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: v if k == "argv" else walk(v) for k, v in value.items()}
        return value
    return walk(copy.deepcopy(scores))


def _outside_fences(text: str) -> list[str]:
    lines, inside = [], None
    for line in text.split("\n"):
        fence = re.match(r"^(`{3,})", line)
        if inside is None and fence:
            inside = fence.group(1)
        elif inside is not None and line == inside:
            inside = None
        elif inside is None:
            lines.append(line)
    return lines


def _structure(text: str) -> tuple[list[str], int]:
    lines = text.split("\n")
    return [line for line in lines if re.match(r"^#{1,6} ", line)], \
        sum(1 for line in lines if line.startswith("|"))


def test_the_payload_reached_the_scores(rendered: tuple[Path, Any]) -> None:
    run_dir, _ = rendered
    scores = json.loads((run_dir / "scores.json").read_text())
    cells = [c for c in scores["cells"] if c["arm"] == ARM]
    assert cells and all(any("evil\n# Scorecard" in p for p in c["grade"]["answer"])
                         for c in cells)
    names = [p for p, _ in scores["state"][ARM]["state_files"]]
    assert any("\x1b]0;pwned-title\x07" in n for n in names)


def test_results_md_holds_no_forged_structure_html_link_or_control(
        rendered: tuple[Path, Any]) -> None:
    run_dir, result = rendered
    assert result.exit_code == 0, result.output
    text = (run_dir / "results.md").read_text(encoding="utf-8")
    scores = json.loads((run_dir / "scores.json").read_text())
    honest = render_markdown(_defused(scores))
    assert _structure(text) == _structure(honest)
    assert not CONTROL.search(text)
    # Outside the fenced blocks (the commands block quotes this test's arm spec, the script
    # with its payload, as code: inert), no HTML, no link.
    prose = "\n".join(_outside_fences(text))
    assert not re.search(r"<(img|https?:)", prose) and "javascript:" not in prose
    assert "](" not in prose
    assert "\\x1b\\]0;pwned-title\\\\x07" in text or "\\\\x1b\\]0;pwned-title\\\\x07" in text
    # rg's lines (every line that names neither the hostile arm nor one of its names) are
    # exactly those of the honest rendering.
    def others(document: str) -> list[str]:
        return [line for line in document.split("\n")
                if not any(mark in line for mark in (ARM, "evil", "plain-name", "bad-"))]
    assert others(text) == others(honest) and len(others(text)) > 250
    assert {c["task"]: c["verdict"] for c in scores["cells"] if c["arm"] == "rg"} == \
        dict.fromkeys(TASKS, "correct")


def test_results_html_and_the_terminal_hold_nothing_raw(rendered: tuple[Path, Any]) -> None:
    run_dir, result = rendered
    page = (run_dir / "results.html").read_text(encoding="utf-8")
    body = page.split("<script>")[0]
    assert "<img" not in page and not CONTROL.search(body)
    assert "&lt;img src=x onerror=alert(1)&gt;" in body
    assert not CONTROL.search(result.output)
    check = CliRunner().invoke(app, ["report", str(run_dir), "--check"])
    assert check.exit_code == 0 and not CONTROL.search(check.output)
