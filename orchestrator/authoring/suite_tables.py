"""The suite.toml choices `suite new` declares beyond the numbers: the test-file choice, the
grading rules, the families a suite does not attempt, the runtimes and the oracle. Each is
checked as the suite loader checks it, written with the comment the existing suites give it,
and stated in the preregistration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.sandbox import runtimes
from orchestrator import suite as suite_mod
from orchestrator.authoring import toml_text
from orchestrator.authoring._common import CLI, bad

_WHERE = Path(CLI)  # the loader's checks name the file; here the values came from the command


def check_tables(test_files: str, grading: dict[str, Any],
                 not_attempted: dict[str, tuple[str, str]], runtime: dict[str, Any] | None,
                 oracle: dict[str, Any] | None, arms: tuple[str, ...]) -> None:
    """Each declared table, checked by the suite loader's own checks."""
    if test_files not in suite_mod.TEST_FILES:
        raise bad("--test-files", " or ".join(suite_mod.TEST_FILES), test_files)
    declared = suite_mod.grading(_WHERE, grading)
    suite_mod.check_rules(_WHERE, suite_mod.GradingRules().over(declared), declared)
    suite_mod.families(_WHERE, {family: {"reason": reason, "source": source}
                                 for family, (reason, source) in not_attempted.items()})
    if runtime is not None:
        suite_mod.runtime(_WHERE, runtime, list(arms))
    if oracle is not None:
        suite_mod.oracle_ref(_WHERE, oracle)


def toml_lines(grading: dict[str, Any], not_attempted: dict[str, tuple[str, str]],
               runtime: dict[str, Any] | None, oracle: dict[str, Any] | None) -> list[str]:
    """The tables, after [bands], each with its comment (none when not declared)."""
    lines: list[str] = []
    if grading:
        lines += ["", "# How answers are graded where the methodology leaves it open "
                  "(orchestrator/suite/model.py GradingRules).", "[grading]",
                  *(f"{key} = {_value(value)}" for key, value in grading.items())]
    if runtime is not None:
        lines += ["", "# The container runtime of the arms (runc unless declared).", "[runtime]"]
        if "default" in runtime:
            lines.append(f"default = {toml_text.string(runtime['default'])}")
        if runtime.get("arms"):
            lines += ["", "[runtime.arms]", *(f"{toml_text.string(arm)} = "
                                              f"{toml_text.string(name)}"
                                              for arm, name in runtime["arms"].items())]
    if oracle is not None:
        lines += ["", "# The oracle whose index is the suite's compiler truth (`sandbench truth "
                  "build`).", "[oracle]", *(f"{key} = {_value(value)}"
                                            for key, value in oracle.items())]
    for family, (reason, source) in not_attempted.items():
        lines += ["", "# A methodology family this suite does not attempt: every run names it "
                  "among its deviations.", f"[families_not_attempted.{family}]",
                  f"reason = {toml_text.string(reason)}", f"source = {toml_text.string(source)}"]
    return lines


def prereg_lines(test_files: str, grading: dict[str, Any],
                 not_attempted: dict[str, tuple[str, str]], runtime: dict[str, Any] | None,
                 oracle: dict[str, Any] | None) -> list[str]:
    """The preregistration's list items stating the same choices."""
    kept = "keeps" if test_files == "include" else "leaves out"
    lines = [f"- **Test files (`test_files = \"{test_files}\"`):** the truth of `locate` and "
             f"`e2e-retrieval` {kept} the test files the fix touched."]
    if grading:
        lines.append("- **Grading rules:** " + ", ".join(
            f"`{key} = {_value(value)}`" for key, value in grading.items()) + ".")
    if runtime is not None:
        per_arm = ", ".join(f"`{arm}` {name}" for arm, name in runtime.get("arms", {}).items())
        lines.append(f"- **Runtime:** {runtime.get('default', runtimes.DEFAULT)} by default"
                     + (f"; {per_arm}" if per_arm else "") + ".")
    if oracle is not None:
        lines.append(f"- **Oracle:** `{oracle['arm']}` on `{oracle['project']}`"
                     + (", its edges the truth of edge tasks" if oracle.get("edges") else "")
                     + ".")
    lines += [f"- **Not attempted: {family}.** {reason.rstrip('.')} ({source})."
              for family, (reason, source) in not_attempted.items()]
    return lines


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int) else toml_text.string(str(value))
