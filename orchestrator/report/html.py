"""The results page: `results.html` beside `results.md`, rendered from scores.json alone.

It holds the same tables as the Markdown document (built by `tables`, so the figures and their
decimals are the same) as plain HTML tables that need no JavaScript, and three plots drawn by
plotly (figures built by `plots`): correctness per arm and kind, payload tokens against
correctness per arm, and the cold and warm wall-time distributions per arm from the raw samples.

The page is self-contained: plotly.js is embedded once, inline, and a Content-Security-Policy
forbids the page any fetch, so opening it never touches the network. Like the Markdown it is
deterministic: the plot divs have fixed ids, the figures are serialised as sorted JSON, and
nothing depends on when or where it is rendered, so `sandbench report RUN_DIR --check`
renders it again and compares byte for byte. The bytes depend on the plotly release (it
carries plotly.js and its templates), which the project pins.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from orchestrator.fsutil import atomic_write_text
from orchestrator.report import (edges, grading, leaders, notes, plots, predictions, tables,
                                 tasks, verdict)
from orchestrator.report.markdown import TITLE, disclosure
from orchestrator.report.page_style import CSP, STYLE
from orchestrator.untrusted.text import terminal, visible

SUFFIX = ".html"
PLOT_IDS = ("plot-correctness", "plot-cost", "plot-timing")
_NUMBER = re.compile(r"-?[\d,]+(\.\d+)?")
MAX_DIFF_LINE = 160


# ---- HTML pieces ------------------------------------------------------------------------------

def _e(text: object) -> str:
    """Text or an attribute value: HTML-escaped, and every control, bidi override and line
    separator shown as its escape (`untrusted.text.visible`), as in the Markdown document."""
    return escape(visible(str(text)), quote=True)


def _numeric(rows: Sequence[Sequence[str]], i: int) -> bool:
    """A column of figures (n/a aside) is right-aligned."""
    values = [row[i] for row in rows if row[i] != tables.NA]
    return bool(values) and all(_NUMBER.fullmatch(v) for v in values)


def html_table(table: tables.Table) -> str:
    """A plain table (no script needed); columns of figures right-aligned."""
    columns, rows = table
    numeric = [_numeric(rows, i) for i in range(len(columns))]
    num = ' class="num"'
    head = "".join(f'<th scope="col"{num if n else ""}>{_e(c)}</th>'
                   for c, n in zip(columns, numeric, strict=True))
    body = "\n".join(
        "<tr>" + "".join(f'<td{num if n else ""}>{_e(v)}</td>'
                         for v, n in zip(row, numeric, strict=True)) + "</tr>" for row in rows)
    return (f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>\n'
            f"<tbody>\n{body}\n</tbody></table></div>")


def _p(text: str) -> str:
    return f"<p>{_e(text)}</p>" if text else ""


def shown(table: tables.Table, scores: Mapping[str, Any], keys: int = 2) -> str:
    """An arm x band table without the rows and columns that carry no information, and the
    sentence saying what was left out, as in the Markdown document."""
    trim = tables.trimmed(table, keys)
    return "\n".join(p for p in (html_table(trim.table) if trim.table[1] else "",
                                 _p(tables.left_out(trim, scores))) if p)


def _pre(text: str) -> str:
    """Preformatted lines: the line breaks given here kept, each line escaped."""
    return "<pre>" + "\n".join(_e(line) for line in text.split("\n")) + "</pre>"


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _section(title: str, *parts: str) -> tuple[str, str]:
    body = "\n".join(p for p in parts if p)
    return title, f'<section id="{_slug(title)}">\n<h2>{_e(title)}</h2>\n{body}\n</section>'


# ---- plots ------------------------------------------------------------------------------------

def _figure(plot_id: str, title: str, label: str, caption: str) -> str:
    return (f"<figure>\n<h3>{_e(title)}</h3>\n"
            f'<div id="{plot_id}" class="plot" role="img" aria-label="{_e(label)}">'
            f"</div>\n<figcaption>{_e(caption)}</figcaption>\n</figure>")


def _plots(scores: Mapping[str, Any]) -> tuple[str, str]:
    """The plots section and the script that draws it."""
    correctness = plots.correctness_figure(scores)
    cost, cost_missing = plots.cost_figure(scores)
    timing, timing_missing = plots.timing_figure(scores)
    unit = scores["definitions"]["cost.unit"]
    captions = [
        ("Correctness per arm and kind", "Correctness per arm and kind, stacked bars",
         ("Tasks per arm and kind by verdict. Not attempted: the arm declares it cannot "
          "express the kind; unscored: the arm was not run or its guards refused it. The same "
          "counts are in the scorecard table.")),
        ("Payload tokens against correctness per arm (every kind)",
         "Payload tokens against correctness per arm, scatter plot",
         f"One point per arm over every kind: the median payload of a task against the share "
         f"of its graded tasks that are correct; the legend names each arm's colour and "
         f"shape and how many of the suite's tasks its point is over: arms graded on "
         f"different tasks are not compared by their points (the Verdict compares them over "
         f"the tasks both were graded on). Cost unit: {unit}."
         + (f" Not plotted, having no figure for one of the two: {', '.join(cost_missing)}."
            if cost_missing else "")),
        ("Cold and warm wall time per arm (every raw sample)",
         "Cold and warm wall time per arm, box plots with every sample",
         "Every raw sample kept in scores.json, on a log scale: cold is REP 0, the first "
         "invocation after the index build, one per task; warm is REP 1..N. Samples with "
         "impossible timing are left out, as they enter no median; timed-out samples are "
         "lower bounds."
         + (f" No samples: {', '.join(timing_missing)}." if timing_missing else "")),
    ]
    figures = (correctness, cost, timing)
    section = _section(
        "Plots",
        "<noscript><p>The plots need JavaScript; every figure they show is in the tables "
        "below.</p></noscript>",
        *(_figure(pid, title, label, caption)
          for pid, (title, label, caption) in zip(PLOT_IDS, captions, strict=True)))[1]
    calls = "\n".join(f'Plotly.newPlot("{pid}", {plots.figure_json(fig)});'
                       for pid, fig in zip(PLOT_IDS, figures, strict=True))
    script = (f"<script>\n{plots.plotly_js()}\n</script>\n"
              f"<script>\n{calls}\n</script>")
    return section, script


# ---- the page ---------------------------------------------------------------------------------

def _task(scores: Mapping[str, Any], task_id: str, cells: Sequence[Mapping[str, Any]]) -> str:
    task = scores["tasks"][task_id]
    summary, commands = tasks.task_summary(scores, task_id, cells)
    verdicts = ", ".join(f"{c['arm']} {c['verdict'].replace('_', ' ')}" for c in cells)
    notes = [f"{c['arm']}: {n}" for c in cells for n in tasks.task_notes(c)]
    return "\n".join(p for p in [
        f'<details id="task-{_e(_slug(task_id))}">',
        (f"<summary><strong>{_e(task_id)}</strong> ({_e(task['kind'])}, "
         f"{_e(task['language'])}): {_e(verdicts)}</summary>"),
        _p(summary),
        html_table(tasks.task_cells(cells)),
        _p("Commands, exactly as each arm ran them (REP 0):") if commands else "",
        _pre("\n".join(commands)) if commands else "",
        _list(notes) if notes else "",
        "</details>"] if p)


def outliers(scores: Mapping[str, Any]) -> str:
    """The flagged samples (with the sample size a flag needs), as in the Markdown."""
    head, flagged = tables.outliers(scores)
    listed = "".join(f"<li>{_e(line)}</li>" for line in flagged)
    return _p(head) + (f"\n<ul>{listed}</ul>" if listed else "")


def _disagreements(scores: Mapping[str, Any]) -> str:
    """Where the two ratio forms disagree, as in the Markdown document."""
    if not scores["cost_ratios"]:
        return _p(tables.no_ratio(scores))
    found = notes.disagreements(scores)
    if not found:
        return _p(notes.AGREE_TEXT)
    return _p(notes.DISAGREE_TEXT) + "\n" + _list([f"{head}: {text}" for head, text in found])


def _state_files(scores: Mapping[str, Any]) -> str:
    """Each arm's declared environment and what it wrote, as in the Markdown document."""
    return "\n".join(f"<p><strong>{_e(arm)}</strong>: environment {_e(env)}</p>\n"
                     + _list(lines) for arm, env, lines in notes.state_notes(scores))


def _definitions(scores: Mapping[str, Any]) -> str:
    items = "\n".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>"
                      for k, v in sorted(scores["definitions"].items()))
    return f"<dl>\n{items}\n</dl>"


def _grading_rules(scores: Mapping[str, Any]) -> str:
    """The grading rules in force, declared or default, and the tasks' own (as in the
    Markdown document)."""
    if not grading.has_grading(scores):
        return ""
    table = grading.overrides(scores)
    return "\n".join(p for p in (
        _p("The grading rules in force (a rule the suite does not declare in [grading] is its "
           "default, the methodology's):"), html_table(grading.rules(scores)),
        _p("Tasks that declare their own rules, over the suite's:" if table[1] else
           "No task declares rules of its own."), html_table(table) if table[1] else "") if p)


def _list(lines: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{_e(line)}</li>" for line in lines) + "</ul>" if lines else ""


def _grading_sections(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Unstable cells and published figures, when scores.json has them."""
    out = []
    if grading.has_unstable(scores):
        out.append(_section("Unstable cells", _p(grading.unstable_text(scores)),
                            html_table(grading.unstable_shares(scores)),
                            _list(grading.unstable_cells(scores))))
    if grading.has_published(scores):
        out.append(_section("Published figures",
                            _p("Figures a publication reported for a cell (its task's "
                               "[published.ARM]) against this run. Compared: "
                               + scores["definitions"].get("published", "") + "."),
                            html_table(grading.published(scores)),
                            _list(grading.published_notes(scores))))
    return out


def _flags(scores: Mapping[str, Any]) -> str:
    listed = grading.flags(scores)
    if not listed:
        return ""
    items = "\n".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in listed)
    return _p("Flags a cell can carry:") + f"\n<dl>\n{items}\n</dl>"


def _edges(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The Rust edges family's figures and site classes, when the run has edge cells (every
    non-match and miss is in scores.json and the Markdown document)."""
    cells = edges.edge_cells(scores)
    if not cells:
        return []
    parts = [_p(scores["definitions"][f"correct.{k}"]) for k in ("call-edges", "test-edges")
             if f"correct.{k}" in scores["definitions"]]
    for c in cells:
        parts += [f"<h3>{_e(c['arm'])}: {_e(c['task'])} ({_e(c['verdict'])})</h3>",
                  html_table(edges.edge_figures(c))]
    first = next((c for c in cells if "site_classes" in c["edges"]), None)
    if first is not None:
        parts += ["<h3>Site classes of the oracle's references</h3>",
                  html_table(edges.site_classes(first))]
    return [_section("Edges", *parts)]


def _task_commands(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The cells that ran their task file's own command for the arm instead of the arm's
    template, as in the Markdown document: a section only when there are some."""
    by_arm = grading.task_command_cells(scores)
    if not by_arm:
        return []
    items = "".join(f"<li>{_e(arm)}: {_e(', '.join(tasks))}</li>" for arm, tasks in by_arm.items())
    return [_section("Task-given commands",
                     _p("These cells ran the command their sealed task file gives the arm "
                        "([commands.ARM]), not the arm's own template; each task's table shows "
                        "the exact command."), f"<ul>{items}</ul>")]


def _predictions(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The suite's predictions beside what the run found, when it declares any."""
    return [_section(predictions.TITLE, _p(predictions.intro(scores)),
                     html_table(predictions.table(scores)))] if predictions.present(scores) else []


def _sections(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    suite, corpus, manifest = scores["suite"], scores["corpus"], scores["manifest"]
    not_attempted = tables.not_attempted(scores)
    elsewhere = tables.declared_elsewhere(scores)
    peers = leaders.leaders_trimmed(scores)
    languages = ", ".join(f"{k} {v}" for k, v in sorted(corpus["languages"].items()))
    changed = manifest["scorer_changed"]
    run = scores["run"]
    failures = tables.trimmed(tables.failures(scores), 1)
    decided = verdict.table(scores)
    return [
        _section("Verdict", _list(verdict.headlines(scores)), _p(verdict.RULE),
                 html_table(decided) if decided[1] else ""),
        _section("Where peers win", _p("One row per kind x metric, every arm's figure beside "
                                       "the leader's (n/a: no figure). Leader: "
                                       + scores["definitions"].get("leader", "") + ". "
                                       + leaders.leaders_statement(scores)),
                 _p(leaders.leaders_left_out(peers)), html_table(peers.table)),
        _section("Scorecard", _p("Tasks per arm and kind (all: every kind)."),
                 shown(tables.scorecard(scores), scores)),
        *_predictions(scores),
        _section("Run and environment",
                 _pre("\n".join(disclosure(scores["environment"]).split("\n")[1:-1])),
                 _p(f"Run {run['run_id']}, sandbench {run['sandbench_version']}, Docker engine "
                    f"{scores['environment']['engine']['version']}; "
                    f"{tables.exec_path_text(run)}. Rendered by sandbench report from "
                    f"scores.json ({scores['schema']}), like the Markdown document beside it, "
                    "with the same tables; sandbench report RUN_DIR --check renders both again "
                    "and compares byte for byte. Nothing on this page is fetched from the "
                    f"network. {tables.METHOD_TEXT} Every term is defined once, under "
                    "Glossary.")),
        _section("Failures", _p(tables.FAILURES_TEXT),
                 html_table(failures.table) if failures.table[1] else "",
                 _p(tables.failures_left_out(failures)),
                 _list([f"{kind}: {text}" for kind, text in tables.failure_kinds(failures,
                                                                                 scores)])),
        _section("Corpus and setup cost",
                 _p(f"Corpus {corpus['id']}: {corpus['repo']} @ {corpus['sha']}, "
                    f"{corpus['tracked_files']} tracked files ({languages}). Tree digest of "
                    f"the pristine copy before the run "
                    f"{(corpus['pristine_digest_before'] or tables.NA)[:16]}, after "
                    f"{(corpus['pristine_digest_after'] or tables.NA)[:16]}."),
                 _p("Setup cost is separate and never amortised into a per-task figure."),
                 html_table(tables.setup(scores)), _p(scores["definitions"]["setup"] + ".")),
        _section("Choices the suite declares", _p("Quoted from the sealed suite.toml:"),
                 _pre("\n\n".join(suite["declarations"][k]
                                  for k in sorted(suite["declarations"]))),
                 _grading_rules(scores)),
        _section("Not attempted",
                 _p("Excluded from that arm's denominators and counted in its own column.")
                 if not_attempted[1] else _p("Every arm attempts every kind."),
                 html_table(not_attempted) if not_attempted[1] else "",
                 _p(f"Declarations for kinds this suite has no task of ({', '.join(elsewhere)}) "
                    "are left out.") if elsewhere else ""),
        *_task_commands(scores),
        _section("Tasks", _p("Every task, with the exact command each arm ran and its "
                             "verdict; open one to see its table and the notes on each "
                             "arm's answer."),
                 _flags(scores), *(_task(scores, t, cells)
                                   for t, cells in tasks.cells_by_task(scores).items())),
        *_edges(scores),
        *_grading_sections(scores),
        _section("Correctness", shown(tables.correctness(scores), scores)),
        _section("Cost", _p(f"Without a model in the loop: {scores['definitions']['cost.unit']}."),
                 shown(tables.cost(scores), scores),
                 f"<h3>Paired cost ratio against the baseline ({_e(suite['baseline'])})</h3>",
                 _p(scores["definitions"]["cost"] + "."),
                 shown(tables.ratios(scores), scores) if scores["cost_ratios"] else "",
                 _disagreements(scores)),
        _section("Wall time", _p(scores["definitions"]["timing"] + "."),
                 shown(tables.timing(scores), scores), outliers(scores)),
        _section("Follow-up reach and tool calls", _p(scores["definitions"]["reach"] + "."),
                 shown(tables.reach(scores), scores)),
        _section("Where each tool wrote its state", html_table(tables.state(scores)),
                 _state_files(scores), _p("Isolation guards, as stored under guards/ARM/:"),
                 html_table(tables.guards(scores))),
        _section("Suite manifest check",
                 _p(f"The run recorded the seal {manifest['manifest_sha256']}. "
                    + (f"The scorer differs from the one sealed before the run in: "
                       f"{', '.join(changed)}." if changed else
                       "The scorer is the one sealed before the run.")),
                 html_table(tables.manifest(scores))),
        _section("Glossary", _definitions(scores)),
    ]


def render_html(scores: Mapping[str, Any]) -> str:
    """The whole page, the same bytes for the same scores."""
    run, suite = scores["run"], scores["suite"]
    title = f"{TITLE}: suite {suite['name']}, {run['date']}"
    plots, script = _plots(scores)
    # The answer first (verdict, where peers win), then the plots, then the detail.
    parts = _sections(scores)
    sections = [*parts[:2], ("Plots", plots), *parts[2:]]
    nav = "\n".join(f'<li><a href="#{_slug(t)}">{_e(t)}</a></li>' for t, _ in sections)
    head = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_e(title)}</title>\n<style>{STYLE}</style>\n</head>")
    intro = [
        f"<h1>{_e(title)}</h1>",
        f'<nav aria-label="Contents"><ol>\n{nav}\n</ol></nav>',
    ]
    body = "\n".join([*intro, *(html for _, html in sections)])
    return f"{head}\n<body>\n<main>\n{body}\n</main>\n{script}\n</body>\n</html>\n"


# ---- files ------------------------------------------------------------------------------------

def path_beside(markdown: Path) -> Path:
    """Where the page goes: beside the Markdown document, with its name (results.html)."""
    markdown = Path(markdown)
    if markdown.suffix == SUFFIX:
        raise ValueError(f"{markdown} is where the HTML page would go")
    return markdown.with_suffix(SUFFIX)


def write(scores: Mapping[str, Any], target: Path) -> bool:
    """Render the page to `target` atomically; False when it already held these bytes."""
    text = render_html(scores)
    target = Path(target)
    if target.is_file() and target.read_text(encoding="utf-8") == text:
        return False
    atomic_write_text(target, text)
    return True


def _clip(lines: Sequence[str]) -> list[str]:
    """Lines cut short and escaped for the terminal they are printed on."""
    return [terminal(line if len(line) <= MAX_DIFF_LINE else
                     f"{line[:MAX_DIFF_LINE]}... ({len(line):,} characters)") for line in lines]


def differences(scores: Mapping[str, Any], target: Path) -> list[str]:
    """The first differing lines between a fresh page and the one at `target` (long lines,
    such as the inlined plotly.js, cut short); empty when byte-identical."""
    target = Path(target)
    if not target.is_file():
        return [f"{target} does not exist"]
    committed = target.read_bytes()
    rendered = render_html(scores).encode("utf-8")
    if committed == rendered:
        return []
    diff = difflib.unified_diff(committed.decode("utf-8", "replace").splitlines(),
                                rendered.decode("utf-8").splitlines(),
                                "committed", "rendered", lineterm="", n=1)
    return _clip(list(diff)[:40]) or ["bytes differ"]


__all__ = ["PLOT_IDS", "differences", "html_table", "path_beside", "render_html", "write"]
