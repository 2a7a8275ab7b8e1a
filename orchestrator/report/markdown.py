"""The dated results document, rendered from scores.json alone, deterministically: rendering
the same scores again writes the same bytes, so a committed document is checked by rendering
it again and comparing (`sandbench report RUN_DIR --check`). Nothing in it is edited by hand,
and nothing in it depends on when or where it is rendered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from orchestrator.report import edges, grading, leaders, predictions, tables
from orchestrator.score.environment import LABELS
from orchestrator.score.listed import full_length
from orchestrator.untrusted.text import markdown_cell, markdown_code, terminal
from orchestrator.untrusted.text import markdown_code_span as code
from orchestrator.untrusted.text import markdown_inline as md

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


def _task_section(scores: Mapping[str, Any], task_id: str) -> str:
    task = scores["tasks"][task_id]
    summary, cells, commands = tables.task_summary(scores, task_id)
    notes = []
    for c in cells:
        grade = c["grade"] or {}
        extra = [md(n) for n in grade.get("notes", [])]
        if c["parse_error"]:
            extra.append(f"parse error: {md(c['parse_error'])}")
        if c["flags"]:
            extra.append("flags: " + ", ".join(md(f) for f in c["flags"]))
        if c.get("unstable"):
            extra.append("unstable: " + "; ".join(md(grading.rep_grade(r)) for r in c["reps"]))
        if grade.get("missed"):
            extra.append("missed: " + ", ".join(md(p) for p in grade["missed"]))
        if grade.get("outside"):
            extra.append("outside the truth: " + ", ".join(
                md(p) for p in tables.shown(grade["outside"], 10,
                                            full_length(grade, "outside"))))
        for failure in (c["reach"] or {}).get("first_failures", [])[:1]:
            extra.append(f"first row that does not reach: #{md(failure['row'])} "
                         f"{md(failure['path'])}:{md(failure['line'])} "
                         f"({', '.join(md(p) for p in failure['problems'])})")
        notes += [f"- {md(c['arm'])}: {n}" for n in extra]
    return "\n\n".join(p for p in [
        f"### {md(task_id)} ({md(task['kind'])}, {md(task['language'])})",
        md(summary),
        md_table(tables.task_cells(scores, task_id)),
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
    found = []
    for arm in tables.arms(scores):
        per_band = scores["cost_ratios"].get(arm)
        for band in tables.bands(scores) if per_band else []:
            r = per_band[band]
            if r["disagreement"]:
                found.append(f"- **{md(arm)}, {md(band)}**: the median of the per-task ratios is "
                             f"{tables.two(r['median_of_ratios'])}, the ratio of the medians "
                             f"{tables.two(r['ratio_of_medians'])}: {r['disagreement']}.")
    if not scores["cost_ratios"]:
        return tables.no_ratio(scores)
    if not found:
        return "The two forms agree in every band."
    return "The two forms disagree here, and the disagreement is part of the result:\n\n" + \
        "\n".join(found)


def _outliers(scores: Mapping[str, Any]) -> str:
    head, flagged = tables.outliers(scores)
    return "\n\n".join(p for p in (md(head), "\n".join(f"- {md(f)}" for f in flagged)) if p)


# What a walk's bound counts, by guard (orchestrator/untrusted/walk.py): levels, entries and
# mounts need no unit.
CUT_UNITS = {"path-bytes": " bytes", "read-bytes": " bytes", "extents": " seek steps",
             "time": " s"}


def _state_files(scores: Mapping[str, Any]) -> str:
    parts = []
    for arm in tables.arms(scores):
        s = scores["state"][arm]
        env = scores["arms"][arm]["env"]
        if s is None:
            continue
        files = [f"{md(p)} ({n:,} bytes)" for p, n in s["state_files"]]
        changes = [f"{md(c['status'])} {md(c['path'])}" for c in s["corpus_changes"]]
        lines = [f"- **{md(arm)}**: environment "
                 + ", ".join(f"{md(k)}={md(v)}" for k, v in env.items())]
        lines += [f"  - state: {f}"
                  for f in tables.shown(files, total=full_length(s, "state_files"))]
        lines += _omitted(s, "state_files", "state", "files")
        lines += [f"  - corpus copy: {c}"
                  for c in tables.shown(changes, total=full_length(s, "corpus_changes"))]
        lines += _omitted(s, "corpus_changes", "corpus copy", "changes")
        lines += [f"  - {where} listing cut at its {md(c['guard'])} bound ({c['limit']:,}"
                  f"{CUT_UNITS.get(c['guard'], '')}), first left out: {md(c['at'])}"
                  for where, cuts in s.get("listings_cut", {}).items() for c in cuts]
        parts.append("\n".join(lines))
    return "\n".join(parts)


def _omitted(state: Mapping[str, Any], key: str, where: str, what: str) -> list[str]:
    """The line for the names a state list left out (none when it is whole)."""
    left = state.get(f"{key}_omitted")
    return [f"  - {where}: {left['count']:,} more {what} ({left['bytes']:,} bytes), past "
            "the names state.json lists"] if left else []


def _leaders(scores: Mapping[str, Any]) -> str:
    trim = leaders.leaders_trimmed(scores)
    intro = ("Generated from the scores, one row per band x metric, every arm's figure beside "
             "the leader's (ties name every tied arm; `n/a`: no figure, the arm does not "
             f"compete in that cell). {md(leaders.leaders_statement(scores))}")
    return "\n\n".join(p for p in (intro, md(leaders.leaders_left_out(trim)),
                                    md_table(trim.table)) if p)


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
    shown_kinds = {c.split(": ", 1)[1] for c in trim.table[0][1:]}
    defs = scores["definitions"]
    listed = "\n".join(f"- `{key.split('.', 1)[1]}`: {defs[key]}" for key in sorted(defs)
                       if key.startswith(("failure.", "unscored."))
                       and key.split(".", 1)[1] in shown_kinds)
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
        disclosure(scores["environment"]),
        f"Run {code(run['run_id'])}, sandbench {md(run['sandbench_version'])}, Docker engine "
        f"{md(scores['environment']['engine']['version'])}; {tables.exec_path_text(run)}. "
        "Rendered by `sandbench report` from "
        f"`scores.json` ({scores['schema']}); `sandbench report RUN_DIR --check` renders it "
        "again and compares byte for byte. No part of this document is edited by hand. "
        + tables.METHOD_TEXT,
        _section("Scorecard", "Tasks per arm and band (`all`: every kind).",
                 shown(tables.scorecard(scores), scores)),
        *([_section(predictions.TITLE, md(predictions.intro(scores)),
                    md_table(predictions.table(scores)))] if predictions.present(scores) else []),
        _section("Failures",
                 "Every cell that failed carries the kind decided when it failed: an exec "
                 "outcome from its record, or a parse error. A failed cell is `wrong`; an "
                 "unscored one (its sandbox or arm never gave the tool a chance) is never "
                 "counted as the tool's wrong answer.", _failures(scores)),
        _section("Corpus and setup cost", _corpus(corpus),
                 "Setup cost is separate and never amortised into a per-task figure.",
                 md_table(tables.setup(scores)), scores["definitions"]["setup"] + "."),
        _section("Choices the suite declares",
                 "Where the methodology leaves a choice, the sealed suite declares it; quoted "
                 "from its suite.toml:", _declarations(scores), _grading_rules(scores)),
        _section("Not attempted", _not_attempted(scores)),
        *_task_commands(scores),
        _section("Tasks", "Every task, with the exact command each arm ran and its verdict. "
                 "Recall and precision are raw, so a reader can regrade under other bands.",
                 _flags(scores), *(_task_section(scores, t) for t in scores["tasks"])),
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
        _section("Where peers win", _leaders(scores)),
        _section("Definitions", _definitions(scores)),
    ]
    return "\n\n".join(parts).rstrip("\n") + "\n"


def check(rendered: str, committed: str) -> Sequence[str]:
    """The first differing lines between a fresh rendering and the committed document, each
    escaped for the terminal it is printed on (the committed file may hold anything)."""
    import difflib
    return [terminal(line) for line in difflib.unified_diff(
        committed.splitlines(), rendered.splitlines(), "committed", "rendered", lineterm="",
        n=1)][:40]
