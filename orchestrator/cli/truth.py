"""`sandbench truth`: a suite's compiler truth, from its oracle's transcript; and the
mechanical text truth rules (`truth rule`), which task authoring computes truth with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from orchestrator.cli._common import BenchRoot, Json, emit_json, run_dir_argument, settings
from orchestrator.cli._help import Command, Group
from orchestrator.errors import InputError
from orchestrator.untrusted.text import terminal, terminal_lines

app = typer.Typer(cls=Group, no_args_is_help=True,
                  help="Compiler truth from oracles; the mechanical text truth rules.")


@app.command("build", cls=Command)
def build(name: str = typer.Argument(..., metavar="SUITE", help="A suite with an [oracle]."),
          bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Run the suite's oracle in a sandbox and store its truth sets under the suite (then
    `sandbench suite seal NAME` covers them)."""
    from orchestrator.engine import Engine
    from orchestrator.fsutil import read_json
    from orchestrator.oracle import build as oracle_build
    path = oracle_build.build(Engine.connect(), settings(bench_root), name)
    document = read_json(path)
    if as_json:
        emit_json({"truth": str(path), "oracle": document["oracle"],
                   "transcript": document["transcript"], "resolution": document["resolution"],
                   "tasks": sorted(document["tasks"])})
        return
    oracle = document["oracle"]
    typer.echo(f"{oracle['arm']} ({terminal(oracle['tool_version'])}, "
               f"image {terminal(oracle['image_id'][:19])}): "
               f"{len(document['tasks'])} task truths"
               + (f", {len(document['edges'])} edges" if "edges" in document else ""))
    typer.echo(f"index: {document['transcript']['stdout_bytes']} bytes, stdout sha256 "
               f"{document['transcript']['stdout_sha256']}")
    typer.echo(f"truth: {path}")
    typer.echo(f"next: sandbench suite seal {name}")


@app.command("compare", cls=Command)
def compare(run_dir: Path = run_dir_argument("A scored run directory."),
            bench_root: Path = BenchRoot, as_json: bool = Json) -> None:
    """Grade a scored run's answers against the suite's compiler truth too, and list where the
    text and compiler truths disagree (RUN_DIR/truth-comparison.md)."""
    from orchestrator.oracle import compare as compare_mod
    path, figures = compare_mod.compare(run_dir, settings(bench_root).suites_dir)
    if as_json:
        emit_json({"document": str(path), **figures})
        return
    typer.echo(terminal_lines(path.read_text()), nl=False)
    typer.echo(f"document: {path}")


rule_app = typer.Typer(cls=Group, no_args_is_help=True,
                       help="The mechanical text truth rules (orchestrator/truth/rules.py), "
                            "on a pristine corpus and its mirror; text_truth.py's output, or "
                            "JSON.")
app.add_typer(rule_app, name="rule")

Pristine = typer.Argument(..., metavar="PRISTINE", file_okay=False, exists=True,
                          help="The corpus's pristine copy (at the pin).")
Mirror = typer.Argument(..., metavar="MIRROR", file_okay=False, exists=True,
                        help="The corpus's bare mirror (holds the fix commits).")


def _print(as_json: bool, document: dict[str, Any], lines: list[str]) -> None:
    """A rule's result: its JSON document, or text_truth.py's lines, each path escaped for the
    terminal (tabs and breaks kept)."""
    if as_json:
        emit_json(document)
        return
    for line in lines:
        typer.echo("\t".join(terminal_lines(part) for part in line.split("\t")))


@rule_app.command("fix", cls=Command)
def rule_fix(mirror: Path = Mirror,
             shas: list[str] = typer.Argument(..., metavar="FIX_SHA",
                                              help="One or more fix commits (unioned)."),
             ext: str = typer.Option("cs", "--ext", metavar="EXT",
                                  help="The language's extension."),
             as_json: bool = Json) -> None:
    """The files the fix commits changed, most changed lines first (and, in JSON, the
    primary fix file: the first that is not a test file)."""
    from orchestrator.truth import rules as truth_rules
    from orchestrator.corpus import foreign
    with foreign.opened(mirror, "MIRROR") as repo:
        rows = truth_rules.fix_files(repo, shas, ext)
    _print(as_json, truth_rules.fix_json(shas, rows, ext), truth_rules.fix_lines(rows))


@rule_app.command("refs", cls=Command)
def rule_refs(pristine: Path = Pristine,
              symbol: str = typer.Argument(..., metavar="NAME", help="The symbol."),
              ext: str = typer.Option("cs", "--ext", metavar="EXT", help="cs, ts or rs."),
              rule: str = typer.Option("text-v1", "--rule", metavar="RULE",
                                       help="text-v1, or text-v1-declaring-admissible (the "
                                            "declaring files go to admissible)."),
              as_json: bool = Json) -> None:
    """core: the files naming NAME in code; admissible: naming it only in comments or
    strings."""
    from orchestrator.truth import rules as truth_rules, sources as truth_sources
    from orchestrator.corpus import foreign
    with foreign.opened(pristine, "PRISTINE") as checkout:
        result = truth_rules.refs(truth_sources.Sources(checkout), symbol, ext, rule)
    _print(as_json, result.to_json(), truth_rules.refs_lines(result))


@rule_app.command("impact", cls=Command)
def rule_impact(pristine: Path = Pristine,
                seed: str = typer.Argument(..., metavar="SEED", help="The seed file."),
                mirror: Path = typer.Option(None, "--mirror", file_okay=False, exists=True,
                                            metavar="MIRROR",
                                            help="The mirror holding the fix commits."),
                fixes: list[str] = typer.Option([], "--fix", metavar="SHA",
                                                help="A fix commit (repeat: unioned)."),
                as_json: bool = Json) -> None:
    """graded: the fix's files beyond SEED, unioned with every file naming in code a type
    SEED declares (one hop, dependents only)."""
    from orchestrator.truth import rules as truth_rules, sources as truth_sources
    from orchestrator.corpus import foreign
    if bool(fixes) != (mirror is not None):
        raise InputError.bad_value("the command line", "--mirror/--fix", "both (a fix in a "
                                   "mirror) or neither", {"mirror": mirror, "fix": fixes})
    with foreign.opened(pristine, "PRISTINE") as checkout, \
            foreign.opened_if(mirror, "--mirror") as repo:
        result = truth_rules.impact(truth_sources.Sources(checkout), seed, repo, fixes)
    _print(as_json, result.to_json(), truth_rules.impact_lines(result))


@rule_app.command("declares", cls=Command)
def rule_declares(pristine: Path = Pristine,
                  term: str = typer.Argument(..., metavar="TERM",
                                             help="The published task's search term."),
                  what: str = typer.Option(..., "--what", metavar="WHAT",
                                           help="type (a type whose name contains TERM) or "
                                                "member (a declaration line containing it)."),
                  ignore_case: bool = typer.Option(False, "--ignore-case",
                                                   help="Compare without case, as rg -i."),
                  ext: str = typer.Option("cs", "--ext", metavar="EXT", help="cs, ts or rs."),
                  as_json: bool = Json) -> None:
    """The non-test files whose code declares what TERM names (a published task whose
    question is a search term); in path order, the first is a locate task's primary."""
    from orchestrator.truth import rules as truth_rules, sources as truth_sources
    from orchestrator.corpus import foreign
    with foreign.opened(pristine, "PRISTINE") as checkout:
        result = truth_rules.declarations(truth_sources.Sources(checkout), term, what, ext,
                                          ignore_case)
    _print(as_json, result.to_json(), truth_rules.declarations_lines(result))
