"""The `sandbench` command. Each group lives in its own module; commands stay thin:
parse, call one domain function, render, exit."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import typer
from typer._click import Context
from typer._click.exceptions import NoArgsIsHelpError, UsageError

from orchestrator.cli import _usage
from orchestrator.cli._help import Command, Group
from orchestrator.errors import SandbenchError
from orchestrator.untrusted.errors import HostileInput
from orchestrator.untrusted.text import terminal, terminal_traceback


@contextmanager
def _reported() -> Iterator[None]:
    """A SandbenchError anywhere below becomes one message on stderr and its exit code (its
    render escapes what a tool wrote into it), a usage error the parser raised outside
    sandbench's own commands the same (exit 2), a HostileInput that reached the top one
    escaped line and exit 1; Ctrl-C exits 130 quietly."""
    try:
        yield
    except NoArgsIsHelpError:
        raise
    except UsageError as err:
        typer.echo(_usage.input_error(err).render(), err=True)
        raise typer.Exit(2) from None
    except SandbenchError as err:
        typer.echo(err.render(), err=True)
        raise typer.Exit(err.exit_code) from None
    except HostileInput as err:
        typer.echo(f"error: {terminal(err)}", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None


class SandbenchGroup(Group):
    """Every error, the parser's included (parsing the top level's options happens in
    make_context, the commands' in invoke), in sandbench's own words (`_reported`)."""

    def make_context(self, *args: Any, **kwargs: Any) -> Context:
        with _reported():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: typer.Context):  # type: ignore[override]
        with _reported():
            return super().invoke(ctx)


# Plain help (no rich panels): the same text on a terminal, in a pipe and in a log.
app = typer.Typer(cls=SandbenchGroup, no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Reproducible, isolated benchmarks of code-intelligence tools.")


def version() -> str:
    """The installed package's version, as `pip` and the lock of a run know it."""
    from importlib import metadata  # 20 ms: only --version and a run's lock ask
    try:
        return metadata.version("sandbench")
    except metadata.PackageNotFoundError:
        return "unknown (not installed: pip install -e .)"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"sandbench {version()}")
        raise typer.Exit(0)


@app.callback()
def _root(_version: bool = typer.Option(False, "--version", is_eager=True,
                                        callback=_print_version,
                                        help="Print the version and exit.")) -> None:
    """Logs go to stderr, so that under --json stdout holds only the JSON."""
    from orchestrator import log  # structlog: not for --help or --version
    log.configure()


def _register() -> None:
    from orchestrator.cli import (audit, check, cleanup, compare, compose, corpus, images, k8s,
                                  run, sandbox, score, suite, truth)
    app.add_typer(images.app, name="images")
    app.add_typer(corpus.app, name="corpus")
    app.add_typer(sandbox.app, name="sandbox")
    app.add_typer(suite.app, name="suite")
    app.add_typer(truth.app, name="truth")
    app.command("run", cls=Command)(run.run)
    app.command("score", cls=Command)(score.score)
    app.command("report", cls=Command)(score.report)
    app.command("compare", cls=Command)(compare.compare)
    app.command("check", cls=Command)(check.check)
    app.add_typer(compose.app, name="compose")
    app.add_typer(k8s.app, name="k8s")
    app.command("audit", cls=Command)(audit.audit)
    app.command("cleanup", cls=Command)(cleanup.cleanup)


_register()


def _escaped_traceback(kind: type[BaseException], value: BaseException,
                       tb: TracebackType | None) -> None:
    """An unexpected error's traceback, its message escaped: it may quote a tool's bytes."""
    sys.stderr.write(terminal_traceback(kind, value, tb) + "\n")


def main() -> None:
    sys.excepthook = _escaped_traceback
    sys.exit(app())
