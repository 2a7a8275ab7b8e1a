"""`sandbench suite new`: suites/NAME with a suite.toml of the declared choices, each with the
comment the existing suites give it, and a preregistration.md stating them; never overwrites."""

from __future__ import annotations

import datetime
import os
import shutil
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import corpus, suite as suite_mod
from orchestrator.authoring import suite_tables, toml_text
from orchestrator.authoring._common import bad as _bad
from orchestrator.fsutil import atomic_write_text
from orchestrator.settings import Settings
from orchestrator.truth import rules as truth_rules

# The methodology's bands, every existing suite's values: the default of `suite new`.
DEFAULT_BANDS: dict[str, float] = {
    "references_correct_recall": 0.75, "references_correct_max_outside": 2,
    "references_partial_recall": 0.40, "impact_partial_fraction": 0.5}



@dataclass(frozen=True)
class SuiteChoices:
    """What `suite new` declares: every key of suite.toml, and the one-sentence purpose the
    header comment and the preregistration open with (left out when not given)."""

    name: str
    corpus: str
    arms: tuple[str, ...]
    baseline: str
    tool_under_test: str | None = None
    reps: int = 3
    timeout_s: float = 120
    precision_cap: int = 20
    top_k: int = 5
    truth_rule: str = truth_rules.DEFAULT_RULE
    bands: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_BANDS))
    purpose: str | None = None
    test_files: str = suite_mod.TEST_FILES[0]
    grading: dict[str, Any] = field(default_factory=dict)
    not_attempted: dict[str, tuple[str, str]] = field(default_factory=dict)
    runtime: dict[str, Any] | None = None
    oracle: dict[str, Any] | None = None

    def tables(self) -> tuple[dict[str, Any], dict[str, tuple[str, str]], dict[str, Any] | None,
                              dict[str, Any] | None]:
        """The choices beyond the numbers, in suite_tables' order."""
        return self.grading, self.not_attempted, self.runtime, self.oracle


def _check_choices(settings: Settings, c: SuiteChoices) -> corpus.CorpusPin:
    if not suite_mod.TASK_ID.match(c.name):
        raise _bad("NAME", "a suite name of lower-case letters, digits and dashes", c.name)
    if (settings.suites_dir / c.name).exists():
        raise _bad("NAME", "a suite that does not exist yet (suite new never overwrites)",
                   c.name, fix=f"choose another name, or add tasks with `sandbench suite "
                   f"add-tasks {c.name}`")
    lock = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock), c.corpus, lock)
    if pin.sha is None:
        raise _bad("--corpus", f"a corpus pinned at a commit in {lock}", c.corpus)
    if not c.arms or len(set(c.arms)) != len(c.arms):
        raise _bad("--arms", "a comma-separated list of arms, each once", ",".join(c.arms))
    for arm in c.arms:
        if not (settings.arms_dir / f"{arm}.toml").is_file():
            raise _bad("--arms", f"arms with a spec in {settings.arms_dir}", arm)
    if c.baseline not in c.arms:
        raise _bad("--baseline", f"one of the arms {list(c.arms)}", c.baseline)
    if c.tool_under_test is not None and (c.tool_under_test not in c.arms
                                          or c.tool_under_test == c.baseline):
        raise _bad("--tool-under-test", f"one of the arms {list(c.arms)} other than the "
                   f"baseline", c.tool_under_test)
    for key, value in (("--reps", c.reps), ("--precision-cap", c.precision_cap),
                       ("--top-k", c.top_k)):
        if value < 1:
            raise _bad(key, "a positive integer", value)
    if not c.timeout_s > 0:
        raise _bad("--timeout-s", "a positive number of seconds", c.timeout_s)
    truth_rules.rule_name(c.truth_rule)
    if set(c.bands) != set(DEFAULT_BANDS):
        raise _bad("--band", f"the keys {sorted(DEFAULT_BANDS)}", sorted(c.bands))
    for key, band in c.bands.items():
        whole = key == "references_correct_max_outside"
        if whole and (band != int(band) or band < 0) or not whole and not 0 <= band <= 1:
            raise _bad(f"--band {key}", "a whole number of files, 0 or more" if whole
                       else "a fraction from 0 to 1", band)
    if c.purpose is not None and (not c.purpose.strip() or "\n" in c.purpose):
        raise _bad("--purpose", "one line saying what the suite measures", c.purpose)
    suite_tables.check_tables(c.test_files, *c.tables(), c.arms)
    if c.oracle is not None and not (settings.arms_dir / f"{c.oracle['arm']}.toml").is_file():
        raise _bad("--oracle", f"an arm with a spec in {settings.arms_dir}", c.oracle["arm"])
    return pin


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def suite_toml(c: SuiteChoices, pin: corpus.CorpusPin) -> str:
    """suite.toml: the declared choices, each with the comment the existing suites give it."""
    assert pin.sha is not None
    purpose = f" {c.purpose.rstrip('.')}." if c.purpose else ""
    header = (f"The {c.name} suite on corpus `{c.corpus}` ({pin.repo} @{pin.sha[:7]})."
              f"{purpose} Tasks are made from records by `sandbench suite add-tasks`, their "
              "truth by the mechanical rule `truth_rule` names (orchestrator/truth/rules.py), "
              "each task file quoting its rule and the command that printed its sets. "
              "Declared choices are stated in preregistration.md.")
    lines = [
        *textwrap.wrap(header, 96, initial_indent="# ", subsequent_indent="# ",
                       break_long_words=False, break_on_hyphens=False),
        "version = 1",
        f"name = {toml_text.string(c.name)}",
        f"corpus = {toml_text.string(c.corpus)}",
        f"arms = {toml_text.array(list(c.arms))}",
        f"baseline = {toml_text.string(c.baseline)}",
    ]
    if c.tool_under_test is not None:
        lines += ["# The tool under test: the disclosure block opens with its version, build "
                  "and isolation.", f"tool_under_test = {toml_text.string(c.tool_under_test)}"]
    lines += [
        "# Warm repeats after the one cold invocation of each task.",
        f"reps = {c.reps}",
        "# Seconds one invocation may run before its process tree is killed.",
        f"timeout_s = {_number(c.timeout_s)}",
        "# impact: an answer naming more than this many files is over the precision cap.",
        f"precision_cap = {c.precision_cap}",
        "# locate and e2e-retrieval: a ranked answer is cut at its first top_k files.",
        f"top_k = {c.top_k}",
        "# The mechanical rule `sandbench suite add-tasks` computes each task's truth by.",
        f"truth_rule = {toml_text.string(c.truth_rule)}",
        "# locate and e2e-retrieval: whether the truth keeps the test files the fix touched.",
        f"test_files = {toml_text.string(c.test_files)}",
        "# The version of the rules (orchestrator/truth/rules.py) add-tasks makes truth by.",
        f"truth_rule_version = {truth_rules.VERSION}",
        "",
        "[bands]",
        *(f"{key} = {_number(c.bands[key])}" for key in DEFAULT_BANDS),
        *suite_tables.toml_lines(*c.tables()),
    ]
    return "\n".join(lines) + "\n"


KIND_RULES = {
    "locate": "the files the fix commits touched that are tracked at the pin (`truth rule fix`, "
              "unioned over the commits); primary = the most changed one that is not a test "
              "file, touched = the others, types = the types the primary declares",
    "e2e-retrieval": "touched = the files the fix commits touched that are tracked at the pin",
    "references": "core = the files naming the symbol as a word in code, admissible = the files "
                  "naming it only in comments or strings (`truth rule refs`; under "
                  "text-v1-declaring-admissible the files declaring it are admissible)",
    "impact": "graded = the fix commits' files beyond the seed that are tracked at the pin, "
              "unioned with every file naming in code a type the seed declares (`truth rule "
              "impact`)",
}


def preregistration(c: SuiteChoices, pin: corpus.CorpusPin, today: str) -> str:
    """preregistration.md: the declared choices, generated from them; the tasks are appended by
    `suite add-tasks`, one section per records file."""
    assert pin.sha is not None
    arms = ", ".join(f"`{a}`" for a in c.arms)
    tool = f"tool under test `{c.tool_under_test}`" if c.tool_under_test else \
        "no tool under test declared"
    bands = c.bands
    parts = [
        f"# {c.name} suite: preregistration\n",
        f"Registered {today} by `sandbench suite new`, before any arm has run against this "
        "suite. Nothing here is changed after a run; a correction is added as a dated note "
        "below the original text, and the original stays.\n",
        *([f"{c.purpose.rstrip('.')}.\n"] if c.purpose else []),
        f"Corpus: `{c.corpus}` = {pin.repo} @ `{pin.sha}` (licence {pin.license}, kind "
        f"{pin.kind}, status {pin.status}).\n",
        "## Declared choices\n",
        f"- **Arms:** {arms}; baseline `{c.baseline}`; {tool}.",
        f"- **Reps:** 1 cold + {c.reps} warm per task; time limit {_number(c.timeout_s)} s per "
        "invocation.",
        f"- **Top-{c.top_k} cut** for `locate` and `e2e-retrieval`: a ranked answer is cut to "
        f"its first {c.top_k} files before grading; an answer without ranks is taken in its "
        "output order.",
        f"- **`e2e-retrieval` band:** `correct` = every touched file in the top {c.top_k}; "
        "`partial` = some.",
        f"- **Impact precision cap: {c.precision_cap} files.** An answer naming more is over "
        "the cap (neither correct nor partial; recall and precision still printed).",
        f"- **Truth rule `{c.truth_rule}`, rules version {truth_rules.VERSION}** "
        f"({truth_rules.RULES[c.truth_rule]}; stated in orchestrator/truth/rules.py): each "
        "task's truth is computed mechanically from a "
        "record by `sandbench suite add-tasks`, on the pristine corpus and the corpus's "
        "mirror, before any arm runs; no arm's tool is run to produce it. Per kind:",
        *(f"  - `{kind}`: {rule}." for kind, rule in KIND_RULES.items()),
        *suite_tables.prereg_lines(c.test_files, *c.tables()),
        "- **Bands:**\n",
        "| kind | `correct` | `partial` |",
        "| --- | --- | --- |",
        "| `locate` | names the primary fix file | names another touched file, or the right "
        "type in the wrong file |",
        f"| `references` | ≥{bands['references_correct_recall']:.0%} of the core set with "
        f"≤{_number(bands['references_correct_max_outside'])} files outside core ∪ "
        f"admissible | ≥{bands['references_partial_recall']:.0%} |",
        "| `impact` | every file in the graded set appears, under the precision cap | at least "
        f"{bands['impact_partial_fraction']:.0%} of it |",
        f"| `e2e-retrieval` | every touched file in the top {c.top_k} | some touched file in "
        f"the top {c.top_k} |",
    ]
    return "\n".join(_wrap_line(line) for line in parts) + "\n"


def _wrap_line(line: str, width: int = 96) -> str:
    """A paragraph or a list item wrapped at `width` (a table row, a heading stay whole)."""
    if line.startswith(("|", "#")):
        return line
    indent = " " * (len(line) - len(line.lstrip(" ")) + (2 if line.lstrip().startswith("- ")
                                                         else 0))
    return textwrap.fill(line, width, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False) + ("\n" if line.endswith("\n") else "")


def new_suite(settings: Settings, c: SuiteChoices, today: str | None = None) -> Path:
    """Create suites/NAME with suite.toml and preregistration.md, whole or not at all."""
    pin = _check_choices(settings, c)
    today = today or datetime.datetime.now(datetime.UTC).date().isoformat()
    settings.suites_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{c.name}.new-", dir=settings.suites_dir))
    try:
        (staging / "tasks").mkdir()
        atomic_write_text(staging / "suite.toml", suite_toml(c, pin))
        atomic_write_text(staging / suite_mod.PREREGISTRATION, preregistration(c, pin, today))
        staging.chmod(0o755)
        dest = settings.suites_dir / c.name
        if dest.exists():  # made since the check: still never overwrite
            raise _bad("NAME", "a suite that does not exist yet", c.name)
        os.rename(staging, dest)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return dest
