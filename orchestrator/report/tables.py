"""The document's tables as data: (column headers, rows of formatted cells), built from
scores.json alone, so the Markdown document, the terminal scorecard and any other renderer
show the same figures with the same fixed decimals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.kinds import ALL_KINDS
from orchestrator.score.environment import baseline_gap
from orchestrator.score.listed import full_length
from orchestrator.score.timing import MIN_OUTLIER_SAMPLES

Table = tuple[list[str], list[list[str]]]
# Where the method is told. Named as a path in sandbench's source tree, not linked: the
# document lives in RUN_DIR under a bench root that may be anywhere, is read away from any
# checkout, and a relative link from it would resolve to nothing.
METHOD_DOC = "docs/methodology.md"
METHOD_TEXT = (f"The method (task kinds, bands, metrics, disclosure) is described in "
               f"{METHOD_DOC} in sandbench's source tree.")
BAND_ORDER = (*ALL_KINDS, "all")
NA = "n/a"
COUNT_LABELS = (("correct", "correct"), ("partial", "partial"), ("wrong", "wrong"),
                ("not_attempted", "not attempted"), ("unscored", "unscored"))
METRIC_FORMAT = {"correct_share": "share", "recall_median": "share",
                 "precision_median": "share", "tokens_median": "counted", "cold_ms": "one",
                 "warm_ms": "one", "reach_share": "share", "calls_median": "counted",
                 "install_seconds": "two", "index_seconds": "two", "on_disk_bytes": "int"}
# What a cell holds when it carries no information: a row or column of nothing else is left
# out of a table (`trimmed`), and the document says what was left out.
EMPTY = frozenset({"0", NA, "none"})


def share(value: float | None) -> str:
    return NA if value is None else f"{value:.2f}"


def one(value: float | None) -> str:
    return NA if value is None else f"{value:,.1f}"


def two(value: float | None) -> str:
    return NA if value is None else f"{value:,.2f}"


def integer(value: int | float | None) -> str:
    return NA if value is None else f"{int(value):,}"


def counted(value: int | float | None) -> str:
    """A median of counts (tokens, bytes, calls): a whole number, or halfway between two
    (the median of an even number of them), printed as such: `1,577`, `281.5`."""
    if value is None:
        return NA
    return f"{int(value):,}" if value == int(value) else f"{value:,.1f}"


FORMATTERS = {"share": share, "one": one, "two": two, "int": integer, "counted": counted}


def bands(scores: Mapping[str, Any]) -> list[str]:
    """The task kinds in the methodology's order, then `all` (scores.json sorts its keys)."""
    present = set().union(*(set(per_band) for per_band in scores["summary"].values()))
    return [b for b in BAND_ORDER if b in present]


def kinds(scores: Mapping[str, Any]) -> list[str]:
    return [b for b in bands(scores) if b != "all"]


def arms(scores: Mapping[str, Any]) -> list[str]:
    return list(scores["suite"]["arms"])


def arm_label(scores: Mapping[str, Any], arm: str) -> str:
    info = scores["arms"][arm]
    tags = []
    if info["baseline"]:
        tags.append("baseline")
    if info["status"] != "available":
        tags.append(info["status"])
    return arm + (f" ({', '.join(tags)})" if tags else "")


def scorecard(scores: Mapping[str, Any]) -> Table:
    columns = ["arm", "kind", *(label for _, label in COUNT_LABELS)]
    rows = []
    for arm in arms(scores):
        for band in bands(scores):
            counts = scores["summary"][arm][band]["counts"]
            rows.append([arm_label(scores, arm), band, *(str(counts[k]) for k, _ in COUNT_LABELS)])
    return columns, rows


def correctness(scores: Mapping[str, Any]) -> Table:
    columns = ["arm", "kind", "graded", "correct share", "median recall", "median precision",
               "failures"]
    rows = []
    for arm in arms(scores):
        for band in bands(scores):
            s = scores["summary"][arm][band]
            failures = ", ".join(f"{k} {v}" for k, v in s["failures"].items()) or "none"
            rows.append([arm, band, str(s["graded"]), share(s["correct_share"]),
                         share(s["recall_median"]), share(s["precision_median"]), failures])
    return columns, rows


def cost(scores: Mapping[str, Any]) -> Table:
    columns = ["arm", "kind", "tasks", "median tokens (proxy)", "median bytes", "total bytes"]
    rows = []
    for arm in arms(scores):
        for band in bands(scores):
            c = scores["summary"][arm][band]["cost"]
            rows.append([arm, band, str(c["n"]), counted(c["tokens_median"]),
                         counted(c["bytes_median"]), integer(c["bytes_total"])])
    return columns, rows


def ratios(scores: Mapping[str, Any]) -> Table:
    columns = ["arm", "kind", "paired tasks", "tasks with no ratio", "median of ratios",
               "ratio of medians", "the two forms"]
    rows = []
    for arm in arms(scores):
        per_band = scores["cost_ratios"].get(arm)
        for band in bands(scores) if per_band else []:
            r = per_band[band]
            verdict = NA if r["median_of_ratios"] is None else (
                "disagree" if r["disagreement"] else "agree")
            rows.append([arm, band, str(r["pairs"]), str(r["undefined"]),
                         two(r["median_of_ratios"]), two(r["ratio_of_medians"]), verdict])
    return columns, rows


def no_ratio(scores: Mapping[str, Any]) -> str:
    """Why there is no cost ratio at all: the baseline was not measured, or no other arm
    was."""
    baseline = scores["suite"]["baseline"]
    gap = baseline_gap(baseline, scores["arms"][baseline]["status"])
    if gap:
        return f"No cost ratio could be computed because {gap}."
    return "No arm besides the baseline was measured, so there is no ratio."


def outliers_shown(cell: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A cell's warm samples the scorer flagged as outliers (only in a cell with the warm
    samples a flag needs, MIN_OUTLIER_SAMPLES)."""
    t = cell["timing"]
    return [] if t is None else [s for s in t["samples"][1:] if s["outlier"]]


def timing(scores: Mapping[str, Any]) -> Table:
    """Cold and warm medians per arm and band; outliers counted only where a cell has the
    samples to support one (`outliers_shown`)."""
    columns = ["arm", "kind", "cold ms (median)", "warm ms (median)", "tasks cold", "tasks warm",
               "outliers flagged"]
    flagged: dict[tuple[str, str], int] = {}
    for c in scores["cells"]:
        for band in (c["kind"], "all"):
            flagged[c["arm"], band] = flagged.get((c["arm"], band), 0) + len(outliers_shown(c))
    rows = []
    for arm in arms(scores):
        for band in bands(scores):
            t = scores["summary"][arm][band]["timing"]
            rows.append([arm, band, one(t["cold_ms"]), one(t["warm_ms"]), str(t["cold_n"]),
                         str(t["warm_n"]), str(flagged.get((arm, band), 0))])
    return columns, rows


def outliers(scores: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The sentence on outliers (with the sample size a flag needs) and one line per sample
    shown as an outlier."""
    need, most = MIN_OUTLIER_SAMPLES, warm_samples_per_cell(scores)
    flagged = []
    for c in scores["cells"]:
        for s in outliers_shown(c):
            z = "inf" if s["z"] is None else f"{s['z']:.1f}"
            flagged.append(f"{c['arm']} / {c['task']} REP {s['rep']}: "
                           f"{s['wall_ns'] / 1e6:,.1f} ms, modified z {z}")
    rule = (f"An outlier is shown only in a cell with at least {need} warm samples: from fewer, "
            "the MAD is set by one or two samples and any z-score is noise.")
    if most < need:
        return (f"{rule} No cell here has that many (at most {most}), so no sample is flagged; "
                "the z-score of every sample is in scores.json."), []
    if not flagged:
        return f"{rule} No sample is flagged as an outlier.", []
    return f"{rule} Flagged outliers (kept in every median):", flagged


def warm_samples_per_cell(scores: Mapping[str, Any]) -> int:
    """The most warm samples any cell has (0 with none)."""
    return max((c["timing"]["warm_n"] for c in scores["cells"] if c["timing"]), default=0)


def reach(scores: Mapping[str, Any]) -> Table:
    columns = ["arm", "kind", "reaches", "fails", "empty", "unverifiable", "share",
               "why rows failed", "median calls", "total calls"]
    rows = []
    for arm in arms(scores):
        for band in bands(scores):
            s = scores["summary"][arm][band]
            r, calls = s["reach"], s["calls"]
            why = ", ".join(f"{k} {v}" for k, v in r["row_problems"].items()) or "none"
            rows.append([arm, band, str(r["reaches"]), str(r["fails"]), str(r["empty"]),
                         str(r["unverifiable"]), share(r["share"]), why,
                         counted(calls["median"]), str(calls["total"])])
    return columns, rows


def break_even(entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return "baseline"
    kind = entry["kind"]
    if kind == "after":
        return f"after {entry['tasks']:,} tasks"
    if kind == "ahead-until":
        return f"ahead until {entry['tasks']:,} tasks"
    if kind == "immediate":
        return "immediate"
    if kind == "never":
        return "never"
    return f"unknown ({entry['why']})"


def setup(scores: Mapping[str, Any]) -> Table:
    columns = ["arm", "status", "tool version", "install s", "index build s", "index outcome",
               "on disk bytes", "image bytes", "break-even vs baseline"]
    rows = []
    for arm in arms(scores):
        info, s = scores["arms"][arm], scores["setup"][arm]
        if s is None:
            rows.append([arm, info["status"], info["tool_version"] or NA, NA, NA, NA, NA, NA,
                         NA])
            continue
        index = s["index"]
        rows.append([arm, info["status"], info["tool_version"] or NA, two(s["install_seconds"]),
                     "no index" if index is None else two(index["seconds"]),
                     "n/a" if index is None else index["outcome"], integer(s["on_disk_bytes"]),
                     integer(s["image_size_bytes"]), break_even(s["break_even"])])
    return columns, rows


def failures(scores: Mapping[str, Any]) -> Table:
    """Failed cells by kind (graded wrong) and unscored cells by kind (not the tool's
    answer), per arm: every kind the scorer knows (`trimmed` leaves out the empty ones)."""
    listed: dict[str, int] = next(iter(scores["failures"].values()), {})
    failed = sorted(k for k in listed if f"failure.{k}" in scores["definitions"])
    kinds_seen = failed + sorted(k for k in listed if k not in failed)
    columns = ["arm", *(f"wrong: {k}" for k in failed),
               *(f"unscored: {k}" for k in kinds_seen[len(failed):])]
    rows = [[arm_label(scores, arm), *(str(scores["failures"][arm][k]) for k in kinds_seen)]
            for arm in arms(scores)]
    return columns, rows


@dataclass(frozen=True)
class Trimmed:
    """A table without its rows and columns that carry no information, and what was left
    out: the key cells of each row, the header of each column."""
    table: Table
    rows: list[list[str]]
    columns: list[str]


def trimmed(table: Table, keys: int, empty: frozenset[str] = EMPTY) -> Trimmed:
    """Leave out every row whose figures (the cells after its `keys` key cells) are all
    `empty`, then every figure column that is `empty` in each row left."""
    columns, rows = table
    kept = [r for r in rows if any(v not in empty for v in r[keys:])]
    gone = [r[:keys] for r in rows if r not in kept]
    useful = [i for i in range(len(columns))
              if i < keys or any(r[i] not in empty for r in kept)]
    return Trimmed(([columns[i] for i in useful], [[r[i] for i in useful] for r in kept]),
                   gone, [c for i, c in enumerate(columns) if i not in useful])


def left_out(trim: Trimmed, scores: Mapping[str, Any]) -> str:
    """What `trimmed` left out of an arm x band table, and why, in a sentence ("" when
    nothing was)."""
    parts = []
    if trim.rows:
        per_arm: dict[str, list[str]] = {}
        for arm, band in trim.rows:
            per_arm.setdefault(arm, []).append(band)
        every = len(bands(scores))
        groups = [f"{arm} ({'every kind' if len(b) == every else ', '.join(b)})"
                  for arm, b in per_arm.items()]
        parts.append("Left out, having no figure (no graded task there; the scorecard says "
                     f"why): {'; '.join(groups)}.")
    if trim.columns:
        parts.append("Left out, being 0 or none in every row shown: "
                     f"{', '.join(trim.columns)}.")
    return " ".join(parts)


FAILURES_TEXT = ("Every cell that failed carries the cause decided when it failed: an exec outcome "
                 "from its record, or a parse error. A failed cell is wrong; an unscored one "
                 "(its sandbox or arm never gave the tool a chance) is never counted as the "
                 "tool's wrong answer.")


def failure_kinds(trim: Trimmed, scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The failure and unscored causes a trimmed failures table shows, with their meaning."""
    shown_kinds = {c.split(": ", 1)[1] for c in trim.table[0][1:]}
    defs = scores["definitions"]
    return [(key.split(".", 1)[1], defs[key]) for key in sorted(defs)
            if key.startswith(("failure.", "unscored.")) and key.split(".", 1)[1] in shown_kinds]


def failures_left_out(trim: Trimmed) -> str:
    """What `trimmed` left out of the failures table, in a sentence."""
    if not trim.table[1]:
        return "No cell failed and none is unscored."
    parts = []
    if trim.columns:
        parts.append(f"Left out: the {len(trim.columns)} causes no cell had (each defined "
                     "under Glossary)")
    if trim.rows:
        arms_listed = ", ".join(r[0] for r in trim.rows)
        parts.append(f"{'and' if parts else 'Left out:'} the arms with no failed or unscored "
                     f"cell ({arms_listed})")
    return " ".join(parts) + "." if parts else ""


def suite_kinds(scores: Mapping[str, Any]) -> set[str]:
    return {t["kind"] for t in scores["tasks"].values()}


def not_attempted(scores: Mapping[str, Any]) -> Table:
    """The kinds each arm declares it cannot express, among the kinds the suite has tasks
    of (`declared_elsewhere` names the others)."""
    columns = ["arm", "kind", "tasks", "reason (quoted from the tool's docs)", "source"]
    per_kind: dict[str, int] = {}
    for task in scores["tasks"].values():
        per_kind[task["kind"]] = per_kind.get(task["kind"], 0) + 1
    rows = []
    for arm in arms(scores):
        for kind, entry in scores["arms"][arm]["not_attempted"].items():
            if kind not in per_kind:
                continue
            n = per_kind[kind]
            rows.append([arm, kind, str(n), f"\"{entry['reason']}\"", entry["source"]])
    return columns, rows


def declared_elsewhere(scores: Mapping[str, Any]) -> list[str]:
    """Kinds some arm declares it cannot express that the suite has no task of."""
    declared = {k for a in arms(scores) for k in scores["arms"][a]["not_attempted"]}
    return [k for k in ALL_KINDS if k in declared - suite_kinds(scores)]


def manifest(scores: Mapping[str, Any]) -> Table:
    columns = ["file", "kind", "status", "sealed sha256", "found sha256"]
    rows = [[r["file"], r["kind"], r["status"], (r["sealed_sha256"] or NA)[:12],
             (r["found_sha256"] or NA)[:12]] for r in scores["manifest"]["inputs"]]
    return columns, rows


def state(scores: Mapping[str, Any]) -> Table:
    columns = ["arm", "state directory (mounted at /state)", "files", "bytes",
               "corpus copy changes", "bytes added to the corpus copy"]
    rows = []
    for arm in arms(scores):
        s = scores["state"][arm]
        if s is None:
            rows.append([arm, NA, NA, NA, NA, NA])
            continue
        rows.append([arm, s["state_dir"], integer(listed(s, "state_files")),
                     integer(s["state_bytes"]), integer(listed(s, "corpus_changes")),
                     integer(s["corpus_added_bytes"])])
    return columns, rows


def guards(scores: Mapping[str, Any]) -> Table:
    columns = ["arm", "guards checked", "failed", "verdict"]
    rows = []
    for arm in arms(scores):
        g = scores["guards"][arm]
        verdict = NA if g["ok"] is None else "pass" if g["ok"] else "refused"
        rows.append([arm, str(g["checked"]), ", ".join(g["failed"]) or "none", verdict])
    return columns, rows


def exec_path_text(run: Mapping[str, Any]) -> str:
    """How the run's commands reached their containers, in words for the documents."""
    if run.get("exec_path", "docker-exec") == "resident":
        return ("every command ran through the resident executor (a request on the "
                "container's PID 1 attach stream, no docker exec per call)")
    return "every command ran through one docker exec"


TERMINAL_SCORECARD_COLUMNS = ["arm", "kind", *(label for _, label in COUNT_LABELS)]


def terminal_scorecard(scores: Mapping[str, Any]) -> list[dict[str, str]]:
    """The scorecard's rows, one per arm and kind (then `all`), under worded column names:
    a terminal reader needs no legend to tell the counts apart."""
    return [dict(zip(TERMINAL_SCORECARD_COLUMNS, row, strict=True))
            for row in scorecard(scores)[1]]


def shown(values: Sequence[str], limit: int = 20, total: int | None = None) -> list[str]:
    """The first `limit` of a list, and how many more there are of its `total` (its length
    unless scores.json holds only its first ones: `listed`), and where they are."""
    total = len(values) if total is None else total
    head = list(values[:limit])
    where = "scores.json" if total == len(values) else f"the first {len(values):,} in scores.json"
    return head + ([f"... {total - len(head):,} more ({where})"] if total > len(head) else [])


def listed(state: Mapping[str, Any], key: str) -> int:
    """How many names a state list had: those scores.json holds or cut (`full_length`) and
    those state.json left out."""
    return full_length(state, key) + int((state.get(f"{key}_omitted") or {}).get("count", 0))
