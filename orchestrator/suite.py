"""Sealed task suites: tasks with their truth, a preregistration, and a manifest that hashes
every input before any arm runs, so a number can be traced to exactly what produced it.

`suites/NAME/suite.toml` declares the corpus, the arms, the baseline, the tool under test, the
reps, the time limit and the choices the methodology leaves open (the impact precision cap,
where ranked answers are cut, the bands, and in `[grading]` the grading rules).
`suites/NAME/tasks/*.toml` holds one task each: it may override the suite's grading rules in
its own `[grading]` and carry, per arm, the figures a publication reported (`[published.ARM]`).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from orchestrator import corpus, importgraph, parsers, runtimes
from orchestrator.corpus.git import clean_git
from orchestrator.errors import InputError
from orchestrator.fsutil import atomic_write_json, read_json, read_toml, sha256_file
from orchestrator.kinds import ALL_KINDS, COMMON_PLACEHOLDERS, EDGE_KINDS, INPUT_KEY, PLACEHOLDER
from orchestrator.settings import Settings
from orchestrator.shared_checks import number, repo_path
from orchestrator.untrusted.strings import portable_bytes

LANGUAGES = {"csharp": "cs", "typescript": "ts", "rust": "rs"}
SUITE_KEYS = {"version", "name", "corpus", "arms", "baseline", "reps", "timeout_s",
              "precision_cap", "top_k", "bands"}
# Optional: the oracle whose index is the suite's compiler truth (sandbench truth build), the
# metric families of the methodology the suite cannot run, each with its quoted reason, and the
# arm whose facts (version, build, isolation) the disclosure block opens with. Optional because
# a suite sealed before it existed must still load to be scored; without it those lines are n/a.
OPTIONAL_SUITE_KEYS = {"oracle", "families_not_attempted", "tool_under_test", "grading",
                       "truth_rule", "runtime"}
# Optional: the mechanical rule `sandbench suite add-tasks` computes a task's truth by (the rules
# of orchestrator/truth_rules.py); a suite whose truth was written by hand declares none.
TRUTH_RULES = ("text-v1", "text-v1-declaring-admissible")
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
PUBLISHED_KEYS = {"source", "bytes", "path_prefix", "grade"}
# Optional: a publication that printed no line count (or recall, ...) has none to compare.
PUBLISHED_OPTIONAL_KEYS = {"lines", "recall", "precision", "graded", "tool_version", "platform"}
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
    grade: str
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
    grading: GradingRules = GradingRules()
    grading_declared: tuple[str, ...] = ()  # the [grading] keys suite.toml states

    def rules(self, task: Task) -> GradingRules:
        """The grading rules of one task: the suite's, with the task's own over them."""
        return self.grading.over(task.grading)
    # The container runtime of each arm (orchestrator/runtimes.py): runc unless declared.
    runtime: runtimes.Choice = field(default_factory=runtimes.Choice)

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


def _bad(path: Path, key: str, expected: str, found: Any) -> InputError:
    return InputError.bad_value(path, key, expected, found)


def _str_list(path: Path, key: str, value: Any, allow_empty: bool) -> list[str]:
    if (not isinstance(value, list) or not all(isinstance(v, str) and v for v in value)
            or (not allow_empty and not value)):
        raise _bad(path, key, "a list of repo-relative paths" + ("" if allow_empty else
                   " (non-empty: an empty truth set satisfies every band vacuously)"), value)
    return [repo_path(path, key, v) for v in value]


def _grading(path: Path, table: Any) -> dict[str, Any]:
    """A [grading] table: each key one of the rules, each value one of its choices."""
    if not isinstance(table, dict):
        raise _bad(path, "grading", f"a table of {list(GRADING_KEYS)}", table)
    for key, value in table.items():
        if key == "precision_cap_multiple":
            number(path, "grading.precision_cap_multiple", value, "a positive whole number "
                   "(the cap is this x the task's graded set)", integer=True, minimum=1)
        elif key in GRADING_CHOICES:
            if value not in GRADING_CHOICES[key]:
                raise _bad(path, f"grading.{key}", f"one of {list(GRADING_CHOICES[key])}",
                           value)
        else:
            raise _bad(path, f"grading.{key}", f"one of {list(GRADING_KEYS)}", key)
    return dict(table)


def _check_rules(path: Path, rules: GradingRules, declared: dict[str, Any]) -> None:
    """The rules a file leaves in force are whole: a multiple of the graded set needs its
    multiple, and a multiple is read only as one."""
    if rules.precision_cap == "graded-multiple" and rules.precision_cap_multiple is None:
        raise _bad(path, "grading.precision_cap_multiple", "a positive whole number "
                   "(precision_cap = \"graded-multiple\")", None)
    if rules.precision_cap != "graded-multiple" and "precision_cap_multiple" in declared:
        raise _bad(path, "grading.precision_cap", "\"graded-multiple\" (precision_cap_multiple "
                   "is only read with it)", rules.precision_cap)


def _digits(path: Path, key: str, value: Any) -> tuple[float, int]:
    """A published fraction and the decimals it was printed with: a number (its shortest
    spelling's decimals) or a string of the digits as printed ("1.000" keeps its zeros)."""
    if isinstance(value, str) and DECIMAL.match(value):
        number_value, text = float(value), value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number_value, text = float(value), repr(float(value))
    else:
        raise _bad(path, key, "a fraction from 0 to 1, as a number or as printed (\"1.000\")",
                   value)
    number(path, key, number_value, "a fraction from 0 to 1", minimum=0, maximum=1)
    return number_value, len(text.partition(".")[2])


def _published(path: Path, table: Any) -> dict[str, Published]:
    """[published.ARM] tables: the figures a publication reported for that arm's cell."""
    if not isinstance(table, dict):
        raise _bad(path, "published", "a table per arm", table)
    out = {}
    allowed = PUBLISHED_KEYS | PUBLISHED_OPTIONAL_KEYS
    for arm, entry in table.items():
        at = f"published.{arm}"
        if not isinstance(entry, dict):
            raise _bad(path, at, f"a table with {sorted(PUBLISHED_KEYS)}", entry)
        if missing := sorted(PUBLISHED_KEYS - set(entry)):
            raise _bad(path, f"{at}.{missing[0]}", "present", None)
        if unknown := sorted(set(entry) - allowed):
            raise _bad(path, f"{at}.{unknown[0]}", f"one of {sorted(allowed)}", unknown[0])
        if not isinstance(entry["source"], str) or not entry["source"].strip():
            raise _bad(path, f"{at}.source", "a non-empty string naming the publication",
                       entry["source"])
        for key in ("lines", "bytes") if "lines" in entry else ("bytes",):
            number(path, f"{at}.{key}", entry[key], "a whole number, 0 or more", integer=True,
                   minimum=0)
        prefix = entry["path_prefix"]
        if not isinstance(prefix, str) or (prefix and (
                not prefix.endswith("/") or any(c in prefix for c in "\n\r"))):
            raise _bad(path, f"{at}.path_prefix", "the prefix its paths had, ending in '/' "
                       "(or empty)", prefix)
        if entry["grade"] not in VERDICT_NAMES:
            raise _bad(path, f"{at}.grade", f"one of {list(VERDICT_NAMES)}", entry["grade"])
        recall = _digits(path, f"{at}.recall", entry["recall"]) if "recall" in entry else None
        precision = (_digits(path, f"{at}.precision", entry["precision"])
                     if "precision" in entry else None)
        if "graded" in entry:
            number(path, f"{at}.graded", entry["graded"], "a whole number, 0 or more",
                   integer=True, minimum=0)
        out[arm] = Published(
            arm=arm, source=entry["source"], lines=entry.get("lines"), bytes=entry["bytes"],
            path_prefix=prefix, grade=entry["grade"],
            recall=None if recall is None else recall[0],
            recall_digits=None if recall is None else recall[1],
            precision=None if precision is None else precision[0],
            precision_digits=None if precision is None else precision[1],
            graded=entry.get("graded"), tool_version=_text(path, f"{at}.tool_version", entry),
            platform=_text(path, f"{at}.platform", entry))
    return out


def _text(path: Path, key: str, entry: dict[str, Any]) -> str | None:
    """An optional one-line string of a [published.ARM] table (its last key part)."""
    value = entry.get(key.rpartition(".")[2])
    if value is not None and (not isinstance(value, str) or not value.strip()
                              or "\n" in value):
        raise _bad(path, key, "a non-empty one-line string", value)
    return value


def load_task(path: Path) -> Task:
    data = read_toml(path)
    if unknown := sorted(set(data) - TASK_KEYS - OPTIONAL_TASK_KEYS):
        raise _bad(path, unknown[0], f"one of {sorted(TASK_KEYS | OPTIONAL_TASK_KEYS)}",
                   unknown[0])
    for key in ("id", "kind", "language", "explanation"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise _bad(path, key, "a non-empty string", data.get(key))
    if data["id"] != path.stem or not TASK_ID.match(data["id"]):
        raise _bad(path, "id", f"{path.stem!r} (the file name, [a-z0-9-])", data["id"])
    kind = data["kind"]
    if kind not in ALL_KINDS:
        raise _bad(path, "kind", f"one of {list(ALL_KINDS)}", kind)
    if data["language"] not in LANGUAGES:
        raise _bad(path, "language", f"one of {sorted(LANGUAGES)}", data["language"])
    inputs = data.get("input")
    want = INPUT_KEY[kind]
    if not isinstance(inputs, dict) or set(inputs) != {want}:
        raise _bad(path, "input", f"a table with exactly {want!r} for a {kind} task", inputs)
    if not isinstance(inputs[want], str) or not inputs[want].strip():
        raise _bad(path, f"input.{want}", "a non-empty string", inputs[want])
    truth = data.get("truth")
    required, optional = TRUTH_KEYS[kind]
    if not isinstance(truth, dict):
        raise _bad(path, "truth", "a table", truth)
    if missing := sorted(required - set(truth)):
        raise _bad(path, f"truth.{missing[0]}", "present", None)
    if unknown := sorted(set(truth) - required - optional):
        raise _bad(path, f"truth.{unknown[0]}", f"one of {sorted(required | optional)}",
                   unknown[0])
    for key, value in truth.items():
        if key == "rule":
            if not isinstance(value, str) or not value.strip():
                raise _bad(path, "truth.rule", "a non-empty string stating the rule", value)
        elif key == "primary":
            repo_path(path, "truth.primary", value)
        elif key == "types":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise _bad(path, "truth.types", "a list of type names", value)
        else:
            _str_list(path, f"truth.{key}", value, allow_empty=key in optional)
    if kind == "impact":
        repo_path(path, "input.seed", inputs["seed"])
    if kind == "impact" and inputs["seed"] in truth["graded"]:
        raise _bad(path, "truth.graded", "files beyond the seed", inputs["seed"])
    return Task(id=data["id"], kind=kind, language=data["language"],
                explanation=data["explanation"], input=dict(inputs), truth=dict(truth),
                path=path, commands=_commands(path, kind, data.get("commands", {})),
                grading=_grading(path, data.get("grading", {})),
                published=_published(path, data.get("published", {})))


def _commands(path: Path, kind: str, table: Any) -> dict[str, TaskCommand]:
    """[commands.ARM] tables: each checked whole (which arms exist is the suite's to check)."""
    if not isinstance(table, dict):
        raise _bad(path, "commands", "a table of [commands.ARM] tables", table)
    if table and kind in EDGE_KINDS:
        raise _bad(path, "commands", f"absent: a {kind} task is graded on the edges an arm's "
                   "own parser reads, not on a command's rows", sorted(table))
    allowed = {INPUT_KEY[kind], *COMMON_PLACEHOLDERS, "corpus"}
    return {arm: _command(path, f"commands.{arm}", spec, allowed) for arm, spec in table.items()}


def _command(path: Path, key: str, spec: Any, allowed: set[str]) -> TaskCommand:
    if not isinstance(spec, dict):
        raise _bad(path, key, "a table with argv or script", spec)
    if unknown := sorted(set(spec) - COMMAND_KEYS):
        raise _bad(path, f"{key}.{unknown[0]}", f"one of {sorted(COMMAND_KEYS)}", unknown[0])
    if ("argv" in spec) == ("script" in spec):
        raise _bad(path, key, "exactly one of argv (a list) and script (sh text)",
                   sorted(k for k in ("argv", "script") if k in spec))
    argv, script = spec.get("argv"), spec.get("script")
    if argv is not None and (not isinstance(argv, list) or not argv or not all(
            isinstance(part, str) for part in argv) or not argv[0]):
        raise _bad(path, f"{key}.argv", "a non-empty list of strings, the program first", argv)
    if script is not None and (not isinstance(script, str) or not script.strip()):
        raise _bad(path, f"{key}.script", "non-empty sh text", script)
    pattern = PLACEHOLDER if argv is not None else SCRIPT_PLACEHOLDER
    for text in argv or [script]:
        for name in pattern.findall(text):
            if name not in allowed:
                raise _bad(path, f"{key}.{'argv' if argv else 'script'}",
                           f"placeholders among {sorted(allowed)}", "{" + name + "}")
    output = spec.get("output", "tool")
    if output not in COMMAND_OUTPUTS:
        raise _bad(path, f"{key}.output", f"one of {list(COMMAND_OUTPUTS)}", output)
    sections = spec.get("sections")
    if sections is not None and (not isinstance(sections, str) or not sections.strip()
                                 or "\n" in sections or "\r" in sections):
        raise _bad(path, f"{key}.sections", "the separator line (non-empty, one line)", sections)
    answer = spec.get("answer_section", "last")
    if "answer_section" in spec and sections is None:
        raise _bad(path, f"{key}.answer_section", "absent: without sections the whole output "
                   "is the answer", answer)
    if answer != "last" and (not isinstance(answer, int) or isinstance(answer, bool)
                             or answer < 1):
        raise _bad(path, f"{key}.answer_section", '"last" or a 1-based section number', answer)
    return TaskCommand(argv=None if argv is None else tuple(argv), script=script, output=output,
                       sections=sections, answer_section=answer)


def known_suites(suites_dir: Path) -> list[str]:
    """The suites: folders holding a suite.toml (suites/tools holds scripts, not a suite)."""
    return sorted(p.parent.name for p in suites_dir.glob("*/suite.toml")) \
        if suites_dir.is_dir() else []


def load_suite(suites_dir: Path, name: str) -> Suite:
    folder = suites_dir / name
    if not folder.is_dir():
        known = known_suites(suites_dir)
        raise InputError(f"unknown suite {name!r}", fix=f"known suites: {', '.join(known)}")
    path = folder / "suite.toml"
    data = read_toml(path)
    if unknown := sorted(set(data) - SUITE_KEYS - OPTIONAL_SUITE_KEYS):
        raise _bad(path, unknown[0], f"one of {sorted(SUITE_KEYS | OPTIONAL_SUITE_KEYS)}",
                   unknown[0])
    if missing := sorted(SUITE_KEYS - set(data)):
        raise _bad(path, missing[0], "present", None)
    number(path, "version", data["version"], "1", integer=True, minimum=1, maximum=1)
    if data["name"] != name:
        raise _bad(path, "name", repr(name), data["name"])
    arms = data["arms"]
    if not isinstance(arms, list) or not arms or not all(isinstance(a, str) for a in arms):
        raise _bad(path, "arms", "a non-empty list of arm names", arms)
    if twice := sorted({a for a in arms if arms.count(a) > 1}):
        raise _bad(path, "arms", "each arm listed once", twice[0])
    if data["baseline"] not in arms:
        raise _bad(path, "baseline", f"one of the suite's arms {arms}", data["baseline"])
    tool = data.get("tool_under_test")
    if tool is not None and (tool not in arms or tool == data["baseline"]):
        raise _bad(path, "tool_under_test", f"one of the suite's arms {arms} other than the "
                   f"baseline {data['baseline']!r}", tool)
    for key in ("reps", "precision_cap", "top_k"):
        number(path, key, data[key], "a positive integer", integer=True, minimum=1)
    number(path, "timeout_s", data["timeout_s"], "a positive number of seconds", minimum=0,
           exclusive_minimum=True)
    bands = data["bands"]
    if not isinstance(bands, dict) or not BAND_KEYS <= set(bands) <= BAND_KEYS | EDGE_BAND_KEYS:
        raise _bad(path, "bands", f"a table of numbers with exactly {sorted(BAND_KEYS)} (and "
                   f"{sorted(EDGE_BAND_KEYS)} for edge tasks)", bands)
    for key, value in bands.items():
        if key == "references_correct_max_outside":
            number(path, f"bands.{key}", value, "a whole number of files, 0 or more",
                   integer=True, minimum=0)
        else:
            number(path, f"bands.{key}", value, "a fraction from 0 to 1", minimum=0, maximum=1)
    if not isinstance(data["corpus"], str):
        raise _bad(path, "corpus", "the id of a corpus in corpus.lock", data["corpus"])
    _check_project(path, suites_dir.parent, data["corpus"], arms)
    oracle = _oracle_ref(path, data.get("oracle"))
    declared = _grading(path, data.get("grading", {}))
    rules = GradingRules().over(declared)
    _check_rules(path, rules, declared)
    tasks = tuple(load_task(p) for p in sorted((folder / "tasks").glob("*.toml")))
    if not tasks:
        raise InputError(f"{folder / 'tasks'}: the suite has no tasks", file=str(folder))
    _check_commands(suites_dir.parent, tasks, arms)
    for task in tasks:
        _check_rules(task.path, rules.over(task.grading), task.grading)
        if strangers := sorted(set(task.published) - set(arms)):
            raise _bad(task.path, f"published.{strangers[0]}", f"one of the suite's arms "
                       f"{arms}", strangers[0])
    if edge_tasks := [t for t in tasks if t.kind in EDGE_KINDS]:
        if oracle is None or not oracle.edges:
            raise _bad(path, "oracle.edges", f"true: task {edge_tasks[0].id} is graded against "
                       "the oracle's edges", None if oracle is None else oracle.edges)
        if missing_bands := sorted(EDGE_BAND_KEYS - set(bands)):
            raise _bad(path, f"bands.{missing_bands[0]}", "a fraction from 0 to 1 (the suite "
                       "has edge tasks)", None)
    return Suite(name=name, path=folder, corpus=data["corpus"], arms=tuple(arms),
                 baseline=data["baseline"], reps=data["reps"], timeout_s=float(data["timeout_s"]),
                 precision_cap=data["precision_cap"], top_k=data["top_k"],
                 bands={k: float(v) for k, v in bands.items()}, tasks=tasks, oracle=oracle,
                 tool_under_test=tool,
                 families_not_attempted=_families(path, data.get("families_not_attempted", {})),
                 grading=rules, grading_declared=tuple(k for k in GRADING_KEYS if k in declared),
                 truth_rule=truth_rule(path, data.get("truth_rule")),
                 runtime=_runtime(path, data.get("runtime"), arms))


def truth_rule(path: Path, value: Any) -> str | None:
    """The suite's declared truth rule (suite.toml `truth_rule`), or None if it declares none."""
    if value is not None and value not in TRUTH_RULES:
        raise _bad(path, "truth_rule", f"one of {list(TRUTH_RULES)}", value)
    return value


def _runtime(path: Path, table: Any, arms: list[str]) -> runtimes.Choice:
    if table is not None and (wrong := runtimes.problem(table, arms)):
        raise _bad(path, *wrong)
    return runtimes.choice(table)


def _families(path: Path, table: Any) -> dict[str, tuple[str, str]]:
    if not isinstance(table, dict):
        raise _bad(path, "families_not_attempted", "a table of families", table)
    out = {}
    for family, entry in table.items():
        key = f"families_not_attempted.{family}"
        if family not in FAMILIES:
            raise _bad(path, key, f"one of {list(FAMILIES)}", family)
        if not isinstance(entry, dict) or set(entry) != {"reason", "source"} or not all(
                isinstance(v, str) and v.strip() for v in entry.values()):
            raise _bad(path, key, "a table with a non-empty reason and source", entry)
        out[family] = (entry["reason"], entry["source"])
    return out


def _oracle_ref(path: Path, table: Any) -> OracleRef | None:
    if table is None:
        return None
    if not isinstance(table, dict) or not ORACLE_KEYS <= set(table) <= (
            ORACLE_KEYS | ORACLE_OPTIONAL_KEYS) or not all(
            isinstance(table[k], str) and table[k] for k in ORACLE_KEYS):
        raise _bad(path, "oracle", f"a table with {sorted(ORACLE_KEYS)} (strings) and optionally "
                   f"{sorted(ORACLE_OPTIONAL_KEYS)}", table)
    if not isinstance(edges := table.get("edges", False), bool):
        raise _bad(path, "oracle.edges", "true or false", edges)
    project = "." if table["project"] == "." else repo_path(path, "oracle.project",
                                                             table["project"])
    return OracleRef(arm=table["arm"], project=project, edges=edges)


def _check_project(path: Path, project: Path, corpus_id: str, arms: list[str]) -> None:
    """The corpus and arms a suite names exist in its project (the folder above suites/,
    holding corpus.lock and arms/). A sealed suite copied out on its own, as `score` reads
    one, has no project: the run it is scored with recorded both."""
    lock = project / corpus.LOCK_NAME
    if not lock.is_file():
        return
    if corpus_id not in (known := corpus.load_lock(lock)):
        raise _bad(path, "corpus", f"one of the ids in {lock}: {sorted(known)}", corpus_id)
    for arm in arms:
        if not (spec := project / "arms" / f"{arm}.toml").is_file():
            raise _bad(path, "arms", f"arms with a spec file ({spec} is missing)", arm)


def _check_commands(project: Path, tasks: Iterable[Task], arms: list[str]) -> None:
    """Each task's [commands.ARM] names one of the suite's arms, and (where the project's arm
    specs are at hand) a command-line arm that attempts the task's kind: an MCP arm sends one
    tools/call, it runs no command; an arm that declares the kind not attempted runs none."""
    for task in tasks:
        for arm in task.commands:
            key = f"commands.{arm}"
            if arm not in arms:
                raise _bad(task.path, key, f"one of the suite's arms {arms}", arm)
            spec = project / "arms" / f"{arm}.toml"
            if not spec.is_file():
                continue
            data = read_toml(spec)
            if data.get("protocol", "cli") != "cli":
                raise _bad(task.path, key, f"a command-line arm ({spec} has protocol = "
                           f"{data.get('protocol')!r}: it sends a tools/call, not a command)", arm)
            if task.kind not in data.get("tasks", {}):
                raise _bad(task.path, key, f"an arm that attempts {task.kind} tasks ({spec} has "
                           f"no [tasks.{task.kind}])", arm)


def check_truth_at_pin(suite: Suite, pristine: Path) -> None:
    """Every truth path (and impact seed) is a file tracked at the pinned commit."""
    with clean_git() as git:
        listed = git.run("ls-tree", "-r", "-z", "--name-only", "HEAD", cwd=pristine).stdout
    tracked = {portable_bytes(name) for name in listed.split(b"\0") if name}
    for task in suite.tasks:
        for rel in task.truth_paths():
            if rel not in tracked:
                raise _bad(task.path, "truth" if rel != task.input.get("seed") else "input.seed",
                           f"a file tracked at the pin of corpus {suite.corpus!r}", rel)


# -- the seal -----------------------------------------------------------------------------

def _is_tool_parser(module: str) -> bool:
    """A per-tool parser module (orchestrator.parsers.rg, ...), not the parsers' shared core
    nor one of its `_` helpers."""
    package, _, name = module.rpartition(".")
    return package == PARSERS_PACKAGE and not name.startswith("_")


def parser_module(root: Path, parser: str) -> Path:
    """The source of the parser named `parser` under the project root `root`."""
    return root.joinpath(*PARSERS_PACKAGE.split("."), parsers.module_name(parser) + ".py")


def scorer_sources(root: Path, parser_names: Iterable[str]) -> list[Path]:
    """The scorer's sources under `root`: the modules its entry imports, per-tool parsers
    left out, and the modules of the named parsers with what they import (a name whose module
    is missing adds nothing; the seal checks the arms' names first)."""
    files = set(importgraph.module_files(root, SCORER_ENTRY, stop=_is_tool_parser))
    for name in sorted(set(parser_names)):
        if parser_module(root, name).is_file():
            module = f"{PARSERS_PACKAGE}.{parsers.module_name(name)}"
            files.update(importgraph.module_files(root, module))
    return sorted(files)


def every_scorer_source(root: Path) -> list[str]:
    """What the seal of some suite may cover: the scorer's core and every parser module,
    relative to `root` (for copies of the project's inputs)."""
    package = root.joinpath(*PARSERS_PACKAGE.split("."))
    names = [p.stem for p in package.glob("*.py") if _is_tool_parser(f"{PARSERS_PACKAGE}.{p.stem}")]
    return [p.relative_to(root).as_posix() for p in scorer_sources(root, names)]


def _arm_parser(spec: Path, root: Path) -> str | None:
    """The parser an arm spec names, checked to have its module; None for an oracle arm."""
    data = read_toml(spec)
    name = data.get("parser")
    if name is None and data.get("kind") == "oracle":
        return None
    if not isinstance(name, str) or not parser_module(root, name).is_file():
        raise _bad(spec, "parser", f"the name of a parser module in "
                   f"{parser_module(root, 'NAME').parent}", name)
    return name


def sealed_inputs(suite: Suite, settings: Settings) -> dict[str, str]:
    """Every input that decides a number, relative to the project root -> its sha256: the
    suite's files, its arms' specs, the scorer's core and the parser modules of its arms."""
    root = settings.project_root
    files = [suite.path / "suite.toml", suite.path / PREREGISTRATION,
             *(t.path for t in suite.tasks),
             *(settings.arms_dir / f"{arm}.toml" for arm in suite.arms)]
    if (truth := suite.truth_file()) is not None:
        # The compiler truth and the oracle that made it: sealed only once it is built.
        if not truth.is_file():
            raise InputError(f"suite {suite.name!r} has no compiler truth yet: {truth} is "
                             "missing", fix=f"sandbench truth build {suite.name}",
                             file=str(truth))
        assert suite.oracle is not None
        files += [truth, settings.arms_dir / f"{suite.oracle.arm}.toml"]
    specs = (settings.arms_dir / f"{arm}.toml" for arm in suite.arms)
    names = [name for spec in specs if spec.is_file()
             and (name := _arm_parser(spec, root)) is not None]
    files += scorer_sources(root, names)
    digests = {}
    for file in files:
        if not file.is_file():
            raise InputError(f"{file} is missing: it is an input of suite {suite.name!r}",
                             file=str(file))
        digests[file.relative_to(root).as_posix()] = sha256_file(file)
    return digests


def corpus_pin(suite: Suite, settings: Settings) -> dict[str, str]:
    lock = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock), suite.corpus, lock)
    if pin.sha is None:
        raise _bad(suite.path / "suite.toml", "corpus", "a registered (pinned) corpus",
                   suite.corpus)
    return {"id": pin.id, "repo": pin.repo, "sha": pin.sha}


def seal(suite: Suite, settings: Settings) -> Path:
    manifest = {"version": 1, "suite": suite.name, "corpus": corpus_pin(suite, settings),
                "inputs": sealed_inputs(suite, settings)}
    path = suite.path / MANIFEST
    atomic_write_json(path, manifest)
    return path


@dataclass(frozen=True)
class SealDifference:
    file: str
    expected: str | None
    found: str | None


def verify_seal(suite: Suite, settings: Settings) -> list[SealDifference]:
    """What differs between the manifest and the inputs now; empty when the seal holds."""
    path = suite.path / MANIFEST
    if not path.is_file():
        raise InputError(f"suite {suite.name!r} is not sealed: {path} is missing",
                         fix=f"sandbench suite seal {suite.name}", file=str(path))
    manifest = read_json(path)
    sealed = manifest.get("inputs", {})
    now = sealed_inputs(suite, settings)
    diffs = [SealDifference(f, sealed.get(f), now.get(f)) for f in sorted(set(sealed) | set(now))
             if sealed.get(f) != now.get(f)]
    pin = corpus_pin(suite, settings)
    if manifest.get("corpus") != pin:
        diffs.append(SealDifference("corpus.lock", json.dumps(manifest.get("corpus")),
                                    json.dumps(pin)))
    return diffs


def manifest_sha256(suite: Suite) -> str:
    return hashlib.sha256((suite.path / MANIFEST).read_bytes()).hexdigest()
