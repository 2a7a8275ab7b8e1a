"""Tool strings the host must write and show, on the real engine (the probe image, each attack a
short Python script; issue classes "bytes that are not text", "two names become one" and "text
that looks like other text"):

- a names arm writes, in /state and in its corpus copy, a 256 KiB file whose name is not UTF-8
  (`bad-` 0xFF `.txt`) beside an empty one whose name spells that byte's old escape
  (`bad-\\xff.txt`), and a tree of directories named 0xFE past the depth bound, so the
  listing's cut point is not UTF-8 either: the run completes, `state.json` is UTF-8 JSON with
  both names, the 256 KiB counted, both corpus additions listed, and the cut point spelled by
  the same rule;
- a JSON arm answers with paths and reasons holding lone surrogate escapes (valid JSON): the
  run scores and renders, every other arm's cells unchanged;
- a lookalike arm answers with paths that read as the truth's (a Cyrillic letter, a blank
  filler, a division slash, a combining overlay): the documents show each as an escape.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from orchestrator import report, suite
from orchestrator.report import html
from orchestrator.engine import Engine
from orchestrator.score import scorer
from orchestrator.settings import Settings
from orchestrator.untrusted import limits
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.integration.conftest import built, project_copy  # noqa: F401 (the fixture)
from tests.security.conftest import TASKS, probe_arm, write_suite
from tests.security.reading import arm_rows, arm_state

pytestmark = pytest.mark.integration
BIG = 256 << 10

NAMES_SCRIPT = """
import os
B, E = bytes([255]), bytes([254])
for base in (b'/state/', b'/corpus/'):
    with open(base + b'bad-' + B + b'.txt', 'wb') as f:
        f.write(b'x' * 262144)
    with open(base + b'bad-' + bytes([92]) + b'xff.txt', 'wb') as f:
        pass
os.makedirs(b'/state/' + (E + b'/') * 300, exist_ok=True)
print()
"""
JSON_SCRIPT = """
import json
S, H = chr(0xdcff), chr(0xd800)
for f in ('inventory/src/stock.rs', 'inventory/src/' + S + '.rs', 'inventory/src/x' + H + '.rs'):
    print(json.dumps(dict(file=f, range=dict(start=dict(line=0)), lines='x' + S + H, text='t')))
"""
# Each line's path reads as one of the truth's: Cyrillic o, a Hangul filler, a division slash,
# a combining long stroke overlay.
LOOKALIKES = (("inventory/src/st", 0x043E, "ck.rs"), ("inventory/src/lib.rs", 0x3164, ""),
              ("inventory/src", 0x2215, "policy.rs"), ("inventory/src/w", 0x0336, "arehouse.rs"))
LOOK_SCRIPT = """
import sys
for head, code, tail in ROWS:
    sys.stdout.write(head + chr(code) + tail + ':1:pub struct StockLevel' + chr(10))
""".replace("ROWS", repr(LOOKALIKES))


def _py(script: str) -> list[str]:
    assert "{" not in script and "}" not in script  # an arm's argv reads {name} as a value
    return ["python3", "-c", script, "{symbol}"]


@pytest.fixture(scope="module")
def project(engine: Engine, built: Settings,  # noqa: F811
            tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = project_copy(built, tmp_path_factory.mktemp("tool-strings"))
    source = "tests/security/test_tool_strings.py"
    arms = {"h-names": probe_arm(source, "names", _py(NAMES_SCRIPT)),
            "h-json": probe_arm(source, "json", _py(JSON_SCRIPT), parser="ast-grep"),
            "h-look": probe_arm(source, "lookalikes", _py(LOOK_SCRIPT))}
    for name, text in arms.items():
        (settings.project_root / "arms" / f"{name}.toml").write_text(text)
    for name, names in {"strings": ["rg", "h-names", "h-json", "h-look"],
                        "clean": ["rg"]}.items():
        write_suite(settings.project_root, name, names, TASKS[1:])
        suite.seal(suite.load_suite(settings.suites_dir, name), settings)
    return settings


@pytest.fixture(scope="module")
def strings_run(engine: Engine, project: Settings) -> Path:
    run_dir = runner.run(project, RunOptions("strings"), [pool.one(engine)])
    scorer.score_run(run_dir, project.suite_dir("strings"))
    _render(run_dir)
    return run_dir


def _render(run_dir: Path) -> None:
    done = report.write(run_dir)
    html.write(done.scores, run_dir / "results.html")


def test_a_name_and_the_name_spelling_its_escape_are_two_entries(strings_run: Path) -> None:
    assert json.loads((strings_run / "run.json").read_text())["status"] == "complete"
    state = arm_state(strings_run, "h-names")
    files = dict(map(tuple, state["state_files"]))
    assert files["bad-\\xff.txt"] == BIG and files["bad-\\\\xff.txt"] == 0
    assert state["state_bytes"] >= BIG
    added = {c["path"]: c["size_after"] for c in state["corpus_changes"]
             if c["status"] == "added"}
    assert added == {"bad-\\xff.txt": BIG, "bad-\\\\xff.txt": 0}
    # Its real bytes are still there, on the arm's own file system.
    (cut,) = state["state_cut"]
    assert cut["guard"] == "depth" and cut["at"] == "\\xfe/" * limits.WALK_MAX_DEPTH


def test_lone_surrogates_in_an_answer_score_and_render(strings_run: Path,
                                                       engine: Engine,
                                                       project: Settings) -> None:
    scores = (strings_run / "scores.json").read_bytes()
    scores.decode("utf-8")
    cells = [c for c in json.loads(scores)["cells"] if c["arm"] == "h-json"]
    assert cells and all(c["failure"] is None for c in cells), cells
    # Each byte's escape is shown as the path's own characters, never as a separator.
    outside = next(line for line in (strings_run / "results.md").read_text(
        encoding="utf-8").splitlines() if line.startswith("- h-json: outside the truth"))
    assert outside.endswith("inventory/src/\\\\xff.rs, inventory/src/x\\\\ud800.rs"), outside
    clean = runner.run(project, RunOptions("clean"), [pool.one(engine)])
    assert arm_rows(strings_run, "rg") == arm_rows(clean, "rg")


@pytest.mark.parametrize("document", ["results.md", "results.html"])
def test_a_lookalike_path_is_shown_as_an_escape(strings_run: Path, document: str) -> None:
    text = (strings_run / document).read_text(encoding="utf-8")
    for head, code, tail in LOOKALIKES:
        assert head + chr(code) + tail not in text
        assert chr(code) not in text
    # both list the paths outside the truth (the page among each task's notes), escaped
    assert all(f"u{code:04x}" in text for _, code, _ in LOOKALIKES)


def test_the_documents_are_byte_identical_on_a_rerender(strings_run: Path) -> None:
    before = {name: (strings_run / name).read_bytes() for name in ("results.md",
                                                                   "results.html")}
    _render(strings_run)
    assert {name: (strings_run / name).read_bytes() for name in before} == before
    assert os.path.getsize(strings_run / "scores.json") > 0
