"""What `suite add-tasks` takes from the suite it adds to: its declared rule, arms, cut, cap and
test-file choice; whether a task's truth can ever be graded `correct` under them; and the
task's own tables (commands, published figures) a record carries, as task-file TOML."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import suite as suite_mod
from orchestrator.authoring import toml_text
from orchestrator.truth import rules as truth_rules
from orchestrator.authoring._common import bad as _bad
from orchestrator.fsutil import read_toml

TEST_FILES = suite_mod.TEST_FILES


@dataclass(frozen=True)
class Declared:
    """The suite's choices add-tasks reads. `cut` is top_k unless [grading] cut = "none";
    `cap` is precision_cap unless [grading] precision_cap = "graded-multiple"."""

    path: Path
    corpus: str
    rule: str
    arms: tuple[str, ...]
    cut: int | None
    cap: int | None
    test_files: str


def read_declared(suite_toml: Path) -> Declared:
    """The declared choices of `suite_toml`, each checked as the suite loader checks it."""
    data = read_toml(suite_toml)
    rule = suite_mod.truth_rule(suite_toml, data.get("truth_rule"))
    if rule is None:
        raise _bad("truth_rule", f"one of {list(suite_mod.TRUTH_RULES)} (the rule add-tasks "
                   "computes truth by)", None, suite_toml)
    if suite_mod.truth_rule_version(suite_toml, data) != truth_rules.VERSION:
        raise _bad("truth_rule_version", f"{truth_rules.VERSION} (the version of the rules "
                   "add-tasks computes truth by: one suite's truth is made by one version)",
                   data.get("truth_rule_version"), suite_toml,
                   fix=f"make the suite again with `sandbench suite new` (it records version "
                   f"{truth_rules.VERSION}), or set truth_rule_version = {truth_rules.VERSION} "
                   "if no task was made yet")
    if not isinstance(corpus_id := data.get("corpus"), str):
        raise _bad("corpus", "the id of a corpus in corpus.lock", corpus_id, suite_toml)
    test_files = data.get("test_files", TEST_FILES[0])
    if test_files not in TEST_FILES:
        raise _bad("test_files", " or ".join(TEST_FILES), test_files, suite_toml)
    grading = data.get("grading", {})
    grading = grading if isinstance(grading, dict) else {}
    return Declared(
        path=suite_toml, corpus=corpus_id, rule=rule, arms=tuple(data.get("arms", ())),
        cut=None if grading.get("cut") == "none" else data.get("top_k"),
        cap=None if grading.get("precision_cap") == "graded-multiple"
        else data.get("precision_cap"), test_files=test_files)


def unreachable(declared: Declared, kind: str, truth: dict[str, Any]) -> str | None:
    """Why a task with this truth can never be graded `correct` under the suite's cut or cap
    (e2e-retrieval: every touched file in the top cut; impact: every graded file under the
    cap), or None when it can."""
    if kind == "e2e-retrieval" and declared.cut is not None \
            and len(truth["touched"]) > declared.cut:
        return (f"its truth has {len(truth['touched'])} touched files and the suite cuts an "
                f"answer at its first {declared.cut} (top_k)")
    if kind == "impact" and declared.cap is not None and len(truth["graded"]) > declared.cap:
        return (f"its truth has {len(truth['graded'])} graded files and the suite's precision "
                f"cap is {declared.cap} files (precision_cap)")
    return None


def unreachable_fix(record_id: str, kind: str) -> str:
    return (f"drop {kind} from the record's kinds, raise the suite's top_k or precision_cap "
            "(or declare test_files = \"exclude\" when test files fill the truth) before the "
            f"seal, or keep it disclosed: accept_unreachable = [\"{kind}\"] in record "
            f"{record_id!r}")


def task_tables(declared: Declared, where: str, record: Any, kind: str) -> str:
    """The [commands.ARM] and [published.ARM] tables the record gives this kind, as TOML (each
    arm one of the suite's; the tables' own keys are checked when the task file is read back)."""
    out = []
    for table in ("commands", "published"):
        for arm, body in sorted(getattr(record, table).get(kind, {}).items()):
            at = f"{where}.{table}.{kind}.{arm}"
            if arm not in declared.arms:
                raise _bad(at, f"one of the suite's arms {list(declared.arms)}", arm,
                           record.file)
            out += ["", f"[{table}.{arm}]"]
            out += [f"{key} = {_value(value, f'{at}.{key}', record.file)}"
                    for key, value in body.items()]
    return "\n".join(out) + "\n" if out else ""


def _value(value: Any, key: str, file: str) -> str:
    """A TOML value as written in a task file: a record's JSON or TOML value, read back as
    exactly itself (a script's line breaks escaped)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return toml_text.string(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return toml_text.array(value)
    raise _bad(key, "a string, number, boolean or list of strings", value, file)
