"""The dated results document, rendered from scores.json alone, deterministically: rendering
the same scores again writes the same bytes, so a committed document is checked by rendering
it again and comparing (`sandbench report RUN_DIR --check`). Nothing in it is edited by hand,
and nothing in it depends on when or where it is rendered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from orchestrator.report import edges, grading, leaders, notes, predictions, tables, tasks, verdict
from orchestrator.score.environment import LABELS
from orchestrator.score.listed import full_length
from orchestrator.untrusted.text import (markdown_cell, markdown_code, markdown_code_span as code,
                                         markdown_inline as md, terminal)

TITLE = "sandbench results"


def md_table(table: tables.Table) -> str:
    """Every cell escaped (`markdown_cell`), whoever wrote it: one convention for the whole
    table, so no cell can end its row, open another or bring HTML or a link."""
    columns, rows = table
    lines = ["| " + " | ".join(markdown_cell(c) for c in columns) + " |",
             "|" + "|".join(" --- " for _ in columns) + "|"]
    lines += ["| " + " | ".join(markdown_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def code_lines(lines: Iterable[object]) -> str:
    """Lines for a fenced block, each one line whatever it holds (`markdown_code`)."""
    return "\n".join(markdown_code(line) for line in lines)


def fenced(text: str, info: str = "text") -> str:
    """A code block whose fence no backtick run in `text` can close."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def disclosure(env: Mapping[str, Any]) -> str:
    """The methodology's environment block, its labels and order exactly."""
    lines = []
    for key, label in LABELS:
        if key == "deviations":
            items = env["deviations"]
            lines.append(f"{label} " + ("none" if not items else markdown_code(items[0])))
            lines += [" " * (len(label) + 1) + markdown_code(item) for item in items[1:]]
        else:
            lines.append(f"{label} {markdown_code(env[key])}")
    return fenced("\n".join(lines))


def shown(table: tables.Table, scores: Mapping[str, Any], keys: int = 2) -> str:
    """An arm x band table without the rows and columns that carry no information, and a
    sentence saying what was left out (`tables.trimmed`)."""
    trim = tables.trimmed(table, keys)
    note = tables.left_out(trim, scores)
    return "\n\n".join(p for p in (md_table(trim.table) if trim.table[1] else "",
                                    md(note)) if p)


def _section(title: str, *parts: str) -> str:
    return "\n\n".join([f"## {title}", *[p for p in parts if p]])


def _task_section(scores: Mapping[str, Any], task_id: str,
                  cells: Sequence[Mapping[str, Any]]) -> str:
    task = scores["tasks"][task_id]
    summary, commands = tasks.task_summary(scores, task_id, cells)
    notes = [f"- {md(c['arm'])}: {md(n)}" for c in cells for n in tasks.task_notes(c)]
    return "\n\n".join(p for p in [
        f"### {md(task_id)} ({md(task['kind'])}, {md(task['language'])})",
        md(summary),
        md_table(tasks.task_cells(cells)),
        "Commands, exactly as each arm ran them (REP 0):" if commands else "",
        # Commands are the arm spec's argv with the task's input (the suite's): their own
        # line breaks (an inline rule) are kept, every other control is escaped.
        fenced(code_lines("\n".join(commands).split("\n"))) if commands else "",
        "\n".join(notes)] if p)


def _edges(scores: Mapping[str, Any]) -> str:
    """The Rust edges family: per edge cell its figures and the first non-matches (all of them
    are in scores.json), then the oracle's site classes once."""
    cells = edges.edge_cells(scores)
    if not cells:
        return ""
    parts = [scores["definitions"].get(f"correct.{k}", "") for k in ("call-edges",
                                                                     "test-edges")]
    for c in cells:
        parts += [f"### {md(c['arm'])}: {md(c['task'])} ({md(c['verdict'])})",
                  md_table(edges.edge_figures(c))]
        detail = c["edges"]
        key = "non_matches" if detail.get("non_matches") else "extra"
        listed = detail.get(key) or []
        if listed:
            total = full_length(detail, key)
            held = ("every one" if total == len(listed)
                    else f"the first {len(listed):,}")
            parts.append(f"First of {total:,} non-matches ({held} in scores.json):")
            parts.append(fenced(code_lines(" ".join(str(x) for x in row)
                                           for row in listed[:15])))
        if detail.get("missed"):
            parts.append(f"First of {len(detail['missed']):,} missed (every one in "
                         "scores.json):")
            parts.append(fenced(code_lines(" ".join(str(x) for x in row)
                                           for row in detail["missed"][:15])))
    first = next((c for c in cells if "site_classes" in c["edges"]), None)
    if first is not None:
        parts += ["### Site classes of the oracle's references",
                  md_table(edges.site_classes(first))]
    return _section("Edges", *(p for p in parts if p))


def _disagreements(scores: Mapping[str, Any]) -> str:
    if not scores["cost_ratios"]:
        return tables.no_ratio(scores)
    found = notes.disagreements(scores)
    if not found:
        return notes.AGREE_TEXT
    return notes.DISAGREE_TEXT + "\n\n" + "\n".join(f"- **{md(head)}**: {md(text)}"
                                                   for head, text in found)


def _outliers(scores: Mapping[str, Any]) -> str:
    head, flagged = tables.outliers(scores)
    return "\n\n".join(p for p in (md(head), "\n".join(f"- {md(f)}" for f in flagged)) if p)


def _state_files(scores: Mapping[str, Any]) -> str:
    return "\n".join("\n".join([f"- **{md(arm)}**: environment {md(env)}",
                                *(f"  - {md(line)}" for line in lines)])
                     for arm, env, lines in notes.state_notes(scores))


def _leaders(scores: Mapping[str, Any]) -> str:
    trim = leaders.leaders_trimmed(scores)
    intro = ("Generated from the scores, one row per kind x metric, every arm's figure beside "
             "the leader's (`n/a`: no figure). Leader: "
             + md(scores["definitions"].get("leader", "")) + ". "
             + md(leaders.leaders_statement(scores)))
    return "\n\n".join(p for p in (intro, md(leaders.leaders_left_out(trim)),
                                    md_table(trim.table)) if p)


def _verdict(scores: Mapping[str, Any]) -> str:
    """Who is best per kind, over how many tasks, by how much, and the tool under test."""
    table = verdict.table(scores)
    return "\n\n".join(p for p in (
        "\n".join(f"- {md(line)}" for line in verdict.headlines(scores)),
        md(verdict.RULE), md_table(table) if table[1] else "") if p)


def _declarations(scores: Mapping[str, Any]) -> str:
    quotes = scores["suite"]["declarations"]
    return fenced("\n\n".join(quotes[k] for k in sorted(quotes)), "toml")


def _grading_rules(scores: Mapping[str, Any]) -> str:
    """The grading rules in force, declared or default, and the tasks' own."""
    if not grading.has_grading(scores):
        return ""
    table = grading.overrides(scores)
    return "\n\n".join(p for p in (
        "The grading rules in force (a rule the suite does not declare in [grading] is its "
        "default, the methodology's):", md_table(grading.rules(scores)),
        "Tasks that declare their own rules, over the suite's:" if table[1] else
        "No task declares rules of its own.", md_table(table) if table[1] else "") if p)


def _unstable(scores: Mapping[str, Any]) -> str:
    if not grading.has_unstable(scores):
        return ""
    cells = grading.unstable_cells(scores)
    return _section("Unstable cells", md(grading.unstable_text(scores)),
                    md_table(grading.unstable_shares(scores)),
                    "\n".join(f"- {md(line)}" for line in cells))


def _flags(scores: Mapping[str, Any]) -> str:
    """What each flag a cell can carry means, where the tasks show them."""
    listed = grading.flags(scores)
    return ("Flags a cell can carry:\n\n" + "\n".join(f"- {code(k)}: {md(v)}"
                                                       for k, v in listed)) if listed else ""


def _published(scores: Mapping[str, Any]) -> str:
    if not grading.has_published(scores):
        return ""
    return _section("Published figures",
                    "Figures a publication reported for a cell (its task's [published.ARM]) "
                    "against this run. Compared: "
                    + md(scores["definitions"].get("published", "")) + ".",
                    md_table(grading.published(scores)),
                    "\n".join(f"- {md(line)}" for line in grading.published_notes(scores)))


def _definitions(scores: Mapping[str, Any]) -> str:
    return "\n".join(f"- **{k}**: {v}" for k, v in sorted(scores["definitions"].items()))


def _failures(scores: Mapping[str, Any]) -> str:
    """The failures table without the kinds no cell had and the arms with none, then the
    definitions of the kinds shown."""
    trim = tables.trimmed(tables.failures(scores), 1)
    listed = "\n".join(f"- `{kind}`: {text}" for kind, text in tables.failure_kinds(trim, scores))
    return "\n\n".join(p for p in (md_table(trim.table) if trim.table[1] else "",
                                    md(tables.failures_left_out(trim)), listed) if p)


def _not_attempted(scores: Mapping[str, Any]) -> str:
    table = tables.not_attempted(scores)
    elsewhere = tables.declared_elsewhere(scores)
    note = (f"Declarations for kinds this suite has no task of ({', '.join(elsewhere)}) are "
            "left out." if elsewhere else "")
    if not table[1]:
        return "\n\n".join(p for p in ("Every arm attempts every kind.", md(note)) if p)
    return "\n\n".join(p for p in (
        "Excluded from that arm's denominators and counted in its own column.",
        md_table(table), md(note)) if p)


def _task_commands(scores: Mapping[str, Any]) -> list[str]:
    """The cells that ran their task file's own command for the arm instead of the arm's
    template (a published command reproduced): a section only when there are some."""
    by_arm = grading.task_command_cells(scores)
    if not by_arm:
        return []
    return [_section("Task-given commands",
                     "These cells ran the command their sealed task file gives the arm "
                     "(`[commands.ARM]`), not the arm's own template; each task's table shows "
                     "the exact command.",
                     "\n".join(f"- {md(arm)}: {', '.join(code(t) for t in tasks)}"
                               for arm, tasks in by_arm.items()))]


def _corpus(corpus: Mapping[str, Any]) -> str:
    languages = ", ".join(f"{md(k)} {md(v)}" for k, v in sorted(corpus["languages"].items()))
    before = (corpus["pristine_digest_before"] or "n/a")[:16]
    after = (corpus["pristine_digest_after"] or "n/a")[:16]
    return (f"Corpus {code(corpus['id'])}: {md(corpus['repo'])} @ {code(corpus['sha'])}, "
            f"{md(corpus['tracked_files'])} tracked files ({languages}). Tree digest of the "
            f"pristine copy before the run {code(before)}, after {code(after)}.")


def render_markdown(scores: Mapping[str, Any]) -> str:
    run, suite, corpus = scores["run"], scores["suite"], scores["corpus"]
    manifest = scores["manifest"]
    changed = manifest["scorer_changed"]
    parts: list[str] = [
        f"# {TITLE}: suite {md(suite['name'])}, {md(run['date'])}",
        _section("Verdict", _verdict(scores)),
        _section("Where peers win", _leaders(scores)),
        _section("Scorecard", "Tasks per arm and kind (`all`: every kind).",
                 shown(tables.scorecard(scores), scores)),
        *([_section(predictions.TITLE, md(predictions.intro(scores)),
                    md_table(predictions.table(scores)))] if predictions.present(scores) else []),
        _section("Run and environment", disclosure(scores["environment"]),
                 f"Run {code(run['run_id'])}, sandbench {md(run['sandbench_version'])}, Docker "
                 f"engine {md(scores['environment']['engine']['version'])}; "
                 f"{tables.exec_path_text(run)}. Rendered by `sandbench report` from "
                 f"`scores.json` ({scores['schema']}); `sandbench report RUN_DIR --check` "
                 "renders it again and compares byte for byte. No part of this document is "
                 "edited by hand. " + tables.METHOD_TEXT + " Every term is defined once, under "
                 "Glossary."),
        _section("Failures", md(tables.FAILURES_TEXT), _failures(scores)),
        _section("Corpus and setup cost", _corpus(corpus),
                 "Setup cost is separate and never amortised into a per-task figure.",
                 md_table(tables.setup(scores)), scores["definitions"]["setup"] + "."),
        _section("Choices the suite declares",
                 "Where the methodology leaves a choice, the sealed suite declares it; quoted "
                 "from its suite.toml:", _declarations(scores), _grading_rules(scores)),
        _section("Not attempted", _not_attempted(scores)),
        *_task_commands(scores),
        _section("Tasks", "Every task, with the exact command each arm ran and its verdict. "
                 "Recall and precision are raw, so a reader can regrade under other thresholds.",
                 _flags(scores), *(_task_section(scores, t, cells)
                                   for t, cells in tasks.cells_by_task(scores).items())),
        *([edge_section] if (edge_section := _edges(scores)) else []),
        *([unstable] if (unstable := _unstable(scores)) else []),
        *([figures] if (figures := _published(scores)) else []),
        _section("Correctness", shown(tables.correctness(scores), scores)),
        _section("Cost",
                 f"Without a model in the loop: {scores['definitions']['cost.unit']}. No "
                 "figure here comes from a model's token counter.",
                 shown(tables.cost(scores), scores),
                 f"### Paired cost ratio against the baseline ({md(suite['baseline'])})",
                 scores["definitions"]["cost"] + ".",
                 shown(tables.ratios(scores), scores) if scores["cost_ratios"] else "",
                 _disagreements(scores)),
        _section("Wall time", scores["definitions"]["timing"] + ". Every raw sample is in "
                 "scores.json.", shown(tables.timing(scores), scores), _outliers(scores)),
        _section("Follow-up reach and tool calls", scores["definitions"]["reach"] + ".",
                 shown(tables.reach(scores), scores)),
        _section("Where each tool wrote its state", md_table(tables.state(scores)),
                 _state_files(scores), "Isolation guards, as stored under guards/ARM/:",
                 md_table(tables.guards(scores))),
        _section("Suite manifest check",
                 f"The run recorded the seal {code(manifest['manifest_sha256'])}, and the suite "
                 "scored is that seal: every suite file and arm spec hashes as sealed. "
                 + (f"The scorer differs from the one sealed before the run in: "
                    f"{', '.join(md(c) for c in changed)}." if changed else
                    "The scorer is the one sealed before the run."),
                 md_table(tables.manifest(scores))),
        _section("Glossary", _definitions(scores)),
    ]
    return "\n\n".join(parts).rstrip("\n") + "\n"


def check(rendered: str, committed: str) -> Sequence[str]:
    """The first differing lines between a fresh rendering and the committed document, each
    escaped for the terminal it is printed on (the committed file may hold anything)."""
    import difflib
    return [terminal(line) for line in difflib.unified_diff(
        committed.splitlines(), rendered.splitlines(), "committed", "rendered", lineterm="",
        n=1)][:40]
