"""A task that carries its own command for an arm runs it, on the real engine: the rg arm of a
narrowed demo suite runs one task's argv and another task's 4-call sh chain (the shape of a
published impact chain: each call's output, joined by `----` lines, the answer the last
call's file list), and the record, the call count, the answer and the report say so; every
other cell runs its arm's template as before."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from orchestrator import arms, suite
from orchestrator.engine import Engine
from orchestrator.report.html import render_html
from orchestrator.report.markdown import render_markdown
from orchestrator.score import scorer
from orchestrator.settings import Settings
from orchestrator.run.transcripts import read_record
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.integration.conftest import project_copy

pytestmark = pytest.mark.integration

TASKS = ("references-money-csharp", "impact-order", "locate-bulk-threshold")
ARGV_COMMAND = """
[commands.rg]
argv = ["rg", "-n", "-w", "-g", "*.{ext}", "{symbol}", "{corpus}"]
"""
# The chain of /tmp/repro/chain.sh with its four rg calls made through `call`: the declared
# types of the seed, the files naming them, the types those files declare, the files naming
# those. Calls 1 and 3 print `N:text` (one file) or `path:N:text`; 2 and 4 file lists.
CHAIN_COMMAND = r"""
[commands.rg]
output = "file-list"
sections = "----"
answer_section = "last"
script = '''
C={corpus}; SEED={seed}
DECL='^\s*(?:(?:public|internal|private|protected|static|sealed|abstract|partial|readonly|unsafe|new|file)\s+)*(?:class|interface|struct|record|enum)\s+(\w+)'
types() { sed -E 's/^([^:]*:)?[0-9]+://' | rg -o -r '$1' -e "$DECL" | sort -u; }
o1=$(call rg -n -e "$DECL" "$C/$SEED")
t1=$(printf '%s\n' "$o1" | types)
set --; for t in $t1; do set -- "$@" -e "$t"; done
o2=$(call rg -l -w -g '*.cs' "$@" "$C")
files=$(printf '%s\n' "$o2" | grep -vxF "$C/$SEED")
set --; for f in $files; do set -- "$@" "$f"; done
o3=$(call rg -n -e "$DECL" "$@")
t3=$(printf '%s\n' "$o3" | types)
set --; for t in $t3; do set -- "$@" -e "$t"; done
o4=$(call rg -l -w -g '*.cs' "$@" "$C")
printf '%s\n----\n%s\n----\n%s\n----\n%s\n' "$o1" "$o2" "$o3" "$o4"
'''
"""


def _narrow(settings: Settings) -> None:
    """The copied demo suite with rg and ast-grep, one warm rep, three tasks, two of them
    carrying a command for rg; sealed again (the copy's seal, not the checkout's), without
    the demo's predictions (they name arms and kinds the copy no longer has)."""
    folder = settings.suite_dir("demo")
    (folder / "predictions.toml").unlink(missing_ok=True)
    text = (folder / "suite.toml").read_text()
    text = re.sub(r"(?m)^arms = \[.*\]$", 'arms = ["rg", "ast-grep"]', text)
    text = re.sub(r'(?m)^tool_under_test = ".*"\n', "", text)
    (folder / "suite.toml").write_text(re.sub(r"(?m)^reps = \d+$", "reps = 1", text))
    for path in (folder / "tasks").glob("*.toml"):
        if path.stem not in TASKS:
            path.unlink()
    for name, command in (("references-money-csharp", ARGV_COMMAND),
                          ("impact-order", CHAIN_COMMAND)):
        path = folder / "tasks" / f"{name}.toml"
        path.write_text(path.read_text() + command)
    suite.seal(suite.load_suite(settings.suites_dir, "demo"), settings)


def test_a_task_given_argv_and_chain_run_and_are_disclosed(
        engine: Engine, built: Settings, tmp_path: Path) -> None:
    settings = project_copy(built, tmp_path)
    _narrow(settings)
    the_suite = suite.load_suite(settings.suites_dir, "demo")
    tasks = {t.id: t for t in the_suite.tasks}
    run_dir = runner.run(settings, RunOptions("demo"), [pool.one(engine)])
    scores = scorer.score_run(run_dir, settings.suite_dir("demo"), update=True)
    cells = {(c["arm"], c["task"]): c for c in scores["cells"]}

    # The argv command: recorded and graded as what ran, one call, read by rg's parser.
    refs = cells[("rg", "references-money-csharp")]
    assert refs["argv"] == ["rg", "-n", "-w", "-g", "*.cs", "Money", "/corpus"]
    assert refs["command"] == "task" and refs["failure"] is None and refs["calls"] == 1
    assert "dotnet/src/Ordering/Money.cs" in refs["grade"]["answer"]

    # The chain: its record's argv is the prelude and the script; four `call`s counted (its
    # sed, sort, grep and the `types` rg are not calls); the answer is the last section.
    chain = cells[("rg", "impact-order")]
    cell_dir = run_dir / "cells" / "rg" / "impact-order" / "0"
    record = read_record(cell_dir / "record.json")
    assert record.argv == chain["argv"] == tasks["impact-order"].command_argv("rg")
    assert chain["argv"][:2] == ["/bin/sh", "-c"]
    assert chain["argv"][2].startswith(suite.SCRIPT_PRELUDE)
    assert "SEED=dotnet/src/Ordering/Order.cs\n" in chain["argv"][2]
    stderr = (cell_dir / "stderr").read_bytes()
    assert stderr.count(b"sandbench-call: rg ") == 4, stderr[-2000:]
    assert chain["command"] == "task" and chain["failure"] is None and chain["calls"] == 4
    stdout = (cell_dir / "stdout").read_bytes()
    sections = stdout.decode().split("\n----\n")
    assert len(sections) == 4 and sections[0] and re.match(r"\d+:", sections[0])
    last = [p.removeprefix("/corpus/") for p in sections[3].splitlines() if p]
    assert last and chain["grade"]["answer"] == list(dict.fromkeys(last))
    assert chain["cost"]["stdout_bytes"] == len(stdout)  # the payload is every section

    # Every other cell ran its arm's template, as it would without the commands.
    specs = {s.name: s for s in arms.load_arms(settings.arms_dir, ["rg", "ast-grep"])}
    for (arm, task_id), cell in cells.items():
        task = tasks[task_id]
        if arm == "rg" and task_id != "locate-bulk-threshold":
            continue
        if cell["verdict"] == "not_attempted":
            assert cell["command"] is None and cell["argv"] is None
            continue
        assert cell["command"] == "arm", (arm, task_id)
        assert cell["argv"] == specs[arm].render(task.kind, task.values), (arm, task_id)
        assert cell["failure"] is None, (arm, task_id, cell["parse_error"])

    # The report names the cells that ran a task-given command, and only those.
    markdown, html = render_markdown(scores), render_html(scores)
    for text, start, end in ((markdown, "\n## Task-given commands\n", "\n## "),
                             (html, '<section id="task-given-commands">', "</section>")):
        section = text[text.index(start):]
        section = section[:section.index(end, len(start))]
        assert "rg: " in section and "references-money-csharp" in section
        assert "impact-order" in section and "locate-bulk-threshold" not in section
        assert "ast-grep" not in section
    assert json.loads((run_dir / "scores.json").read_text())["cells"] == scores["cells"]

    # A resume runs the chain's unrecorded cell again with the same command.
    (cell_dir / "record.json").unlink()
    assert runner.run(settings, RunOptions("demo", resume=run_dir), [pool.one(engine)]) == run_dir
    assert read_record(cell_dir / "record.json").argv == record.argv
    again = scorer.score_run(run_dir, settings.suite_dir("demo"), update=True)
    resumed = next(c for c in again["cells"] if (c["arm"], c["task"]) == ("rg", "impact-order"))
    # (rg lists files in the order its threads finish: the same files, perhaps reordered)
    assert (resumed["command"], resumed["calls"], sorted(resumed["grade"]["answer"])) == (
        "task", 4, sorted(chain["grade"]["answer"]))
