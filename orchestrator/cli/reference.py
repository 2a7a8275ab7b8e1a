"""docs/cli.md, the CLI reference, rendered from the typer app itself so it cannot drift from
the code: every command and subcommand with its usage, help, arguments and options (values,
defaults, environment variables). The text depends on nothing but the app: no terminal
width, no colour, no environment variable's value.

    python -m orchestrator.cli.reference           # write docs/cli.md
    python -m orchestrator.cli.reference --check   # exit 1 when docs/cli.md is stale
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from enum import Enum
from pathlib import Path

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from orchestrator.cli import app
from orchestrator.fsutil import atomic_write_text

Command = TyperCommand | TyperGroup
Parameter = TyperArgument | TyperOption

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
REGENERATE = "python -m orchestrator.cli.reference"


def commands(group: TyperGroup, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...],
                                                                           Command]]:
    """Every command below group, depth first, in the order `--help` lists them."""
    context = typer.Context(group, info_name=path[-1])
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if not isinstance(command, (TyperCommand, TyperGroup)) or command.hidden:
            continue
        yield (*path, name), command
        if isinstance(command, TyperGroup):
            yield from commands(command, (*path, name))


def paragraphs(text: str | None) -> str:
    """Help text as Markdown paragraphs: click's `\\b` markers dropped, lines rejoined."""
    if not text:
        return ""
    blocks = inspect.cleandoc(text).replace("\b\n", "").split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in block.splitlines()) for block in blocks)


def value_name(param: Parameter) -> str:
    """How the value is written on the command line: the metavar the help shows, a choice's
    values, else its own name in capitals."""
    if param.metavar:
        return param.metavar
    choices = getattr(getattr(param, "type", None), "choices", None)
    if choices:
        return "[" + "|".join(str(choice) for choice in choices) + "]"
    return (param.name or "value").upper()


def shown_default(param: Parameter) -> str | None:
    """The default as the help would state it, never computed (no callable runs, no
    environment is read), and nothing for a flag that is off or a value left unset."""
    default = param.default
    if callable(default) or default is None or default is False:
        return None
    if isinstance(default, (str, list, tuple)) and not default:
        return None
    if isinstance(default, Enum):
        default = default.value
    if isinstance(default, (list, tuple)):
        return " ".join(str(item) for item in default)
    if default is True and isinstance(param, TyperOption) and param.is_flag:
        return "on"
    return str(default)


def argument_line(param: TyperArgument) -> str:
    many = "..." if param.nargs != 1 else ""
    facts = ["required" if param.required else "optional"]
    default = shown_default(param)
    if default is not None:
        facts.append(f"default `{default}`")
    text = paragraphs(getattr(param, "help", None))
    return f"- `{value_name(param)}{many}` ({', '.join(facts)}){': ' + text if text else ''}"


def option_line(param: TyperOption) -> str:
    names = ", ".join(sorted(param.opts, key=len, reverse=True) + list(param.secondary_opts))
    spelled = names if param.is_flag else f"{names} {value_name(param)}"
    facts = []
    if param.required:
        facts.append("required")
    if param.multiple:
        facts.append("repeatable")
    default = shown_default(param)
    if default is not None:
        facts.append(f"default `{default}`")
    if param.envvar:
        envvars = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar)
        facts.append("environment " + ", ".join(f"`{name}`" for name in envvars))
    text = paragraphs(param.help)
    suffix = f" ({'; '.join(facts)})" if facts else ""
    return f"- `{spelled}`{suffix}{': ' + text if text else ''}"


def usage(path: tuple[str, ...], command: Command) -> str:
    context = typer.Context(command, info_name=" ".join(path))
    return " ".join([" ".join(path), *command.collect_usage_pieces(context)])


def section(path: tuple[str, ...], command: Command) -> str:
    """One command's part of the reference."""
    lines = [f"{'#' * min(len(path), 4)} `{' '.join(path)}`", ""]
    lines += ["```text", usage(path, command), "```", ""]
    text = paragraphs(command.help)
    if text:
        lines += [text, ""]
    if isinstance(command, TyperGroup):
        context = typer.Context(command, info_name=path[-1])
        subcommands = [name for name in command.list_commands(context)
                       if not (sub := command.get_command(context, name)) or not sub.hidden]
        lines += ["Commands: " + ", ".join(f"`{name}`" for name in subcommands) + ".", ""]
        return "\n".join(lines)
    arguments = [p for p in command.params if isinstance(p, TyperArgument)]
    options = [p for p in command.params
               if isinstance(p, TyperOption) and not p.hidden]
    if arguments:
        lines += ["Arguments:", "", *map(argument_line, arguments), ""]
    if options:
        lines += ["Options:", "", *map(option_line, options), ""]
    return "\n".join(lines)


def render() -> str:
    """The whole reference, the same bytes for the same app."""
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    every = list(commands(root, ("sandbench",)))
    lines = ["# CLI reference", "",
             f"Generated from the typer app by `{REGENERATE}`: do not edit it by hand",
             "(a unit test fails when this page is not what the generator renders). Every",
             "command also prints its own `--help`. Exit codes, the same for every command:",
             "0 success, 1 a failed check, 2 bad input (one message naming the file, key or",
             "argument), 3 a run that finished with arms refused, 130 interrupted (Ctrl-C).", "",
             *(f"{'  ' * (len(path) - 2)}- [`{' '.join(path)}`](#{'-'.join(path)})"
               for path, _ in every), "",
             "## `sandbench`", "",
             "```text", usage(("sandbench",), root), "```", "",
             paragraphs(root.help), ""]
    root_options = [p for p in root.params if isinstance(p, TyperOption) and not p.hidden]
    if root_options:
        lines += ["Options:", "", *map(option_line, root_options), ""]
    lines += [section(path, command) for path, command in every]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    fresh = render()
    if argv == ["--check"]:
        if REFERENCE.is_file() and REFERENCE.read_text(encoding="utf-8") == fresh:
            return 0
        print(f"error: {REFERENCE} is not what the CLI renders now\nfix: {REGENERATE}",
              file=sys.stderr)
        return 1
    if argv:
        print(f"error: unknown arguments {argv}\nfix: {REGENERATE} [--check]", file=sys.stderr)
        return 2
    atomic_write_text(REFERENCE, fresh)
    print(f"wrote {REFERENCE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
