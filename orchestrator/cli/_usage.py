"""Usage errors in sandbench's own words. The parser's errors (a missing argument, an option
it does not know, a value it cannot convert, a choice or a range not met) become one
InputError naming the command, the option or argument, what it takes and what it was given,
with the command's help as the fix: never the parser's usage block, nor pydantic's wording
of why a value failed (typer converts values with pydantic)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from enum import Enum
from typing import Any

from typer import _click
from typer._click.exceptions import (BadOptionUsage, BadParameter, MissingParameter,
                                     NoSuchOption, UsageError)
from typer.core import TyperArgument, TyperOption

from orchestrator.errors import InputError

NOTHING = "nothing"


def _command_path(ctx: _click.Context | None) -> str:
    return ctx.command_path if ctx is not None else "sandbench"


def _help_fix(ctx: _click.Context | None, hint: str = "") -> str:
    return f"{hint}see {_command_path(ctx)} --help"


def param_name(param: _click.Parameter) -> str:
    """How the command line names it: the argument's NAME, the option's long form."""
    if isinstance(param, TyperArgument):
        return param.metavar or (param.name or "").upper()
    return max(param.opts, key=len)


def _number(annotation: Any, low: float | None, high: float | None) -> str:
    kind = "an integer" if annotation is int else "a number"
    if low is not None and high is not None:
        return f"{kind} from {low} to {high}"
    if low is not None:
        return f"{kind} of at least {low}"
    if high is not None:
        return f"{kind} of at most {high}"
    return kind


def expected(param: _click.Parameter) -> str:
    """What the parameter takes, in words: its choices, its range, the kind of path."""
    if isinstance(param, TyperOption) and param.is_flag:
        return "no value (a flag)"
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None:
        return "a value"
    if descriptor.is_choice and descriptor.choices:
        return "one of " + ", ".join(str(c.value) if isinstance(c, Enum) else str(c)
                                     for c in descriptor.choices)
    info = descriptor.parameter_info
    if descriptor.annotation in (int, float):
        return _number(descriptor.annotation, info.min, info.max)
    if descriptor.is_path:
        kind = {"dir": "directory"}.get(descriptor.path_type, descriptor.path_type)
        return f"an existing {kind}" if info.exists else f"a {kind}"
    return "a value"


def _given(err: BadParameter, args: Sequence[str] | None) -> object:
    """The value the parameter was given: as pydantic received it when it refused it, else
    read again from the command's own arguments."""
    from pydantic import ValidationError  # loaded already: typer converts values with it
    refusal = err.__cause__
    if isinstance(refusal, ValidationError):
        details = refusal.errors()
        if details and "input" in details[0]:
            return details[0]["input"]
    if err.ctx is None or err.param is None or args is None:
        return NOTHING
    try:
        opts, _, _ = err.ctx.command.make_parser(err.ctx).parse_args(args=list(args))
    except UsageError:
        return NOTHING
    value = opts.get(err.param.name)
    if isinstance(value, (list, tuple)) and len(value) == 1:
        return value[0]
    return NOTHING if value is None else value


def _option(ctx: _click.Context | None, name: str) -> _click.Parameter | None:
    if ctx is None:
        return None
    for param in ctx.command.params:
        if name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _refused(ctx: _click.Context | None, name: str, wanted: str, found: object,
             hint: str = "") -> InputError:
    shown = found if found is NOTHING else repr(found)
    return InputError(f"{_command_path(ctx)}: {name}: expected {wanted}, found {shown}",
                      fix=_help_fix(ctx, hint), key=name, expected=wanted, found=found)


def input_error(err: UsageError, args: Sequence[str] | None = None,
                parsing: _click.Context | None = None) -> InputError:
    """The parser's error as sandbench's own; `args` are the arguments the failing command
    was parsing (in context `parsing`), to name the value it was given."""
    ctx = err.ctx or parsing
    if isinstance(err, BadParameter) and err.param is not None:
        found = NOTHING if isinstance(err, MissingParameter) else _given(err, args)
        return _refused(ctx, param_name(err.param), expected(err.param), found)
    if isinstance(err, NoSuchOption):
        options = sorted(err.possibilities or ())
        hint = f"did you mean {' or '.join(options)}? " if options else ""
        return _refused(ctx, "option", f"an option of {_command_path(ctx)}", err.option_name,
                        hint)
    if isinstance(err, BadOptionUsage):
        param = _option(ctx, err.option_name)
        if param is not None and isinstance(param, TyperOption) and param.is_flag:
            given = next((a.split("=", 1)[1] for a in args or ()
                          if a.startswith(err.option_name + "=")), NOTHING)
            return _refused(ctx, err.option_name, expected(param), given)
        return _refused(ctx, err.option_name,
                        expected(param) if param is not None else "a value", NOTHING)
    return InputError(f"{_command_path(ctx)}: {err.message}", fix=_help_fix(ctx))


def left_over(ctx: _click.Context, args: Sequence[str]) -> list[str]:
    """The positional arguments beyond those the command's arguments take (the parser hands
    each argument its own): none when help is asked for, or when the parse proper will name
    what is wrong."""
    if any(arg in ctx.help_option_names for arg in args):
        return []
    try:
        _, left, _ = ctx.command.make_parser(ctx).parse_args(args=list(args))
    except UsageError:
        return []
    return list(left)


def extra_arguments(ctx: _click.Context, rest: Sequence[str]) -> InputError:
    """Arguments left over once every parameter took its own."""
    taken = [param_name(p) for p in ctx.command.params if isinstance(p, TyperArgument)]
    wanted = f"only {' '.join(taken)}" if taken else "no arguments"
    return _refused(ctx, "arguments", wanted, " ".join(rest))


def no_such_command(ctx: _click.Context, name: str, commands: Sequence[str]) -> InputError:
    close = difflib.get_close_matches(name, commands)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    return _refused(ctx, "command", "one of " + ", ".join(commands), name, hint)
