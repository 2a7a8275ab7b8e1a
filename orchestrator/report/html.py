"""The results page: `results.html` beside `results.md`, rendered from scores.json alone.

It holds the same tables as the Markdown document (built by `tables`, so the figures and their
decimals are the same) as plain HTML tables that need no JavaScript, and three plots drawn by
plotly: correctness per arm and kind, payload tokens against correctness per arm, and the cold
and warm wall-time distributions per arm from the raw samples.

The page is self-contained: plotly.js is embedded once, inline, and a Content-Security-Policy
forbids the page any fetch, so opening it never touches the network. Like the Markdown it is
deterministic: the plot divs have fixed ids, the figures are serialised as sorted JSON, and
nothing depends on when or where it is rendered, so `sandbench report RUN_DIR --check`
renders it again and compares byte for byte. The bytes depend on the plotly release (it
carries plotly.js and its templates), which the project pins.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from orchestrator.fsutil import atomic_write_text
from orchestrator.report import tables
from orchestrator.report.markdown import TITLE, disclosure
from orchestrator.untrusted.text import terminal, visible

SUFFIX = ".html"
PLOT_IDS = ("plot-correctness", "plot-cost", "plot-timing")
# Okabe-Ito colours: told apart with the common colour-vision deficiencies.
VERDICT_COLOURS = {"correct": "#009E73", "partial": "#E69F00", "wrong": "#D55E00",
                   "not_attempted": "#7F7F7F", "unscored": "#CFCFCF"}
ARM_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
               "#000000")
# A second cue beside colour, so two arms stay apart in grey print and with any colour vision.
ARM_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "x", "star",
               "triangle-down", "pentagon")
PHASE_COLOURS = {"cold": "#0072B2", "warm": "#E69F00"}
PLOT_CONFIG = {"displaylogo": False, "responsive": True}
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
# No fetch of any kind: scripts and styles only inline, images only from data: or blob: URLs
# (plotly's "download as PNG" makes one).
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
       "img-src data: blob:; base-uri 'none'; form-action 'none'")
_NUMBER = re.compile(r"-?[\d,]+(\.\d+)?")
MAX_DIFF_LINE = 160

STYLE = """
:root { color-scheme: light; }
body { font-family: FONT; margin: 0; color: #1b1b1b; background: #fff; line-height: 1.45; }
main { max-width: 1200px; margin: 0 auto; padding: 1rem 1.5rem 4rem; }
h1 { font-size: 1.6rem; margin-top: 0.5rem; }
h2 { font-size: 1.3rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05rem; margin-top: 1.4rem; }
pre { background: #f6f6f6; padding: 0.6rem 0.8rem; font-size: 0.85rem;
      white-space: pre-wrap; overflow-wrap: anywhere; }
h1, p, dd, summary, figcaption { overflow-wrap: anywhere; }
code { font-size: 0.9em; }
nav ol { columns: 3; font-size: 0.95rem; }
.table-wrap { overflow-x: auto; margin: 0.6rem 0; }
table { border-collapse: collapse; font-size: 0.88rem; }
th, td { border: 1px solid #d4d4d4; padding: 0.2rem 0.5rem; text-align: left;
         vertical-align: top; }
th { background: #f0f0f0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafafa; }
figure { margin: 1.2rem 0 2rem; }
figure h3 { margin-bottom: 0.2rem; }
.plot { width: 100%; }
figcaption { font-size: 0.9rem; color: #444; max-width: 60rem; }
details { margin: 0.4rem 0; }
summary { cursor: pointer; }
dt { font-weight: 600; margin-top: 0.5rem; }
dd { margin-left: 1.5rem; }
@media (max-width: 700px) {
  main { padding: 0.5rem 0.7rem 3rem; }
  nav ol { columns: 1; }
  h1 { font-size: 1.3rem; }
}
""".replace("FONT", FONT)


# ---- HTML pieces ------------------------------------------------------------------------------

def _e(text: object) -> str:
    """Text or an attribute value: HTML-escaped, and every control, bidi override and line
    separator shown as its escape (`untrusted.text.visible`), as in the Markdown document."""
    return escape(visible(str(text)), quote=True)


def _t(text: object) -> str:
    """A string plotly draws: it reads its text as a little HTML (<br>, <b>, entities), so a
    name is escaped to be drawn as written. Names never enter a hover template, whose %{...}
    they could otherwise use; they go in `text` or `customdata`."""
    return escape(visible(str(text)), quote=False)


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

# Under the plot, from the figure's left edge (not the plot area's, which starts after the
# axis labels): a horizontal legend wraps into rows on a narrow screen instead of running
# off its right edge, and the tool bar over the plot's top right corner never covers it.
LEGEND = {"orientation": "h", "xref": "container", "x": 0, "xanchor": "left",
          "yref": "container", "y": 0, "yanchor": "bottom", "traceorder": "normal"}


def _layout(**extra: Any) -> dict[str, Any]:
    """What every plot shares. Titles are the page's headings (they wrap on a narrow
    screen; plotly's do not); axes make room for their labels (automargin)."""
    layout = {"template": "plotly_white", "font": {"family": FONT, "size": 13},
              "margin": {"l": 10, "r": 20, "t": 40, "b": 10}, "legend": LEGEND, **extra}
    for axis in ("xaxis", "yaxis"):
        layout[axis] = {"automargin": True, **layout.get(axis, {})}
    return layout


def correctness_figure(scores: Mapping[str, Any]) -> dict[str, Any]:
    """Stacked horizontal bars: per arm and kind, how many tasks were correct ... unscored."""
    arms, kinds = tables.arms(scores), tables.kinds(scores)
    y = [[_t(tables.arm_label(scores, a)) for a in arms for _ in kinds],
         [_t(k) for _ in arms for k in kinds]]
    tallest = max((sum(scores["summary"][a][k]["counts"].values()) for a in arms for k in kinds),
                  default=0)
    data = []
    for key, label in tables.COUNT_LABELS:
        counts = [scores["summary"][a][k]["counts"][key] for a in arms for k in kinds]
        data.append({"type": "bar", "orientation": "h", "name": _t(label), "x": counts, "y": y,
                     "marker": {"color": VERDICT_COLOURS[key],
                                "line": {"color": "#ffffff", "width": 1}},
                     "text": [str(n) if n else "" for n in counts], "textposition": "inside",
                     "insidetextanchor": "middle", "textangle": 0,
                     "hovertemplate": "%{y}<br>%{fullData.name}: %{x} tasks<extra></extra>"})
    return {"data": data, "layout": _layout(
        barmode="stack", bargap=0.2, height=max(360, 150 + 30 * len(arms) * len(kinds)),
        xaxis={"title": {"text": "tasks"}, "rangemode": "tozero",
               **({"dtick": 1} if tallest <= 10 else {})},
        yaxis={"title": {"text": ""}, "autorange": "reversed"})}


def cost_figure(scores: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Per arm (every kind): median payload tokens per task against the share correct.
    Returns the figure and the arms it cannot place (no figure for one of the two).

    Arms are told apart by a legend (colour and marker shape), not by labels beside the
    points: two arms with close figures would print their labels over each other, and
    where a label would fall depends on the width the page is read at."""
    data, missing = [], []
    for i, arm in enumerate(tables.arms(scores)):
        s = scores["summary"][arm]["all"]
        tokens, correct = s["cost"]["tokens_median"], s["correct_share"]
        if tokens is None or correct is None:
            missing.append(arm)
            continue
        data.append({"type": "scatter", "mode": "markers", "name": _t(arm), "x": [tokens],
                     "y": [correct], "text": [_t(arm)],
                     "marker": {"size": 14, "color": ARM_COLOURS[i % len(ARM_COLOURS)],
                                "symbol": ARM_SYMBOLS[i % len(ARM_SYMBOLS)],
                                "line": {"color": "#ffffff", "width": 1}},
                     "customdata": [[s["graded"], s["cost"]["n"]]],
                     "hovertemplate": ("%{text}<br>median tokens (proxy): %{x:,.1~f}"
                                       "<br>share correct: %{y:.2f} of %{customdata[0]} "
                                       "graded<br>tasks with a cost: %{customdata[1]}"
                                       "<extra></extra>")})
    top = max([1, *(d["x"][0] for d in data)])
    return {"data": data, "layout": _layout(
        showlegend=True, height=480,
        xaxis={"title": {"text": "median payload tokens per task<br>"
                                 "(proxy: stdout bytes / 4)"},
               "range": [0, top * 1.15], "tickformat": ",d"},
        yaxis={"title": {"text": "share of graded tasks correct"}, "range": [-0.05, 1.12],
               "tickformat": ".0%"})}, missing


def timing_figure(scores: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Box plots with every raw sample: cold (REP 0) and warm (REP 1..N) per arm. Samples
    that enter no median (no wall time, impossible timing) are left out, as in the tables."""
    samples: dict[str, dict[str, list[tuple[float, str]]]] = {}
    for cell in scores["cells"]:
        timing, shown = cell["timing"], tables.outliers_shown(cell)
        for i, s in enumerate((timing or {}).get("samples", [])):
            if s["wall_ns"] is None or "impossible-timing" in s["flags"]:
                continue
            phase = "cold" if i == 0 else "warm"
            notes = [n for n, on in (("timed out: a lower bound", s["lower_bound"]),
                                     ("flagged outlier", s in shown)) if on]
            hover = f"{_t(cell['task'])} REP {s['rep']}" + "".join(f"<br>{n}" for n in notes)
            samples.setdefault(cell["arm"], {"cold": [], "warm": []})[phase].append(
                (s["wall_ns"] / 1e6, hover))
    arms = [a for a in tables.arms(scores) if a in samples]
    missing = [a for a in tables.arms(scores) if a not in samples]
    data = []
    for phase, label in (("cold", "cold (REP 0)"), ("warm", "warm (REP 1..N)")):
        points = [(_t(tables.arm_label(scores, a)), ms, hover)
                  for a in arms for ms, hover in samples[a][phase]]
        data.append({"type": "box", "name": label, "offsetgroup": phase, "orientation": "h",
                     "y": [p[0] for p in points], "x": [p[1] for p in points],
                     "text": [p[2] for p in points], "boxpoints": "all", "jitter": 0.5,
                     "pointpos": 0, "marker": {"size": 5, "opacity": 0.55,
                                               "color": PHASE_COLOURS[phase]},
                     "line": {"color": PHASE_COLOURS[phase]},
                     "fillcolor": "rgba(0,0,0,0)",
                     "hovertemplate": ("%{y}<br>%{text}<br>%{x:,.1f} ms<extra>" + label
                                       + "</extra>")})
    # Horizontal boxes: the arms' names are read across, never turned on their side to fit.
    return {"data": data, "layout": _layout(
        boxmode="group", boxgroupgap=0.3, height=max(360, 160 + 70 * len(arms)),
        yaxis={"title": {"text": ""}, "autorange": "reversed"},
        xaxis={"title": {"text": "in-container wall time, ms<br>(log scale)"}, "type": "log",
               "tickvals": log_ticks([x for d in data for x in d["x"]])})}, missing


# Decades a log axis may span and still carry 1-2-5 ticks, and how many decades apart its
# ticks may be at most otherwise: on a phone the plot beside the arms' names is ~120 px wide,
# where a label needs ~30 px; 1, 2 and 5 are 0.3 and 0.4 of a decade apart.
LOG_TICKS_125_MAX_DECADES = 1.0
LOG_TICKS_MAX_PER_AXIS = 3


def log_ticks(values: Sequence[float]) -> list[float]:
    """Ticks spanning `values` on a log axis that never crowd their labels, whatever the
    page's width (plotly's own put a label on every digit): 1-2-5 within a decade, powers of
    ten over a wider span, and every second or third power when the span is wider still."""
    positive = [v for v in values if v > 0]
    if not positive:
        return []
    low, high = min(positive), max(positive)
    decades = math.log10(high / low)
    steps = (1, 2, 5) if decades <= LOG_TICKS_125_MAX_DECADES else (1,)
    every = max(1, math.ceil(decades / LOG_TICKS_MAX_PER_AXIS))
    ticks, exponent = [], math.floor(math.log10(low))
    while 10.0 ** exponent <= high * 2:
        decade = 10.0 ** exponent
        ticks += [m * decade for m in steps if low / 2 <= m * decade <= high * 2]
        exponent += every
    return [float(f"{t:.6g}") for t in ticks]


def _figure_json(figure: Mapping[str, Any]) -> str:
    """The figure validated by plotly, with the page's plotly.js config, spelled as sorted
    JSON (the same spelling whichever JSON engine plotly would pick) that no string can use
    to leave the <script> element (< > & are written as JSON escapes)."""
    import plotly.graph_objects as go  # imported here: only rendering the page needs it
    import plotly.io as pio

    checked = json.loads(pio.to_json(go.Figure(figure), validate=True, engine="json"))
    checked["config"] = PLOT_CONFIG
    text = json.dumps(checked, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    # Either would end or confuse the <script> element: never in a plotly.js bundle so far,
    # and checked, not assumed.
    if "</script" in js.lower() or "<!--" in js:
        raise ValueError("this plotly.js cannot be inlined: it holds </script> or <!--")
    return js


def _figure(plot_id: str, title: str, label: str, caption: str) -> str:
    return (f"<figure>\n<h3>{_e(title)}</h3>\n"
            f'<div id="{plot_id}" class="plot" role="img" aria-label="{_e(label)}">'
            f"</div>\n<figcaption>{_e(caption)}</figcaption>\n</figure>")


def _plots(scores: Mapping[str, Any]) -> tuple[str, str]:
    """The plots section and the script that draws it."""
    correctness = correctness_figure(scores)
    cost, cost_missing = cost_figure(scores)
    timing, timing_missing = timing_figure(scores)
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
         f"shape. Cost unit: {unit}."
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
    calls = "\n".join(f'Plotly.newPlot("{pid}", {_figure_json(fig)});'
                       for pid, fig in zip(PLOT_IDS, figures, strict=True))
    script = (f"<script>\n{_plotly_js()}\n</script>\n"
              f"<script>\n{calls}\n</script>")
    return section, script


# ---- the page ---------------------------------------------------------------------------------

def _task(scores: Mapping[str, Any], task_id: str) -> str:
    task = scores["tasks"][task_id]
    summary, cells, commands = tables.task_summary(scores, task_id)
    verdicts = ", ".join(f"{c['arm']} {c['verdict'].replace('_', ' ')}" for c in cells)
    return "\n".join(p for p in [
        f'<details id="task-{_e(_slug(task_id))}">',
        (f"<summary><strong>{_e(task_id)}</strong> ({_e(task['kind'])}, "
         f"{_e(task['language'])}): {_e(verdicts)}</summary>"),
        _p(summary),
        html_table(tables.task_cells(scores, task_id)),
        _p("Commands, exactly as each arm ran them (REP 0):") if commands else "",
        _pre("\n".join(commands)) if commands else "",
        "</details>"] if p)


def outliers(scores: Mapping[str, Any]) -> str:
    """The flagged samples (with the sample size a flag needs), as in the Markdown."""
    head, flagged = tables.outliers(scores)
    listed = "".join(f"<li>{_e(line)}</li>" for line in flagged)
    return _p(head) + (f"\n<ul>{listed}</ul>" if listed else "")


def _definitions(scores: Mapping[str, Any]) -> str:
    items = "\n".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>"
                      for k, v in sorted(scores["definitions"].items()))
    return f"<dl>\n{items}\n</dl>"


def _edges(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The Rust edges family's figures and site classes, when the run has edge cells (every
    non-match and miss is in scores.json and the Markdown document)."""
    cells = tables.edge_cells(scores)
    if not cells:
        return []
    parts = [_p(scores["definitions"][f"correct.{k}"]) for k in ("call-edges", "test-edges")
             if f"correct.{k}" in scores["definitions"]]
    for c in cells:
        parts += [f"<h3>{_e(c['arm'])}: {_e(c['task'])} ({_e(c['verdict'])})</h3>",
                  html_table(tables.edge_figures(c))]
    first = next((c for c in cells if "site_classes" in c["edges"]), None)
    if first is not None:
        parts += ["<h3>Site classes of the oracle's references</h3>",
                  html_table(tables.site_classes(first))]
    return [_section("Edges", *parts)]


def _sections(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    suite, corpus, manifest = scores["suite"], scores["corpus"], scores["manifest"]
    not_attempted = tables.not_attempted(scores)
    elsewhere = tables.declared_elsewhere(scores)
    leaders = tables.leaders_trimmed(scores)
    languages = ", ".join(f"{k} {v}" for k, v in sorted(corpus["languages"].items()))
    changed = manifest["scorer_changed"]
    return [
        _section("Scorecard", _p("Tasks per arm and band (all: every kind)."),
                 shown(tables.scorecard(scores), scores)),
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
                                  for k in sorted(suite["declarations"])))),
        _section("Not attempted",
                 _p("Excluded from that arm's denominators and counted in its own column.")
                 if not_attempted[1] else _p("Every arm attempts every kind."),
                 html_table(not_attempted) if not_attempted[1] else "",
                 _p(f"Declarations for kinds this suite has no task of ({', '.join(elsewhere)}) "
                    "are left out.") if elsewhere else ""),
        _section("Tasks", _p("Every task, with the exact command each arm ran and its "
                             "verdict; open one to see its table. The per-arm notes (files "
                             "missed or outside the truth, rows that do not reach) are in the "
                             "Markdown document beside this page."),
                 *(_task(scores, t) for t in scores["tasks"])),
        *_edges(scores),
        _section("Correctness", shown(tables.correctness(scores), scores)),
        _section("Cost", _p(f"Without a model in the loop: {scores['definitions']['cost.unit']}."),
                 shown(tables.cost(scores), scores),
                 f"<h3>Paired cost ratio against the baseline ({_e(suite['baseline'])})</h3>",
                 _p(scores["definitions"]["cost"] + "."),
                 shown(tables.ratios(scores), scores) if scores["cost_ratios"] else
                 _p(tables.no_ratio(scores))),
        _section("Wall time", _p(scores["definitions"]["timing"] + "."),
                 shown(tables.timing(scores), scores), outliers(scores)),
        _section("Follow-up reach and tool calls", _p(scores["definitions"]["reach"] + "."),
                 shown(tables.reach(scores), scores)),
        _section("Where each tool wrote its state", html_table(tables.state(scores)),
                 _p("Isolation guards, as stored under guards/ARM/:"),
                 html_table(tables.guards(scores))),
        _section("Suite manifest check",
                 _p(f"The run recorded the seal {manifest['manifest_sha256']}. "
                    + (f"The scorer differs from the one sealed before the run in: "
                       f"{', '.join(changed)}." if changed else
                       "The scorer is the one sealed before the run.")),
                 html_table(tables.manifest(scores))),
        _section("Where peers win", _p("One row per band x metric, every arm's figure beside "
                                       "the leader's (n/a: no figure). "
                                       + tables.leaders_statement(scores)),
                 _p(tables.leaders_left_out(leaders)), html_table(leaders.table)),
        _section("Definitions", _definitions(scores)),
    ]


def render_html(scores: Mapping[str, Any]) -> str:
    """The whole page, the same bytes for the same scores."""
    run, suite = scores["run"], scores["suite"]
    title = f"{TITLE}: suite {suite['name']}, {run['date']}"
    env_lines = disclosure(scores["environment"]).split("\n")[1:-1]  # inside its fence
    plots, script = _plots(scores)
    sections = [("Plots", plots), *_sections(scores)]
    nav = "\n".join(f'<li><a href="#{_slug(t)}">{_e(t)}</a></li>' for t, _ in sections)
    head = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_e(title)}</title>\n<style>{STYLE}</style>\n</head>")
    intro = [
        f"<h1>{_e(title)}</h1>",
        _pre("\n".join(env_lines)),
        _p(f"Run {run['run_id']}, sandbench {run['sandbench_version']}, Docker engine "
           f"{scores['environment']['engine']['version']}; {tables.exec_path_text(run)}. "
           "Rendered by sandbench report from "
           f"scores.json ({scores['schema']}), like the Markdown document beside it, with the "
           "same tables; sandbench report RUN_DIR --check renders both again and compares "
           "byte for byte. Nothing on this page is fetched from the network. "
           + tables.METHOD_TEXT),
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


__all__ = ["PLOT_IDS", "correctness_figure", "cost_figure", "differences", "html_table",
           "path_beside", "render_html", "timing_figure", "write"]
