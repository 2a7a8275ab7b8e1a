"""A suite's predictions as data: suites/NAME/predictions.toml, sealed with the suite, each
prediction a bound on one figure of one arm over one kind (or `all`) or one task, or a
direction against a named baseline run. Checked on load, one error naming the file, the key,
what was expected and what was found; what the scorer and `sandbench check` evaluate."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.fsutil import read_toml
from orchestrator.sandbox.shared_checks import check_schema

PREDICTIONS = "predictions.toml"
SCHEMA_FILE = "predictions.schema.json"
ALL = "all"
GRADED = ("correct", "partial", "wrong")
SHARES = ("share", "recall", "precision")  # figures between 0 and 1
# A grade a count can be of: the graded ones, and the two a cell has without a grade.
COUNTED = (*GRADED, "not_attempted", "unscored")


@dataclass(frozen=True)
class Prediction:
    """One registered prediction: `metric` (of `grade` for count and share) of `arm` over
    `scope` (`kind` or `task`) named `target`, within [at_least, at_most]; or, when
    `direction` is set, that figure moving that way against the run `against_run`."""

    id: str
    arm: str
    scope: str  # "kind" (a task kind or "all") or "task"
    target: str
    metric: str
    source: str
    grade: str | None = None
    at_least: float | None = None
    at_most: float | None = None
    against_run: str | None = None
    direction: str | None = None

    @property
    def predicted(self) -> str:
        """The prediction in words, as the table shows it."""
        if self.direction is not None:
            return f"{self.direction} than in run {self.against_run}"
        if self.at_least is not None and self.at_least == self.at_most:
            return f"= {self.at_least:g}"
        bounds = ([] if self.at_least is None else [f">= {self.at_least:g}"]) + (
            [] if self.at_most is None else [f"<= {self.at_most:g}"])
        return " and ".join(bounds)

    @property
    def figure(self) -> str:
        """What is measured, in words: `count correct`, `recall`."""
        return self.metric if self.grade is None else f"{self.metric} {self.grade}"

    def to_json(self) -> dict[str, Any]:
        """The table as predictions.toml states it (scores.json carries it)."""
        out = {"id": self.id, "arm": self.arm, self.scope: self.target, "metric": self.metric,
               "grade": self.grade, "at_least": self.at_least, "at_most": self.at_most,
               "against_run": self.against_run, "direction": self.direction,
               "source": self.source}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class SuiteFacts:
    """What a prediction may name: the suite's arms, baseline, kinds and tasks."""

    arms: Sequence[str]
    baseline: str
    kinds: Iterable[str]
    tasks: Iterable[str]


def _bounds(file: Path, key: str, table: Mapping[str, Any]) -> None:
    """The bounds a figure can have: present unless a direction; ordered; shares in [0, 1];
    counts whole."""
    low, high = table.get("at_least"), table.get("at_most")
    if "direction" in table or "against_run" in table:
        for name in ("direction", "against_run"):
            if name not in table:
                raise InputError.bad_value(file, f"{key}.{name}", "present: a direction is "
                                           "against_run with a direction", None)
        for name in ("at_least", "at_most"):
            if name in table:
                raise InputError.bad_value(file, f"{key}.{name}", "absent: a direction "
                                           "against a baseline run has no bound", table[name])
        return
    if low is None and high is None:
        raise InputError.bad_value(file, f"{key}.at_least", "at_least or at_most (or both)",
                                   None)
    for name, value in (("at_least", low), ("at_most", high)):
        if value is None:
            continue
        if table["metric"] in SHARES and value > 1:
            raise InputError.bad_value(file, f"{key}.{name}", "a number in [0, 1]", value)
        if table["metric"] == "count" and not isinstance(value, int):
            raise InputError.bad_value(file, f"{key}.{name}", "a whole number of cells", value)
    if low is not None and high is not None and low > high:
        raise InputError.bad_value(file, f"{key}.at_most", f"a number >= at_least ({low})",
                                   high)


def _prediction(file: Path, key: str, table: Mapping[str, Any], facts: SuiteFacts
                ) -> Prediction:
    if ("kind" in table) == ("task" in table):
        raise InputError.bad_value(file, key, "exactly one of kind and task",
                                   sorted(k for k in ("kind", "task") if k in table))
    if table["arm"] not in facts.arms:
        raise InputError.bad_value(file, f"{key}.arm", f"one of the suite's arms "
                                   f"{sorted(facts.arms)}", table["arm"])
    scope = "kind" if "kind" in table else "task"
    targets = sorted({*facts.kinds, ALL}) if scope == "kind" else sorted(facts.tasks)
    if table[scope] not in targets:
        raise InputError.bad_value(file, f"{key}.{scope}", f"one of {targets}", table[scope])
    metric = table["metric"]
    grade = table.get("grade")
    if metric in ("count", "share"):
        allowed = COUNTED if metric == "count" else GRADED
        if grade not in allowed:
            raise InputError.bad_value(file, f"{key}.grade", f"one of {list(allowed)} "
                                       f"with metric = {metric!r}", grade)
    elif grade is not None:
        raise InputError.bad_value(file, f"{key}.grade", "absent: only count and share are "
                                   "of a grade", grade)
    if metric == "cost_ratio" and table["arm"] == facts.baseline:
        raise InputError.bad_value(file, f"{key}.arm", "an arm other than the baseline: a "
                                   "cost ratio is against the baseline", table["arm"])
    _bounds(file, key, table)
    return Prediction(id=table["id"], arm=table["arm"], scope=scope, target=table[scope],
                      metric=metric, source=table["source"], grade=grade,
                      at_least=table.get("at_least"), at_most=table.get("at_most"),
                      against_run=table.get("against_run"), direction=table.get("direction"))


def parse_predictions(file: Path, data: Any, facts: SuiteFacts) -> tuple[Prediction, ...]:
    """`data` (predictions.toml's tables, or scores.json's copy of them) checked against
    the schema and the suite; InputError naming `file` and the first bad key."""
    check_schema(file, data, SCHEMA_FILE)
    out: list[Prediction] = []
    seen: set[str] = set()
    for i, table in enumerate(data["prediction"]):
        key = f"prediction.{i}"
        if table["id"] in seen:
            raise InputError.bad_value(file, f"{key}.id", "an id no other prediction has",
                                       table["id"])
        seen.add(table["id"])
        out.append(_prediction(file, key, table, facts))
    return tuple(out)


def load_predictions(suite_dir: Path, facts: SuiteFacts) -> tuple[Prediction, ...]:
    """The suite's predictions.toml, checked; none when the suite declares no predictions."""
    file = suite_dir / PREDICTIONS
    if not file.is_file():
        return ()
    return parse_predictions(file, read_toml(file), facts)
