"""The CLI end to end with typer's CliRunner: exit codes and one clear message, no traceback."""

from __future__ import annotations

import json
import socket
import shutil
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
import typer.main
from typer import _click as click
from typer.testing import CliRunner

from orchestrator.cli import _common, app
from orchestrator.engine import Engine
from orchestrator.isolation.policy import GuardResult
from orchestrator.run import pool
from orchestrator.run.pool import ON_REFUSED
from orchestrator.sandbox.spec import EXEC_PATHS

FIXTURES = Path(__file__).parent / "bad_input" / "fixtures"

runner = CliRunner()


def test_no_engine_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    result = runner.invoke(app, ["images", "ls", "--bench-root", str(tmp_path / "b")])
    assert result.exit_code == 1
    assert "no Docker engine answers at unix://" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "b").exists()


def test_dry_run_build_lists_every_image_without_an_engine(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    result = runner.invoke(app, ["images", "build", "--dry-run", "--bench-root",
                                 str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    for name in ("base", "rg", "ast-grep", "code-review-graph", "probe"):
        assert name in result.output
    assert "would-build" in result.output
    assert not (tmp_path / "b").exists()


def _suite_build_listed(tmp_path: Path) -> tuple[list[str], str]:
    result = runner.invoke(app, ["images", "build", "--suite", "demo", "--dry-run", "--json",
                                 "--bench-root", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "b").exists()
    return [o["name"] for o in json.loads(result.stdout)], result.stderr.strip()


def test_build_for_a_suite_lists_its_arms_images_parents_first_and_names_the_rest(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """On this host's engine driven by root: the arms' images alone."""
    with socket.socket(socket.AF_UNIX) as here:  # an engine's socket on this host
        here.bind(str(tmp_path / "d.sock"))
        monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/d.sock")
        monkeypatch.setattr(pool.os, "geteuid", lambda: 0)
        listed, said = _suite_build_listed(tmp_path)
        # The demo's arms' images (devscout's too: its artifact decides, not the suite),
        # their parents first; no oracle, no image only tests or other suites use.
        assert listed == ["base", "python", "ast-grep", "mcp", "code-index-mcp",
                          "code-review-graph", "ctags", "devscout", "rg"]
        assert said == (
            "not built (no arm of suite 'demo' runs in them): aider-repomap, base-trixie, "
            "engine-agent, oracle-rust-analyzer, oracle-scip-typescript, probe, serena")
        # A member of the docker group gets file systems the engine makes: its agent too.
        monkeypatch.setattr(pool.os, "geteuid", lambda: 1000)
        listed, said = _suite_build_listed(tmp_path)
        assert "engine-agent" in listed and "engine-agent" not in said


def test_build_for_an_unknown_suite_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["images", "build", "--suite", "nosuch", "--dry-run",
                                 "--bench-root", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "nosuch" in result.output and "Traceback" not in result.output


def test_unknown_image_exits_2_naming_the_known_ones(tmp_path: Path) -> None:
    result = runner.invoke(app, ["images", "build", "nope", "--dry-run", "--bench-root",
                                 str(tmp_path)])
    assert result.exit_code == 2
    assert "unknown image 'nope'" in result.output and "rg" in result.output


def test_a_corrupt_image_lock_exits_2_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "images.lock").write_text("{oops")
    result = runner.invoke(app, ["images", "build", "--dry-run", "--bench-root", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'images.lock'}: does not parse" in result.output
    assert (tmp_path / "images.lock").read_text() == "{oops"


def test_audit_of_a_non_run_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["audit", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a sandbench run directory" in result.output


def test_tables_without_a_terminal_are_plain_one_line_rows(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "20")
    args = ["images", "build", "--dry-run", "--bench-root", str(tmp_path / "b")]
    first, again = runner.invoke(app, args), runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert first.stdout == again.stdout
    assert "\x1b" not in first.stdout
    assert first.stdout.splitlines()[0].split() == ["NAME", "ACTION", "REASON", "TAG",
                                                    "SECONDS"]
    rows = [line.split(maxsplit=2) for line in first.stdout.splitlines()]
    assert ["devscout", "unavailable", "needs --artifact devscout=PATH"] in rows
    assert all(line == line.rstrip() for line in first.stdout.splitlines())


def test_guards_without_a_terminal_are_lines_of_text_no_wider_than_100(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "4000")
    found = "[bold]" + "x" * 300 + " /state\x1b[2J"
    _common.show_guards("rg: REFUSED", [
        GuardResult("read_only_root", "outside", True, True, True),
        GuardResult("user", "inside", "[red]1000", found, False)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["", "rg: REFUSED", "ok    outside  read_only_root: True"]
    assert all(len(line) <= _common.GUARD_WIDTH for line in lines)
    assert lines[3].startswith("FAIL  inside   user: expected [red]1000; found [bold]xxx")
    shown = "".join("".join(lines[3:]).split())
    assert "x" * 300 + "/state\\x1b[2J" in shown  # markup as text, the escape escaped
    assert "\x1b" not in "".join(lines)


def test_audit_in_a_pipe_wraps_whatever_columns_says(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    run = tmp_path / "runs" / "check-x"
    shutil.copytree(FIXTURES / "guards" / "rg", run / "guards" / "rg")
    monkeypatch.delenv("COLUMNS", raising=False)
    result = runner.invoke(app, ["audit", str(run)])
    lines = result.stdout.splitlines()
    assert "rg: " in lines[1] and len(lines) > 40
    assert max(len(line) for line in lines) <= _common.GUARD_WIDTH
    assert "ok    outside  network_mode: none" in lines
    monkeypatch.setenv("COLUMNS", "30")
    assert runner.invoke(app, ["audit", str(run)]).stdout == result.stdout


# -- help, version --------------------------------------------------------------------------------

def _commands(command: click.Command, path: tuple[str, ...] = ()
              ) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))


def _help(path: tuple[str, ...]) -> str:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_command_is_covered() -> None:
    paths = {" ".join(p) for p, _ in COMMANDS}
    assert {"run", "report", "compare", "check", "images ls", "images prune", "corpus fetch",
            "sandbox exec", "sandbox try", "k8s export"} <= paths
    assert len(paths) == 41  # the root, 9 groups, 31 commands


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "root")
def test_help_names_values_never_python_types(path: tuple[str, ...]) -> None:
    shown = _help(path)
    for python in ("<bool>", "<str>", "<int", "<float", "<path>", "<dir>", "<file>", "list[",
                   "int range", "{", "}"):
        assert python not in shown, f"sandbench {' '.join(path)} --help shows {python!r}"
    assert "\x1b" not in shown and "╭" not in shown  # plain text, the same in a pipe


def test_every_choice_lists_its_values_in_help() -> None:
    choices = 0
    for path, command in COMMANDS:
        for param in command.params:
            descriptor = getattr(param, "type_descriptor", None)
            if descriptor is not None and descriptor.is_choice:
                choices += 1
                values = "|".join(str(c) for c in descriptor.choices)
                assert f"[{values}]" in _help(path), (path, param.name)
    assert choices >= 1  # report --format
    assert "--format [md|json]" in _help(("report",))
    run_help = _help(("run",))
    assert f"--exec-path [{'|'.join(EXEC_PATHS)}]" in run_help
    assert f"--on-engine-refused [{'|'.join(ON_REFUSED)}]" in run_help


def test_usage_lines_name_arguments_as_a_command_line_does() -> None:
    assert "Usage: root run [OPTIONS] SUITE\n" in _help(("run",))
    assert "Usage: root images build [OPTIONS] [NAME...]\n" in _help(("images", "build"))
    assert "Usage: root sandbox exec [OPTIONS] ARM CMD...\n" in _help(("sandbox", "exec"))
    assert "--jobs N " in _help(("run",))


def test_a_group_lists_each_commands_first_sentence_whole() -> None:
    listed = " ".join(_help(()).split())
    assert "score Score a run offline: grades, cost, wall time, reach and setup cost into " \
           "RUN_DIR/scores.json. report" in listed
    for group in ((), ("images",), ("corpus",), ("sandbox",), ("truth",)):
        commands = _help(group).split("Commands:")[1]
        assert "..." not in commands, group


def test_version_prints_the_package_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"sandbench {metadata.version('sandbench')}\n"


def test_tools_is_not_a_suite(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "nosuch", "--dry-run", "--bench-root", str(tmp_path)])
    assert result.exit_code == 2
    assert "known suites: csharp, csharp-held-out, csharp-published-rg, demo," in result.stderr
    assert "tools" not in result.stderr


# -- run --dry-run --------------------------------------------------------------------------------

def test_dry_run_lists_a_bogus_option_and_a_missing_corpus_and_exits_2(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    result = runner.invoke(app, ["run", "csharp", "--dry-run", "--resume", str(tmp_path),
                                 "--bench-root", str(tmp_path / "b")])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [errors[0]] and "the run could not start" in errors[0]
    assert f"--resume {tmp_path}: no run.json" in result.stderr
    assert "corpus 'csharp' is not fetched: sandbench corpus fetch csharp --from " \
           "PATH/TO/MIRROR" in result.stderr
    assert "no Docker engine answers" in result.stderr
    assert "rg " in result.stdout  # the plan it could make
    assert "Traceback" not in result.output
    assert not (tmp_path / "b").exists()


def test_dry_run_with_good_options_but_nothing_fetched_exits_1(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    result = runner.invoke(app, ["run", "demo", "--dry-run", "--json", "--on-engine-refused",
                                 "move", "--bench-root", str(tmp_path / "b")])
    assert result.exit_code == 1, result.output
    plan = json.loads(result.stdout)
    assert any(p.startswith("corpus 'demo' is not fetched: sandbench corpus fetch demo")
               for p in plan["problems"])
    assert "--from" not in " ".join(plan["problems"])  # demo is embedded: no mirror needed
    assert "corpus 'demo' is not fetched" in result.stderr


def test_dry_run_names_every_bad_option(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    result = runner.invoke(app, ["run", "demo", "--dry-run", "--arm", "nope", "--resume",
                                 str(tmp_path), "--bench-root", str(tmp_path / "b")])
    assert result.exit_code == 2
    for problem in (f"--resume {tmp_path}: no run.json", "arm 'nope' is not in suite 'demo'"):
        assert problem in result.stderr


@pytest.mark.parametrize(("option", "listed"), [("--exec-path", ", ".join(EXEC_PATHS)),
                                                ("--on-engine-refused", ", ".join(ON_REFUSED))])
def test_a_choice_not_listed_is_refused_by_the_parser_with_exit_2(
        option: str, listed: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "demo", "--dry-run", option, "later",
                                 "--bench-root", str(tmp_path / "b")])
    assert result.exit_code == 2
    assert f"{option}: expected one of {listed}, found 'later'" in result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "b").exists()


# -- images ls ------------------------------------------------------------------------------------

class _Present:
    def image_id(self, ref: str) -> str | None:
        return ref if ref.endswith("1") else None


def test_images_ls_shows_human_units(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def entry(seconds: float, size: int, image: str, **more: object) -> dict:
        return {"recipe_hash": "0" * 64, "image_id": "sha256:" + image * 64,
                "tag": f"sandbench/x:{image * 12}", "build_args": {}, "build_seconds": seconds,
                "size_bytes": size, **more}
    lock = {"version": 1, "images": {
        "base": entry(37.25, 198_901_244, "1", base={"source": "debootstrap", "key": "k",
                                                      "bootstrap_seconds": 18.7}),
        "base-trixie": entry(0.8, 209_902_326, "1", base={"source": "debootstrap", "key": "j"}),
        "oracle-rust-analyzer": entry(205.771, 1_748_396_625, "2")}}
    (tmp_path / "images.lock").write_text(json.dumps(lock))
    monkeypatch.setattr(Engine, "connect", classmethod(lambda cls: _Present()))
    result = runner.invoke(app, ["images", "ls", "--bench-root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[2:]}
    assert rows["base"].split()[3:7] == ["yes", "198.9", "MB", "37.2"]
    assert "(bootstrap not timed)" in rows["base-trixie"]
    assert rows["oracle-rust-analyzer"].split()[3:9] == ["no", "1.7", "GB", "3", "min", "25.8"]
    assert rows["rg"].split()[1:3] == ["base", "no"]
    for raw in ("True", "False", "198901244", "1748396625", "205.771"):
        assert raw not in result.stdout
    as_json = json.loads(runner.invoke(app, ["images", "ls", "--json", "--bench-root",
                                             str(tmp_path)]).stdout)
    base = {r["name"]: r for r in as_json}["base"]
    assert (base["present"], base["size_bytes"], base["bootstrap_seconds"]) == (True,
                                                                                 198_901_244,
                                                                                 18.7)
