"""The suite model: what a suite and its tasks declare once loaded (`Suite`, `Task`, a task's
own commands, grading rules and published figures, the oracle it names) and the keys and
choices their files may hold. Loading and checking the files is `loading.py`'s and
`task_file.py`'s; sealing them is `sealing.py`'s."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from orchestrator import parsers
from orchestrator.sandbox import runtimes
from orchestrator.kinds import PLACEHOLDER
from orchestrator.predictions.model import Prediction

LANGUAGES = {"csharp": "cs", "typescript": "ts", "rust": "rs"}
SUITE_KEYS = {"version", "name", "corpus", "arms", "baseline", "reps", "timeout_s",
              "precision_cap", "top_k", "bands"}
# Optional: the oracle whose index is the suite's compiler truth (sandbench truth build), the
# metric families of the methodology the suite cannot run, each with its quoted reason, and the
# arm whose facts (version, build, isolation) the disclosure block opens with. Optional because
# a suite sealed before it existed must still load to be scored; without it those lines are n/a.
# comparable_with: the seals of other suites whose runs `sandbench compare` may set beside this
# suite's (see COMPARABLE).
OPTIONAL_SUITE_KEYS = {"oracle", "families_not_attempted", "tool_under_test", "grading",
                       "truth_rule", "truth_rule_version", "runtime", "comparable_with",
                       "test_files"}
COMPARABLE_KEY = "comparable_with"
COMPARABLE_SHAPE = 'a list of "SUITE@SHA256" (a suite\'s name and the sha256 of its manifest.json)'
_COMPARABLE_ITEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}@[0-9a-f]{64}")


def comparable_seals(value: Any) -> tuple[str, ...] | None:
    """A suite's comparable_with as declared, or None when it is not COMPARABLE_SHAPE."""
    if not isinstance(value, list) or not all(isinstance(v, str) and _COMPARABLE_ITEM.fullmatch(v)
                                              for v in value):
        return None
    return tuple(value)


# Optional: the mechanical rule `sandbench suite add-tasks` computes a task's truth by (the rules
# of orchestrator/truth/rules.py); a suite whose truth was written by hand declares none.
TRUTH_RULES = ("text-v1", "text-v1-declaring-admissible")
# Optional: whether the truth of locate and e2e-retrieval keeps the test files the fix touched
# (include, the default and every suite's before the choice) or leaves them out.
TEST_FILES = ("include", "exclude")
FAMILIES = ("resolver-precision", "rust-edges", "typescript-reference-parity")
ORACLE_KEYS = {"arm", "project"}
ORACLE_OPTIONAL_KEYS = {"edges"}
TRUTH_DIR = "truth"
BAND_KEYS = {"references_correct_recall", "references_correct_max_outside",
             "references_partial_recall", "impact_partial_fraction"}
# The Rust edges family's thresholds (the methodology's, registered before any run): a cell of
# an edge kind is correct when both hold, partial when one does. Required with edge tasks.
EDGE_BAND_KEYS = {"edges_correct_precision", "edges_correct_recall"}
TASK_KEYS = {"id", "kind", "language", "explanation", "input", "truth"}
# A task's own command for an arm ([commands.ARM]): exactly one of argv and script, how its
# output is read, and where its answer is when it prints several calls' outputs.
COMMAND_KEYS = {"argv", "script", "output", "sections", "answer_section"}
# `output`: one of these, or the name of a registered parser (orchestrator/parsers) that reads
# the form the publication printed (`rg-heading`), which the suite's seal then covers.
COMMAND_OUTPUTS = ("tool", "file-list")
# A {placeholder} in a script; `${name}` is the shell's own expansion, left to it.
SCRIPT_PLACEHOLDER = re.compile(r"(?<!\$)" + PLACEHOLDER.pattern)
# The placeholder a task's command has beyond an arm template's: the corpus root in the sandbox.
CORPUS_ROOT = "/corpus"
# What a task's script runs after: `call ARGV...` prints one `sandbench-call: ARGV` line on
# stderr (a newline in a word printed as a space, so one call is one line), then runs ARGV
# with its status. Only calls made through it count (orchestrator/parsers: calls).
SCRIPT_PRELUDE = """call() {
    printf 'sandbench-call: %s\\n' "$(printf '%s ' "$@" | tr '\\n\\r' '  ')" >&2
    "$@"
}
"""
# Optional in a task: its own grading rules (over the suite's) and the publication's figures.
OPTIONAL_TASK_KEYS = {"commands", "grading", "published"}
# The grading rules, each with its choices (the first is the default: today's behaviour), in
# suite.toml's [grading] and a task's own [grading]; precision_cap_multiple is a whole number.
GRADING_CHOICES = {"cut": ("top_k", "none"),
                   "precision_cap": ("absolute", "graded-multiple"),
                   "over_cap": ("wrong", "banded"),
                   "seed": ("dropped", "counted"),
                   "cell_grade": ("cold", "worst")}
GRADING_KEYS = (*GRADING_CHOICES, "precision_cap_multiple")
VERDICT_NAMES = ("correct", "partial", "wrong")
PUBLISHED_KEYS = {"source", "bytes", "path_prefix"}
# Optional: a publication that printed no grade (or line count, recall, ...) has none to
# compare; its cells are compared on the figures it printed.
PUBLISHED_OPTIONAL_KEYS = {"grade", "lines", "recall", "precision", "graded", "tool_version",
                           "platform"}
DECIMAL = re.compile(r"^[0-9]+(?:\.[0-9]+)?$")
TRUTH_KEYS = {"locate": ({"primary"}, {"touched", "types"}),
              "references": ({"core"}, {"admissible"}),
              "impact": ({"graded"}, set()),
              "e2e-retrieval": ({"touched"}, set()),
              # The edge kinds' truth is the oracle's (truth/ORACLE.json); the task states the
              # rule it is graded by, in words.
              "call-edges": ({"rule"}, set()), "test-edges": ({"rule"}, set())}
TASK_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MANIFEST = "manifest.json"
PREREGISTRATION = "preregistration.md"
# Where `suite add-tasks` copies each records file it made tasks from (sealed with the suite).
RECORDS_DIR = "records"
# The scorer's entry module: a suite's seal covers every module of the orchestrator package it
# imports (orchestrator/importgraph.py), so a change to how a number is computed changes the
# seal, except the per-tool parser modules: each suite's seal adds those of its own arms.
SCORER_ENTRY = "orchestrator.score.scorer"
PARSERS_PACKAGE = parsers.__name__


@dataclass(frozen=True)
class TaskCommand:
    """The command a task gives one arm instead of the arm's template (what a publication ran):
    an argv, or a script run as `/bin/sh -c` after SCRIPT_PRELUDE (its {placeholders} become
    shell-quoted words; `${name}` stays the shell's); how its output is read
    (`tool`: the arm's parser, `file-list`: one path per line); and, when it prints several
    calls' outputs, the separator line between them and which section is the answer."""

    argv: tuple[str, ...] | None
    script: str | None
    output: str = "tool"
    sections: str | None = None
    answer_section: str | int = "last"

    def render(self, values: dict[str, str]) -> list[str]:
        """What runs: every {placeholder} filled (in a script, as one shell-quoted word)."""
        if self.argv is not None:
            return [PLACEHOLDER.sub(lambda m: values[m.group(1)], part) for part in self.argv]
        assert self.script is not None
        script = SCRIPT_PLACEHOLDER.sub(lambda m: shlex.quote(values[m.group(1)]), self.script)
        return ["/bin/sh", "-c", SCRIPT_PRELUDE + script]


@dataclass(frozen=True)
class GradingRules:
    """How answers are graded where the methodology leaves it open; the defaults are the
    grading before the rules could be declared, so a suite declaring none grades as before.

    cut: `top_k` cuts a locate or e2e-retrieval answer at the suite's top_k files, `none`
    grades it whole. precision_cap: `absolute` is the suite's precision_cap, `graded-multiple`
    is precision_cap_multiple x the task's graded set. over_cap: an impact answer over the cap
    is `wrong`, or (`banded`) graded by the bands but at most partial. seed: an impact answer's
    seed is `dropped` from it, or (`counted`) kept, never a hit. cell_grade: the cell's
    grade is its cold invocation's (`cold`, the methodology's) or its reps' lowest (`worst`).
    """

    cut: str = "top_k"
    precision_cap: str = "absolute"
    precision_cap_multiple: int | None = None
    over_cap: str = "wrong"
    cell_grade: str = "cold"
    seed: str = "dropped"

    def over(self, overrides: dict[str, Any]) -> GradingRules:
        """These rules with a task's own overriding them."""
        return replace(self, **overrides) if overrides else self

    def to_json(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in GRADING_KEYS}


@dataclass(frozen=True)
class Published:
    """What a publication reported for one cell (arm x task): its output's lines and bytes,
    with the path prefix its paths had, and its grade; recall and precision as published
    (`digits`: the decimals printed, the precision they are compared at)."""

    arm: str
    source: str
    lines: int | None  # None: the publication printed no line count
    bytes: int
    path_prefix: str
    grade: str | None  # None: the publication printed no grade (compared on what it printed)
    recall: float | None = None
    recall_digits: int | None = None
    precision: float | None = None
    precision_digits: int | None = None
    graded: int | None = None
    tool_version: str | None = None  # the tool's version the publication ran
    platform: str | None = None  # the platform it ran on (macOS, ...)

    def to_json(self) -> dict[str, Any]:
        return {"tool_version": self.tool_version, "platform": self.platform,
                "source": self.source, "lines": self.lines, "bytes": self.bytes,
                "path_prefix": self.path_prefix, "grade": self.grade, "recall": self.recall,
                "recall_digits": self.recall_digits, "precision": self.precision,
                "precision_digits": self.precision_digits, "graded": self.graded}


@dataclass(frozen=True)
class Task:
    id: str
    kind: str
    language: str
    explanation: str
    input: dict[str, str]
    truth: dict[str, Any]
    path: Path
    commands: dict[str, TaskCommand] = field(default_factory=dict)  # arm -> its own command
    grading: dict[str, Any] = field(default_factory=dict)  # its own rules over the suite's
    published: dict[str, Published] = field(default_factory=dict)  # arm -> the publication's

    @property
    def values(self) -> dict[str, str]:
        """What the arm's argv placeholders are filled with."""
        return {**self.input, "ext": LANGUAGES[self.language], "lang": self.language}

    def command_argv(self, arm: str) -> list[str] | None:
        """The argv of the task's own command for `arm`, or None: the arm's template runs."""
        command = self.commands.get(arm)
        return None if command is None else command.render({**self.values,
                                                            "corpus": CORPUS_ROOT})

    def truth_paths(self) -> list[str]:
        paths: list[str] = []
        for key, value in self.truth.items():
            if key in ("types", "rule"):
                continue
            paths += [value] if isinstance(value, str) else list(value)
        if self.kind == "impact":
            paths.append(self.input["seed"])
        return paths


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    corpus: str
    arms: tuple[str, ...]
    baseline: str
    reps: int
    timeout_s: float
    precision_cap: int
    top_k: int
    bands: dict[str, float]
    tasks: tuple[Task, ...] = field(default_factory=tuple)
    oracle: OracleRef | None = None
    tool_under_test: str | None = None  # None: the suite declares none (sealed before the key)
    # family -> (reason, source): a methodology family this suite's corpus calls for but that
    # cannot run here; every run of the suite names it among its deviations.
    families_not_attempted: dict[str, tuple[str, str]] = field(default_factory=dict)
    truth_rule: str | None = None  # None: the suite's truth was not computed by a declared rule
    test_files: str = TEST_FILES[0]  # locate/e2e-retrieval truth: test files included or not
    # The version of the rules that made its truth (orchestrator/truth/rules.py VERSION); None:
    # not recorded (a suite made before rules had versions, or whose truth is by hand).
    truth_rule_version: int | None = None
    grading: GradingRules = GradingRules()
    grading_declared: tuple[str, ...] = ()  # the [grading] keys suite.toml states

    def rules(self, task: Task) -> GradingRules:
        """The grading rules of one task: the suite's, with the task's own over them."""
        return self.grading.over(task.grading)
    # The container runtime of each arm (orchestrator/sandbox/runtimes.py): runc unless declared.
    runtime: runtimes.Choice = field(default_factory=runtimes.Choice)
    # Its registered predictions (predictions.toml, sealed with it); none when it has no file.
    predictions: tuple[Prediction, ...] = ()

    def truth_file(self) -> Path | None:
        """Where `sandbench truth build` stores the oracle's truth (sealed with the suite)."""
        return None if self.oracle is None else self.path / TRUTH_DIR / f"{self.oracle.arm}.json"


@dataclass(frozen=True)
class OracleRef:
    """The oracle arm a suite's compiler truth comes from, and the project it indexes (a
    directory of the corpus, '.' for its root)."""

    arm: str
    project: str
    edges: bool = False  # the truth file also lists every definition/reference edge
