"""`sandbench truth compare RUN_DIR`: every arm's stored answer graded against the suite's
compiler truth as well as its text truth, and, per task, the files only one truth holds.

It reads only the run's scores.json (the answers the scorer kept, graded against the task
files' text truth) and the sealed truth file; the oracle is not run again. The grades against
the compiler truth use the scorer's own grading functions and the suite's bands, so the two
columns differ only by the truth."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import suite
from orchestrator.errors import InputError
from orchestrator.fsutil import atomic_write_text, read_json
from orchestrator.score import correctness
from orchestrator.score.numbers import r6
from orchestrator.untrusted.text import markdown_cell, markdown_code_span, markdown_inline

DOCUMENT = "truth-comparison.md"


# Not frozen: correctness.RowLike declares plain (settable) attributes.
@dataclass
class _Row:
    path: str
    line: int | None = None
    reason: str | None = None


def _compiler_task(task: suite.Task, entry: dict[str, Any]) -> suite.Task:
    if task.kind == "references":
        return dataclasses.replace(task, truth={"core": entry["core"], "admissible": []})
    return dataclasses.replace(task, truth={"graded": entry["graded"]})


def compare(run_dir: Path, suites_dir: Path) -> tuple[Path, dict[str, Any]]:
    """Write RUN_DIR/truth-comparison.md; returns its path and the figures."""
    scores_path = run_dir / "scores.json"
    if not scores_path.is_file():
        raise InputError(f"{run_dir}: no scores.json", fix=f"sandbench score {run_dir}",
                         file=str(scores_path))
    scores = read_json(scores_path)
    the_suite = suite.load_suite(suites_dir, scores["suite"]["name"])
    truth_path = the_suite.truth_file()
    if truth_path is None or not truth_path.is_file():
        raise InputError(f"suite {the_suite.name!r} has no compiler truth",
                         fix=f"sandbench truth build {the_suite.name}",
                         file=str(truth_path or the_suite.path / "suite.toml"))
    truth = read_json(truth_path)
    tasks = {t.id: t for t in the_suite.tasks}
    rows: list[dict[str, Any]] = []
    for cell in scores["cells"]:
        entry = truth["tasks"].get(cell.get("task", ""))
        grade = cell.get("grade")
        if entry is None or not isinstance(grade, dict):
            continue
        task = tasks[cell["task"]]
        answer = [_Row(p) for p in grade["answer"]]
        if task.kind == "impact":
            answer.insert(0, _Row(task.input["seed"]))
        regraded = correctness.grade(answer, _compiler_task(task, entry), the_suite)
        rows.append({"arm": cell["arm"], "task": task.id, "text": grade["verdict"],
                     "text_recall": grade["recall"], "compiler": regraded.verdict,
                     "compiler_recall": r6(regraded.recall),
                     "compiler_precision": r6(regraded.precision)})
    disagreements = {}
    for task_id, entry in sorted(truth["tasks"].items()):
        task = tasks[task_id]
        text = set(task.truth.get("core") or task.truth.get("graded", []))
        compiled = set(entry.get("core") or entry.get("graded", []))
        disagreements[task_id] = {"only_text": sorted(text - compiled),
                                  "only_compiler": sorted(compiled - text),
                                  "admissible_in_compiler": sorted(
                                      set(task.truth.get("admissible", [])) & compiled)}
    figures = {"suite": the_suite.name, "oracle": truth["oracle"],
               "resolution": truth["resolution"], "disagreements": disagreements,
               "grades": rows}
    path = run_dir / DOCUMENT
    atomic_write_text(path, _markdown(figures))
    return path, figures


def _list(paths: list[str]) -> str:
    return ", ".join(markdown_inline(p) for p in paths) or "-"


def _markdown(f: dict[str, Any]) -> str:
    """The document; every value from the oracle's index, the truth file or scores.json is
    escaped (`untrusted.text`), so no path can start a line, a row, HTML or a link."""
    o, res, md = f["oracle"], f["resolution"], markdown_inline
    lines = [f"# Text truth against compiler truth: suite {md(f['suite'])}", "",
             f"Compiler truth: {md(o['arm'])} ({md(o['tool_version'])}), image "
             f"{markdown_code_span(o['image_id'])}, {markdown_code_span(' '.join(o['argv']))}. "
             f"Index: {md(res['documents'])} documents, {md(res['occurrences'])} occurrences: "
             f"{md(res['defined_in_corpus'])} of symbols defined in the corpus, "
             f"{md(res['defined_outside'])} of symbols defined outside it, "
             f"{md(res['local'])} of locals. Rendered by `sandbench truth compare` "
             "from scores.json and the sealed truth file; not edited by hand.", "",
             "## Where the truths disagree", "",
             "| task | only in the text truth | only in the compiler truth | "
             "text-admissible, compiler core |", "| --- | --- | --- | --- |"]
    for task, d in f["disagreements"].items():
        lines.append(f"| {markdown_cell(task)} | {_list(d['only_text'])} | "
                     f"{_list(d['only_compiler'])} | {_list(d['admissible_in_compiler'])} |")
    lines += ["", "## How each arm's grade moves", "",
              "| arm | task | text truth | recall | compiler truth | recall | precision |",
              "| --- | --- | --- | ---: | --- | ---: | ---: |"]
    for r in sorted(f["grades"], key=lambda r: (r["arm"], r["task"])):
        moved = "" if r["text"] == r["compiler"] else " (moved)"
        lines.append("| " + " | ".join(markdown_cell(v) for v in (
            r["arm"], r["task"], r["text"], r["text_recall"], f"{r['compiler']}{moved}",
            r["compiler_recall"], r["compiler_precision"])) + " |")
    return "\n".join(lines) + "\n"
