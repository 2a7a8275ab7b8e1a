"""`sandbench suite`: create a suite and add tasks from records (authoring by command), seal its
inputs before any arm runs, and verify the seal."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from orchestrator.cli._common import (BenchRoot, Json, SuiteName, emit_json, settings, show,
                                      table)
from orchestrator.cli._help import Command, Group
from orchestrator.errors import InputError
from orchestrator.untrusted.text import terminal

app = typer.Typer(cls=Group, no_args_is_help=True, help="Sealed task suites.")


def _load(name: str, bench_root: Path | None):
    from orchestrator import suite as suite_mod
    cfg = settings(bench_root)
    return cfg, suite_mod.load_suite(cfg.suites_dir, name)


@app.command("seal", cls=Command)
def seal(name: str = SuiteName, bench_root: Path = BenchRoot) -> None:
    """Write manifest.json: the sha256 of every input that decides a number."""
    from orchestrator import suite as suite_mod
    cfg, the_suite = _load(name, bench_root)
    path = suite_mod.seal(the_suite, cfg)
    typer.echo(f"sealed {name}: {path}")


@app.command("verify", cls=Command)
def verify(name: str = SuiteName, bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Check every sealed input; exits 1 naming each file that changed."""
    from orchestrator import suite as suite_mod
    cfg, the_suite = _load(name, bench_root)
    diffs = suite_mod.verify_seal(the_suite, cfg)
    if as_json:
        emit_json([dataclasses.asdict(d) for d in diffs])
    elif diffs:
        show(table([dataclasses.asdict(d) for d in diffs], ["file", "expected", "found"]))
    else:
        typer.echo(f"seal of {name} holds")
    if diffs:
        raise typer.Exit(1)


def _pairs(option: str, values: list[str], what: str) -> dict[str, str]:
    """KEY=VALUE options, each KEY once."""
    pairs: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key or key in pairs:
            raise InputError.bad_value("the command line", option, f"{what}, each KEY once",
                                       item)
        pairs[key] = value
    return pairs


def _bands(values: list[str]) -> dict[str, float]:
    from orchestrator import authoring
    bands = dict(authoring.DEFAULT_BANDS)
    for key, value in _pairs("--band", values, "KEY=NUMBER").items():
        if key not in bands:
            raise InputError.bad_value("the command line", "--band", "KEY=NUMBER with KEY one "
                                       f"of {sorted(bands)}", key)
        try:
            bands[key] = float(value)
        except ValueError:
            raise InputError.bad_value("the command line", f"--band {key}", "a number",
                                       value) from None
    return bands


def _grading(values: list[str]) -> dict[str, object]:
    """--grading KEY=VALUE: precision_cap_multiple a whole number, the others as given."""
    pairs: dict[str, object] = dict(_pairs("--grading", values, "KEY=VALUE"))
    if (multiple := pairs.get("precision_cap_multiple")) is not None:
        pairs["precision_cap_multiple"] = int(str(multiple)) if str(multiple).isdigit() \
            else multiple
    return pairs


def _not_attempted(reasons: list[str], sources: list[str]) -> dict[str, tuple[str, str]]:
    """--not-attempted FAMILY=REASON with --not-attempted-source FAMILY=SOURCE, each family."""
    why = _pairs("--not-attempted", reasons, "FAMILY=REASON")
    where = _pairs("--not-attempted-source", sources, "FAMILY=SOURCE")
    if odd := sorted(set(why) ^ set(where)):
        raise InputError.bad_value("the command line", "--not-attempted-source", "one "
                                   "--not-attempted-source FAMILY=SOURCE for each "
                                   "--not-attempted FAMILY=REASON", odd[0])
    return {family: (why[family], where[family]) for family in why}


def _runtime(default: str | None, per_arm: list[str]) -> dict[str, object] | None:
    arms = _pairs("--arm-runtime", per_arm, "ARM=RUNTIME")
    if default is None and not arms:
        return None
    return {**({"default": default} if default else {}), **({"arms": arms} if arms else {})}


@app.command("new", cls=Command)
def new(name: str = typer.Argument(..., metavar="NAME", show_default=False,
                                   help="The new suite's name (lower-case, digits, dashes)."),
        corpus_id: str = typer.Option(..., "--corpus", metavar="ID",
                                      help="A pinned corpus of corpus.lock."),
        arms: str = typer.Option(..., "--arms", metavar="A,B,...",
                                 help="The arms, comma-separated (each with arms/ARM.toml)."),
        baseline: str = typer.Option(..., "--baseline", metavar="ARM", help="The baseline arm."),
        tool: str = typer.Option(None, "--tool-under-test", metavar="ARM",
                                 help="The arm the disclosure block opens with."),
        reps: int = typer.Option(3, "--reps", metavar="N", help="Warm repeats after the cold one."),
        timeout_s: float = typer.Option(120, "--timeout-s", metavar="SECONDS",
                                        help="Seconds per invocation."),
        precision_cap: int = typer.Option(20, "--precision-cap", metavar="N",
                                          help="impact: most files an answer may name."),
        top_k: int = typer.Option(5, "--top-k", metavar="K",
                                  help="locate/e2e-retrieval: the ranked cut."),
        truth_rule: str = typer.Option("text-v1", "--truth-rule", metavar="RULE",
                                       help="text-v1 or text-v1-declaring-admissible."),
        band: list[str] = typer.Option([], "--band", metavar="KEY=NUMBER",
                                       help="A band other than the methodology's (repeat)."),
        purpose: str = typer.Option(None, "--purpose", metavar="TEXT",
                                    help="One line: what the suite measures (opens suite.toml "
                                         "and the preregistration)."),
        test_files: str = typer.Option("include", "--test-files", metavar="include|exclude",
                                       help="Whether the truth of locate and e2e-retrieval "
                                            "keeps the test files the fix touched."),
        grading: list[str] = typer.Option([], "--grading", metavar="KEY=VALUE",
                                          help="A grading rule of [grading] (repeat)."),
        not_attempted: list[str] = typer.Option(
            [], "--not-attempted", metavar="FAMILY=REASON",
            help="A methodology family the suite does not attempt, and why (repeat; each with "
                 "--not-attempted-source)."),
        not_attempted_source: list[str] = typer.Option(
            [], "--not-attempted-source", metavar="FAMILY=SOURCE",
            help="Where the reason a family is not attempted is stated (repeat)."),
        runtime: str = typer.Option(None, "--runtime", metavar="RUNTIME",
                                    help="The arms' container runtime (runc unless given)."),
        arm_runtime: list[str] = typer.Option([], "--arm-runtime", metavar="ARM=RUNTIME",
                                              help="One arm's runtime (repeat)."),
        oracle: str = typer.Option(None, "--oracle", metavar="ARM",
                                   help="The oracle arm whose index is the compiler truth."),
        oracle_project: str = typer.Option(".", "--oracle-project", metavar="DIR",
                                           help="The corpus directory the oracle indexes."),
        oracle_edges: bool = typer.Option(False, "--oracle-edges",
                                          help="The oracle's truth lists every edge."),
        bench_root: Path = BenchRoot) -> None:
    """Create suites/NAME: suite.toml with the declared choices and a preregistration.md that
    states them (never overwrites). Then: sandbench suite add-tasks NAME --records FILE."""
    from orchestrator import authoring, suite as suite_mod
    cfg = settings(bench_root)
    choices = authoring.SuiteChoices(
        name=name, corpus=corpus_id, arms=tuple(a.strip() for a in arms.split(",")),
        baseline=baseline, tool_under_test=tool, reps=reps, timeout_s=timeout_s,
        precision_cap=precision_cap, top_k=top_k, truth_rule=truth_rule, bands=_bands(band),
        purpose=purpose, test_files=test_files, grading=_grading(grading),
        not_attempted=_not_attempted(not_attempted, not_attempted_source),
        runtime=_runtime(runtime, arm_runtime),
        oracle=None if oracle is None else {"arm": oracle, "project": oracle_project,
                                            **({"edges": True} if oracle_edges else {})})
    path = authoring.new_suite(cfg, choices)
    typer.echo(f"created {path}: suite.toml, {suite_mod.PREREGISTRATION}")
    typer.echo(f"next: sandbench suite add-tasks {name} --records FILE --mirror MIRROR")


@app.command("add-tasks", cls=Command)
def add_tasks(name: str = SuiteName,
              records: Path = typer.Option(..., "--records", dir_okay=False, metavar="FILE",
                                           help="A records file, TOML or .json (orchestrator/"
                                                "schemas/records.schema.json; example: "
                                                "docs/records.example.json)."),
              mirror: Path = typer.Option(None, "--mirror", file_okay=False, metavar="MIRROR",
                                          help="The corpus's bare mirror, holding the fix "
                                               "commits (needed when a record names one)."),
              bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Make the task files of every record, truth by the suite's declared rule (never
    overwrites; nothing is written unless every task is made), copy the records file into the
    suite (records/FILE, sealed with it) and list the tasks in the preregistration. Then:
    sandbench suite seal NAME."""
    from orchestrator import authoring
    cfg = settings(bench_root)
    written = authoring.add_tasks(cfg, name, records, mirror)
    if as_json:
        emit_json({"suite": name, "tasks": [str(p) for p in written]})
        return
    for path in written:
        typer.echo(f"wrote {terminal(str(path))}")
    typer.echo(f"{len(written)} tasks; next: sandbench suite seal {name}")
