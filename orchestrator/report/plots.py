"""The results page's three plots as plotly figures, built from scores.json alone:
correctness per arm and kind, payload tokens against correctness per arm, and the cold and
warm wall-time distributions per arm from the raw samples; and how a figure and plotly.js are
spelled inside the page's <script> elements (`html` places them)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from orchestrator.report import tables
from orchestrator.untrusted.text import visible


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


def _t(text: object) -> str:
    """A string plotly draws: it reads its text as a little HTML (<br>, <b>, entities), so a
    name is escaped to be drawn as written. Names never enter a hover template, whose %{...}
    they could otherwise use; they go in `text` or `customdata`."""
    return escape(visible(str(text)), quote=False)


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
    where a label would fall depends on the width the page is read at. Each arm's legend
    entry says how many of the suite's tasks its share is over: a share over 6 of 21 tasks
    is not one over 21."""
    data: list[dict[str, Any]] = []
    tasks = len(scores["tasks"])
    missing: list[str] = []
    for i, arm in enumerate(tables.arms(scores)):
        s = scores["summary"][arm]["all"]
        tokens, correct = s["cost"]["tokens_median"], s["correct_share"]
        if tokens is None or correct is None:
            missing.append(arm)
            continue
        name = _t(f"{arm} ({s['graded']} of {tasks} tasks)")
        data.append({"type": "scatter", "mode": "markers", "name": name, "x": [tokens],
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
    data: list[dict[str, Any]] = []
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


def figure_json(figure: Mapping[str, Any]) -> str:
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


def plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    # Either would end or confuse the <script> element: never in a plotly.js bundle so far,
    # and checked, not assumed.
    if "</script" in js.lower() or "<!--" in js:
        raise ValueError("this plotly.js cannot be inlined: it holds </script> or <!--")
    return js
