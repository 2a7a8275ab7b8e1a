"""Correctness per task kind, by the methodology's bands, with the raw recall and precision
printed beside every grade so that a reader can regrade under other bands.

The suite declares what the methodology leaves open, and the grades read it from there:
`top_k` (a ranked `locate` or `e2e-retrieval` answer is cut at its first top_k distinct
files), `precision_cap` (an `impact` answer naming more files than this, the seed not
counted, is over the cap) and the `bands` thresholds; its `[grading]` rules (a task's own
over them, `Suite.rules`) say whether answers are cut at all, whether the cap is that number
or a multiple of the task's graded set, and whether an answer over the cap is wrong or graded
by the bands at most partial. Declaring none grades as before the rules existed.

An answer is the list of distinct files its rows name, in the order the tool printed them.
Paths are compared after normalisation (`./` dropped, the arm's `/corpus/` mount prefix
dropped), so a tool that prints absolute container paths still names the file it names;
whether it printed a followable path is reach's question, not this one.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from orchestrator.score.numbers import at_least, r6, ratio
from orchestrator.suite import GradingRules, Suite, Task
from orchestrator.untrusted.strings import original, portable

CORPUS_MOUNT = "/corpus/"
VERDICTS = ("correct", "partial", "wrong")
RANK = {v: i for i, v in enumerate(reversed(VERDICTS))}  # wrong < partial < correct
FILE_KINDS = ("locate", "references", "impact", "e2e-retrieval")  # the kinds graded here


class RowLike(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def line(self) -> int | None: ...
    @property
    def reason(self) -> str | None: ...


@dataclass(frozen=True)
class Grade:
    verdict: str
    recall: Fraction | None
    precision: Fraction | None
    answer: tuple[str, ...]  # the graded files, after the cut (locate, e2e) or the seed (impact)
    files_named: int  # distinct files the whole output named
    hits: tuple[str, ...]
    missed: tuple[str, ...]
    outside: tuple[str, ...]  # named, graded, and in no truth set of the task
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "recall": r6(self.recall),
                "precision": r6(self.precision), "answer": list(self.answer),
                "files_named": self.files_named, "hits": list(self.hits),
                "missed": list(self.missed), "outside": list(self.outside),
                "notes": list(self.notes)}


def normalise(path: str) -> str:
    """The repo-relative spelling a path is compared under: a backslash the tool wrote is a
    separator; one that spells a byte of a portable name (`untrusted.strings`) is not, so two
    names stay two."""
    text = portable(original(path).replace("\\", "/"))
    if text.startswith(CORPUS_MOUNT):
        text = text[len(CORPUS_MOUNT):]
    text = posixpath.normpath(text) if text else text
    return text.removeprefix("./")


def answer_files(rows: Sequence[RowLike]) -> list[str]:
    """Distinct files in the order the output first names them."""
    seen: dict[str, None] = {}
    for row in rows:
        if row.path:
            seen.setdefault(normalise(row.path), None)
    return list(seen)


def _split(answer: Sequence[str], truth: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    named = set(answer)
    return (tuple(t for t in truth if t in named), tuple(t for t in truth if t not in named))


def _names_type(rows: Sequence[RowLike], files: set[str], types: Sequence[str]) -> bool:
    patterns = [re.compile(rf"(?<![A-Za-z0-9_]){re.escape(t)}(?![A-Za-z0-9_])") for t in types]
    return any(row.reason and row.path and normalise(row.path) in files
               and any(p.search(row.reason) for p in patterns) for row in rows)


def _cut(files: list[str], top_k: int | None) -> list[str]:
    """A ranked answer cut at its first top_k files; whole when the rules say `none`."""
    return files if top_k is None else files[:top_k]


def _cut_notes(files: Sequence[str], top_k: int | None) -> list[str]:
    return [f"cut at the first {top_k} of {len(files)} files"] \
        if top_k is not None and len(files) > top_k else []


def grade_locate(rows: Sequence[RowLike], task: Task, top_k: int | None) -> Grade:
    files = answer_files(rows)
    cut = _cut(files, top_k)
    primary: str = task.truth["primary"]
    touched = [t for t in task.truth.get("touched", []) if t != primary]
    truth = [primary, *touched]
    hits, missed = _split(cut, truth)
    notes = _cut_notes(files, top_k)
    if primary in cut:
        verdict = "correct"
    elif any(t in cut for t in touched):
        verdict = "partial"
        notes.append("names another touched file, not the primary")
    elif _names_type(rows, set(cut) - {primary}, task.truth.get("types", [])):
        verdict = "partial"
        notes.append("names the right type in the wrong file")
    else:
        verdict = "wrong"
    return Grade(verdict, ratio(len(hits), len(truth)), ratio(len(hits), len(cut)), tuple(cut),
                 len(files), hits, missed, tuple(f for f in cut if f not in truth), tuple(notes))


def grade_references(rows: Sequence[RowLike], task: Task, bands: dict[str, float]) -> Grade:
    files = answer_files(rows)
    core: list[str] = list(task.truth["core"])
    admissible = set(task.truth.get("admissible", []))
    hits, missed = _split(files, core)
    outside = tuple(f for f in files if f not in core and f not in admissible)
    inside = len(files) - len(outside)
    notes = []
    if at_least(len(hits), len(core), bands["references_correct_recall"]) and \
            len(outside) <= bands["references_correct_max_outside"]:
        verdict = "correct"
    elif at_least(len(hits), len(core), bands["references_partial_recall"]):
        verdict = "partial"
        if at_least(len(hits), len(core), bands["references_correct_recall"]):
            notes.append(f"{len(outside)} files outside core and admissible (correct allows "
                         f"{bands['references_correct_max_outside']:g})")
    else:
        verdict = "wrong"
    return Grade(verdict, ratio(len(hits), len(core)), ratio(inside, len(files)), tuple(files),
                 len(files), hits, missed, outside, tuple(notes))


def grade_impact(rows: Sequence[RowLike], task: Task, precision_cap: int,
                 bands: dict[str, float], over_cap: str = "wrong",
                 seed_rule: str = "dropped") -> Grade:
    """The seed is the question, not part of the answer: it is dropped before grading (unless
    the rules say `counted`: a named seed then stays in the answer, never a hit). An
    answer over the precision cap is wrong, whatever it contains: listing every file of the
    corpus would otherwise always earn a grade. Unless the rules say `banded`: then it is
    graded by the bands and is at most partial, never correct."""
    named = answer_files(rows)
    seed = task.input["seed"]
    files = named if seed_rule == "counted" else [f for f in named if f != seed]
    graded: list[str] = list(task.truth["graded"])
    hits, missed = _split(files, graded)
    outside = tuple(f for f in files if f not in graded)
    notes = []
    over = len(files) > precision_cap
    if over:
        notes.append(f"over the precision cap: {len(files)} files named, the cap is "
                     f"{precision_cap}" + ("; graded by the bands, at most partial"
                                           if over_cap == "banded" else ""))
    if over and over_cap != "banded":
        verdict = "wrong"
    elif not missed and not over:
        verdict = "correct"
    elif at_least(len(hits), len(graded), bands["impact_partial_fraction"]):
        verdict = "partial"
    else:
        verdict = "wrong"
    return Grade(verdict, ratio(len(hits), len(graded)), ratio(len(hits), len(files)),
                 tuple(files), len(named), hits, missed, outside, tuple(notes))


def grade_e2e_retrieval(rows: Sequence[RowLike], task: Task, top_k: int | None) -> Grade:
    """Retrieval, never a patch: correct when every touched file is in the cut answer,
    partial when at least one is."""
    files = answer_files(rows)
    cut = _cut(files, top_k)
    touched: list[str] = list(task.truth["touched"])
    hits, missed = _split(cut, touched)
    notes = _cut_notes(files, top_k)
    verdict = "correct" if not missed else "partial" if hits else "wrong"
    return Grade(verdict, ratio(len(hits), len(touched)), ratio(len(hits), len(cut)), tuple(cut),
                 len(files), hits, missed, tuple(f for f in cut if f not in touched),
                 tuple(notes))


def precision_cap(task: Task, suite: Suite, rules: GradingRules) -> int:
    """The impact cap of one task: the suite's number, or a multiple of its graded set."""
    if rules.precision_cap == "graded-multiple":
        assert rules.precision_cap_multiple is not None  # suite.load_suite checks it
        return rules.precision_cap_multiple * len(task.truth["graded"])
    return suite.precision_cap


def graded_set(task: Task) -> list[str]:
    """The files recall is computed over, per kind (one of FILE_KINDS)."""
    if task.kind == "locate":
        primary = task.truth["primary"]
        return [primary, *(t for t in task.truth.get("touched", []) if t != primary)]
    key = {"references": "core", "impact": "graded", "e2e-retrieval": "touched"}[task.kind]
    return list(task.truth[key])


def grade(rows: Sequence[RowLike], task: Task, suite: Suite) -> Grade:
    if task.kind not in FILE_KINDS:
        raise ValueError(f"no grader for task kind {task.kind!r}")
    rules = suite.rules(task)
    top_k = None if rules.cut == "none" else suite.top_k
    if task.kind == "locate":
        return grade_locate(rows, task, top_k)
    if task.kind == "references":
        return grade_references(rows, task, suite.bands)
    if task.kind == "impact":
        return grade_impact(rows, task, precision_cap(task, suite, rules), suite.bands,
                            rules.over_cap, rules.seed)
    return grade_e2e_retrieval(rows, task, top_k)


def worst(verdicts: Sequence[str]) -> str:
    """The lowest of some verdicts: wrong < partial < correct."""
    return min(verdicts, key=RANK.__getitem__)


DEFINITIONS = {
    "answer": "the distinct files an output names, in the order it first names them; paths "
              "compared with ./ and the /corpus/ mount prefix dropped",
    "locate": "correct: the primary fix file is among the first top_k files; partial: another "
              "touched file is, or a row of one of those files names a truth type (the right "
              "type in the wrong file); recall over primary + touched, precision over the cut",
    "references": "correct: recall over core >= references_correct_recall with at most "
                  "references_correct_max_outside files outside core and admissible; partial: "
                  "recall >= references_partial_recall; precision = share of named files in "
                  "core or admissible; no cut",
    "impact": "the seed is dropped from the answer; an answer naming more files than "
              "precision_cap is wrong; correct: every graded file named; partial: at least "
              "impact_partial_fraction of them; precision = share of named files graded",
    "e2e-retrieval": "graded as retrieval, never as a patch: correct: every touched file among "
                     "the first top_k files; partial: at least one; precision over the cut",
}

# The [grading] rules, each defined once, their defaults (today's grading) named.
RULE_DEFINITIONS = {
    "cut": "top_k (default): a locate or e2e-retrieval answer is cut at its first top_k "
           "files; none: it is graded whole, every file it names",
    "precision_cap": "absolute (default): an impact answer is over the cap when it names more "
                     "files than the suite's precision_cap, the seed not counted; "
                     "graded-multiple: more than precision_cap_multiple x the size of the "
                     "task's graded set",
    "over_cap": "wrong (default): an impact answer over the cap is wrong whatever it names; "
                "banded: it is graded by the bands and is at most partial (with "
                "impact_partial_fraction 0.5: partial when it names at least half the graded "
                "set)",
    "seed": "dropped (default): an impact answer's seed is the question, dropped from the "
            "answer before grading; counted: a named seed stays in the answer (in the cap and "
            "the precision's denominator, never a hit), as some publications count it",
    "cell_grade": "cold (default, the methodology's): a cell's grade is its cold invocation's "
                  "(REP 0); worst: the lowest over all its reps (wrong < partial < correct), a "
                  "rep whose exec failed or whose output did not parse counting as wrong. "
                  "Every rep is graded either way; cost, calls and reach are the cold rep's",
}
