"""One error style on the command line: every usage error of every command (an option it does
not know, a value of the wrong type, a choice or a range not met, an argument missing or left
over, a run directory that does not exist) is sandbench's own `error:` / `fix:` lines, exit 2,
with none of the parser's or pydantic's wording. And the top level loads no engine client."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.main
from typer import _click as click
from typer.core import TyperArgument, TyperOption
from typer.testing import CliRunner

from orchestrator.cli import app

runner = CliRunner()

# What click's usage block and pydantic's validation messages say; none may reach a user.
LIBRARY_WORDING = ("Usage:", "Try '", "Error:", "Invalid value", "Input should", "Value error",
                   "is not one of", "No such option", "No such command", "Missing argument",
                   "Missing option", "Got unexpected", "requires an argument",
                   "does not take a value", "validation error", "greater than", "Traceback",
                   "does not exist.", "Possible options")


def _leaves(command: click.Command, path: tuple[str, ...] = ()
            ) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        yield path, command
    for name, sub in (subcommands or {}).items():
        yield from _leaves(sub, (*path, name))


LEAVES = list(_leaves(typer.main.get_command(app)))


def _bad_values(command: click.Command) -> Iterator[tuple[str, list[str]]]:
    """For each option taking a value: one of the wrong type or outside its choices/range."""
    for param in command.params:
        descriptor = getattr(param, "type_descriptor", None)
        if not isinstance(param, TyperOption) or param.is_flag or descriptor is None:
            continue
        option = max(param.opts, key=len)
        if descriptor.is_choice:
            yield "bogus", [option, "bogus"]
        elif descriptor.annotation in (int, float):
            yield "x", [option, "x"]
            if descriptor.parameter_info.min is not None:
                yield str(descriptor.parameter_info.min - 1), [
                    option, str(descriptor.parameter_info.min - 1)]


def _cases() -> Iterator[tuple[str, list[str], str]]:
    """(what the error must name, the arguments, the value it must say it found)."""
    for path, command in LEAVES:
        yield "option", [*path, "--no-such-option"], "'--no-such-option'"
        for found, args in _bad_values(command):
            yield args[0], [*path, *args], repr(found)
        required = [p for p in command.params if isinstance(p, TyperArgument) and p.required]
        if required and not command.no_args_is_help:
            yield str(required[0].metavar), list(path), "nothing"
        if not any(isinstance(p, TyperArgument) and p.nargs == -1 for p in command.params):
            values = ["x"] * sum(1 for p in command.params if isinstance(p, TyperArgument))
            yield "arguments", [*path, *values, "extra"], "'extra'"


CASES = list(_cases())


def _assert_own_words(args: list[str], named: str, found: str) -> None:
    result = runner.invoke(app, args)
    where = f"sandbench {' '.join(args)}"
    assert result.exit_code == 2, (where, result.output)
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: ") and lines[1].startswith("  fix: "), (where, lines)
    assert f"{named}: expected " in lines[0] and lines[0].endswith(f"found {found}"), (where,
                                                                                      lines)
    assert "--help" in lines[1], (where, lines)
    for phrase in LIBRARY_WORDING:
        assert phrase not in result.output, (where, phrase, result.output)


def test_every_command_is_walked() -> None:
    assert len(LEAVES) >= 25 and len(CASES) >= 4 * len(LEAVES) // 2
    assert any(named == "--jobs" for named, _, _ in CASES)  # a range: run and images build
    assert any(named == "--format" for named, _, _ in CASES)  # a choice: report, compare


@pytest.mark.parametrize(("named", "args", "found"), CASES,
                         ids=[" ".join(args) for _, args, _ in CASES])
def test_a_usage_error_is_sandbenchs_own(named: str, args: list[str], found: str) -> None:
    _assert_own_words(args, named, found)


@pytest.mark.parametrize(("args", "named", "found", "words"), [
    (["run", "demo", "--jobs", "0"], "--jobs", "'0'", "an integer of at least 1"),
    (["run", "demo", "--exec-path", "later"], "--exec-path", "'later'",
     "one of resident, docker-exec"),
    (["run", "demo", "--on-engine-refused", "later"], "--on-engine-refused", "'later'",
     "one of move, stop"),
    (["report", "--format", "bogus", "x"], "--format", "'bogus'", "one of md, json"),
    (["run", "demo", "--jobs"], "--jobs", "nothing", "an integer of at least 1"),
    (["run", "demo", "--dry-run=3"], "--dry-run", "'3'", "no value (a flag)"),
    (["images", "import", "/nonexistent/archive"], "FILE", "'/nonexistent/archive'",
     "an existing file"),
    (["nosuch"], "command", "'nosuch'", "one of run, score, report"),
    (["images", "nosuch"], "command", "'nosuch'", "one of build, ls"),
    (["--bogus"], "option", "'--bogus'", "an option of root"),
])
def test_the_error_says_what_was_expected(args: list[str], named: str, found: str,
                                          words: str) -> None:
    _assert_own_words(args, named, found)
    assert f"expected {words}" in runner.invoke(app, args).stderr


def test_a_near_miss_is_suggested() -> None:
    assert "fix: did you mean score? see root --help" in runner.invoke(app, ["scroe"]).stderr
    result = runner.invoke(app, ["run", "demo", "--jbos", "2"])
    assert "did you mean --jobs or --json?" in result.stderr


def test_a_group_without_a_command_still_shows_its_help() -> None:
    result = runner.invoke(app, ["images"])
    assert "Commands:" in result.output and "error:" not in result.output


@pytest.mark.parametrize("args", [
    ["report", "RUN"], ["score", "RUN"], ["audit", "RUN"], ["check", "RUN"],
    ["check", "HERE", "--baseline", "RUN"], ["compare", "RUN", "HERE"], ["compare", "HERE", "RUN"],
    ["truth", "compare", "RUN"], ["k8s", "export", "demo", "--run", "RUN"],
    ["compose", "export", "demo", "--run", "RUN"]])
def test_a_run_directory_that_does_not_exist_is_named(args: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "runs" / "x"
    given = {"RUN": str(missing), "HERE": str(tmp_path)}
    result = runner.invoke(app, [given.get(a, a) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: run directory {missing} does not exist\n")
    assert "fix: give a run directory" in result.stderr
    assert "scores.json" not in result.stderr


# What no help loads: the engine client (and the SDK under it), the run, the scorer; each
# command imports what it needs when it runs. The top level's help and version load none of
# the libraries either (a command's own help parses the top level's options first, which
# loads typer's pydantic, and configures the logs).
ENGINE_SIDE = ("docker", "requests", "paramiko", "tenacity", "orchestrator.engine",
               "orchestrator.engine_pool", "orchestrator.run", "orchestrator.score",
               "orchestrator.report", "orchestrator.suite", "orchestrator.isolation.guards")
LIBRARIES = ("pydantic", "jsonschema", "structlog", "rich", "orchestrator.fsutil")
LOADED = """
import sys
from orchestrator.cli import app
try:
    app({args!r}, prog_name="sandbench")
except SystemExit:
    pass
print(" ".join(sorted(sys.modules)))
"""


def _loaded(args: list[str], heavy: tuple[str, ...]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", LOADED.format(args=args)], check=True,
                         capture_output=True, text=True).stdout.splitlines()[-1].split()
    assert "orchestrator.cli" in out
    return [m for m in out if any(m == h or m.startswith(h + ".") for h in heavy)]


@pytest.mark.parametrize("args", [[], ["--version"], ["--help"]])
def test_the_top_level_loads_no_engine_client_nor_library(args: list[str]) -> None:
    assert _loaded(args, ENGINE_SIDE + LIBRARIES) == []


@pytest.mark.parametrize("args", [["run", "--help"], ["images", "build", "--help"]])
def test_a_commands_help_loads_no_engine_client(args: list[str]) -> None:
    assert _loaded(args, ENGINE_SIDE) == []
