"""The comparison as Markdown and as a self-contained HTML page: one list of sections (a title,
a sentence, a table of plain strings) rendered twice, so the two carry the same content. Every
value is escaped where it is shown (an arm's tool version or a task id is whatever its author
or tool wrote): `markdown_cell` in Markdown, HTML-escaped `visible` text in the page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from orchestrator.compare.model import ALL_KINDS, ONLY_A, ONLY_B, TRANSITIONS
from orchestrator.untrusted.text import markdown_cell, markdown_inline, visible

TITLE = "Run 0 beside Run 1"
# The model says a and b; the documents say run 0 and run 1 throughout.
_SPELLED = {ONLY_A: "only in run 0", ONLY_B: "only in run 1"}
NONE = "none"


@dataclass(frozen=True)
class Section:
    title: str
    note: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def _num(x: float | None, places: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{places}f}"


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _value(x: Any) -> str:
    return "(none)" if x is None else str(x)


def _verdict(side: dict[str, Any] | None) -> str:
    return "(no cell)" if side is None else str(side["verdict"])


def _transition(name: str) -> str:
    return _SPELLED.get(name, name.replace("_", " "))


def _paired(figures: dict[str, Any]) -> str:
    return (f"{_num(figures['median_of_ratios'])} / {_num(figures['ratio_of_medians'])} "
            f"({figures['pairs']})")


def _share(side: dict[str, Any]) -> str:
    return f"{side['correct']}/{side['graded']}"


def _listing(title: str, note: str, items: Sequence[dict[str, Any]]) -> Section:
    return Section(f"{title} ({len(items)})", note, ("arm", "kind", "task", "run 0", "run 1"),
                   tuple((i["arm"], i["kind"], i["task"], _value(i["a"]), _value(i["b"]))
                         for i in items))


def sections(model: dict[str, Any]) -> list[Section]:
    """Regressions first and each listed on its own: an improvement elsewhere never hides one."""
    transitions = tuple(_transition(t) for t in TRANSITIONS)
    group_rows = tuple(
        (g["arm"], g["kind"], *(str(g["counts"][t]) for t in TRANSITIONS),
         f"{_share(g['a'])} → {_share(g['b'])}",
         f"{_num(g['a']['recall_median'])} → {_num(g['b']['recall_median'])}",
         _signed(g["recall_delta"]), _signed(g["precision_delta"]),
         _paired(g["cost"]), _paired(g["time"])) for g in model["groups"])
    cell_rows = tuple(
        (c["arm"], c["kind"], c["task"], _verdict(c["a"]), _verdict(c["b"]),
         _transition(c["transition"]), _signed(c["recall_delta"]),
         _signed(c["precision_delta"]), _num(c["cost_ratio"]), _num(c["time_ratio"]))
        for c in model["cells"])
    return [
        _listing("Regressions", "Cells graded lower in run 1 than in run 0.",
                 model["regressions"]),
        _listing("Improvements", "Cells graded higher in run 1 than in run 0.",
                 model["improvements"]),
        _listing("Newly unscored", "Cells graded in run 0 and not graded in run 1.",
                 model["newly_unscored"]),
        Section("Per arm and kind", f"Each transition's number of cells; correct, medians and "
                f"deltas over the cells graded in both runs; cost (tokens) and time (warm "
                f"median, ms) as run 1 over run 0: median of the per-task ratios / ratio of "
                f"the medians (tasks paired). Kind {ALL_KINDS!r} is every kind of the arm.",
                ("arm", "kind", *transitions, "correct", "recall median",
                 "recall delta", "precision delta", "cost ratio", "time ratio"), group_rows),
        _listing("Answers changed without a grade change", "Graded the same in both runs, "
                 "with a different graded answer.", model["answer_changes"]),
        Section("Per task", "Every arm x task cell of either run.",
                ("arm", "kind", "task", "run 0", "run 1", "transition", "recall delta",
                 "precision delta", "cost ratio", "time ratio"), cell_rows),
        Section(f"Environment differences ({len(model['environment'])})",
                "Every fact of what the runs ran on that differs (image ids, tool versions, "
                "engines, runtimes, host).", ("scope", "key", "run 0", "run 1"),
                tuple((d["scope"], d["key"], _value(d["a"]), _value(d["b"]))
                      for d in model["environment"])),
    ]


def _runs(model: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f"Run {i}", f"{r['run_id']} (suite {r['suite']}, seal {r['manifest_sha256']}, "
                         f"sandbench {r['sandbench_version']}, {r['date']})")
            for i, r in enumerate((model["runs"]["a"], model["runs"]["b"]))]


def markdown(model: dict[str, Any]) -> str:
    lines = [f"# {TITLE}", ""]
    lines += [f"- {label}: {markdown_inline(text)}" for label, text in _runs(model)]
    lines += [f"- Comparable: {markdown_inline(model['comparable'])}", ""]
    for section in sections(model):
        lines += [f"## {section.title}", "", section.note, ""]
        if not section.rows:
            lines += [NONE, ""]
            continue
        lines.append("| " + " | ".join(section.columns) + " |")
        lines.append("|" + "|".join("---" for _ in section.columns) + "|")
        lines += ["| " + " | ".join(markdown_cell(v) for v in row) + " |"
                  for row in section.rows]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _h(text: object) -> str:
    return escape(visible(str(text)), quote=True)


# Nothing to fetch and nothing to run: the page is its own text and one style sheet.
_CSP = "default-src 'none'; style-src 'unsafe-inline'"
_STYLE = ("body{font-family:sans-serif;margin:2em;color:#222}"
          "table{border-collapse:collapse;margin:0.5em 0 1.5em}"
          "th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;font-size:90%}"
          "th{background:#f3f3f3}")


def html(model: dict[str, Any]) -> str:
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
           f"<title>{_h(TITLE)}</title>", f"<style>{_STYLE}</style>", "</head>", "<body>",
           f"<h1>{_h(TITLE)}</h1>", "<ul>"]
    out += [f"<li>{_h(label)}: {_h(text)}</li>" for label, text in _runs(model)]
    out += [f"<li>Comparable: {_h(model['comparable'])}</li>", "</ul>"]
    for section in sections(model):
        out += [f"<h2>{_h(section.title)}</h2>", f"<p>{_h(section.note)}</p>"]
        if not section.rows:
            out.append(f"<p>{NONE}</p>")
            continue
        out.append("<table>")
        out.append("<tr>" + "".join(f"<th>{_h(c)}</th>" for c in section.columns) + "</tr>")
        out += ["<tr>" + "".join(f"<td>{_h(v)}</td>" for v in row) + "</tr>"
                for row in section.rows]
        out.append("</table>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"
