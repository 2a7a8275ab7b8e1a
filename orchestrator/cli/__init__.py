"""The `sandbench` command. Each group lives in its own module; commands stay thin:
parse, call one domain function, render, exit."""

from __future__ import annotations

import sys
from types import TracebackType

import typer
from typer.core import TyperGroup

from orchestrator import log
from orchestrator.errors import SandbenchError
from orchestrator.untrusted.errors import HostileInput
from orchestrator.untrusted.text import terminal, terminal_traceback


class SandbenchGroup(TyperGroup):
    """Turns a SandbenchError anywhere below into one message on stderr and its exit code
    (its render escapes what a tool wrote into it), a HostileInput that reached the top into
    one escaped line and exit 1; Ctrl-C exits 130 quietly."""

    def invoke(self, ctx: typer.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except SandbenchError as err:
            typer.echo(err.render(), err=True)
            raise typer.Exit(err.exit_code) from None
        except HostileInput as err:
            typer.echo(f"error: {terminal(err)}", err=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None


app = typer.Typer(cls=SandbenchGroup, no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False,
                  help="Reproducible, isolated benchmarks of code-intelligence tools.")


@app.callback()
def _root() -> None:
    """Logs go to stderr, so that under --json stdout holds only the JSON."""
    log.configure()


def _register() -> None:
    from orchestrator.cli import (audit, cleanup, compose, corpus, images, k8s, run, sandbox,
                                  score, suite, truth)
    app.add_typer(images.app, name="images")
    app.add_typer(corpus.app, name="corpus")
    app.add_typer(sandbox.app, name="sandbox")
    app.add_typer(suite.app, name="suite")
    app.add_typer(truth.app, name="truth")
    app.command("run")(run.run)
    app.command("score")(score.score)
    app.command("report")(score.report)
    app.add_typer(compose.app, name="compose")
    app.add_typer(k8s.app, name="k8s")
    app.command("audit")(audit.audit)
    app.command("cleanup")(cleanup.cleanup)


_register()


def _escaped_traceback(kind: type[BaseException], value: BaseException,
                       tb: TracebackType | None) -> None:
    """An unexpected error's traceback, its message escaped: it may quote a tool's bytes."""
    sys.stderr.write(terminal_traceback(kind, value, tb) + "\n")


def main() -> None:
    sys.excepthook = _escaped_traceback
    sys.exit(app())
