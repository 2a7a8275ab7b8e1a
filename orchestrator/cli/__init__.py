"""The `sandbench` command. Each group lives in its own module; commands stay thin:
parse, call one domain function, render, exit."""

from __future__ import annotations

import sys

import click
import typer
from typer.core import TyperGroup

from orchestrator import log
from orchestrator.errors import SandbenchError


class SandbenchGroup(TyperGroup):
    """Turns a SandbenchError anywhere below into one message on stderr and its exit code;
    Ctrl-C exits 130 quietly."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except SandbenchError as err:
            click.echo(err.render(), err=True)
            ctx.exit(err.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)


app = typer.Typer(cls=SandbenchGroup, no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False,
                  help="Reproducible, isolated benchmarks of code-intelligence tools.")


@app.callback()
def _root() -> None:
    """Logs go to stderr, so that under --json stdout holds only the JSON."""
    log.configure()


def _register() -> None:
    from orchestrator.cli import audit, cleanup, corpus, images, sandbox
    app.add_typer(images.app, name="images")
    app.add_typer(sandbox.app, name="sandbox")
    app.add_typer(corpus.app, name="corpus")
    app.command("audit")(audit.audit)
    app.command("cleanup")(cleanup.cleanup)


_register()


def main() -> None:
    sys.exit(app())
