"""How every command's help reads: a value is named in capitals (`--jobs N`, `SUITE`), never
by its Python type; a choice lists its values (`--format [md|json]`); an argument shows in the
usage line as `NAME`, `[NAME]` or `NAME...`, as command-line tools write it; a group lists
each command with its first sentence whole. Their parser's errors are sandbench's own
(`_usage`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum

from typer import _click
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperArgument, TyperCommand, TyperGroup

from orchestrator.cli import _usage


def choices_metavar(values: tuple[object, ...] | list[object]) -> str:
    """`[a|b]`: how an option whose value is one of a few shows them."""
    return "[" + "|".join(str(v.value) if isinstance(v, Enum) else str(v) for v in values) + "]"


def _name_value(param: _click.Parameter) -> None:
    """An argument is named by its own name in capitals; a choice by its values."""
    if param.metavar is not None:
        return
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None and descriptor.is_choice and descriptor.choices:
        param.metavar = choices_metavar(list(descriptor.choices))
    elif isinstance(param, TyperArgument) and param.name:
        param.metavar = param.name.upper()


def _usage_piece(argument: TyperArgument) -> str:
    name = f"{argument.metavar}{'...' if argument.nargs != 1 else ''}"
    return name if argument.required else f"[{name}]"


def _parsed(parse: Callable[[_click.Context, list[str]], list[str]], ctx: _click.Context,
            args: list[str]) -> list[str]:
    """`parse(ctx, args)` with the parser's errors as sandbench's own (help asked for by
    giving no arguments stays help)."""
    given = list(args)
    try:
        return parse(ctx, args)
    except NoArgsIsHelpError:
        raise
    except UsageError as err:
        raise _usage.input_error(err, given, ctx) from None


class Command(TyperCommand):
    """A command whose help names values, not types (see the module's docstring)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        for param in self.params:
            _name_value(param)

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        """Arguments left over are refused first, named: they say the command was misread,
        whatever the others' values."""
        if not ctx.allow_extra_args and not ctx.resilient_parsing:
            left_over = _usage.left_over(ctx, args)
            if left_over:
                raise _usage.extra_arguments(ctx, left_over)
        return _parsed(super().parse_args, ctx, args)

    def collect_usage_pieces(self, ctx: _click.Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                pieces.append(_usage_piece(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):
                arguments.append((f"{param.metavar}{'...' if param.nargs != 1 else ''}",
                                  record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class Group(TyperGroup):
    """A group whose command list gives each command's first sentence, wrapped, where click
    cuts it at the width left on one line."""

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        return _parsed(super().parse_args, ctx, args)

    def resolve_command(self, ctx: _click.Context, args: list[str]
                        ) -> tuple[str | None, _click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except UsageError as err:
            if type(err) is not UsageError or not args:
                raise
            commands: Sequence[str] = self.list_commands(ctx)
            raise _usage.no_such_command(ctx, args[0], commands) from None

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
