"""Shared rendering for thin commands: `rich` tables through one console, or JSON alone on
stdout."""

from __future__ import annotations

import dataclasses
import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from orchestrator.errors import InputError
from orchestrator.settings import Settings, load_settings
from orchestrator.untrusted.text import terminal

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

    from orchestrator.isolation.policy import GuardResult

BenchRoot = typer.Option(None, "--bench-root", envvar="SANDBENCH_ROOT", metavar="DIR",
                         help="Where corpora, the image lock and runs live (default ./bench).")
Json = typer.Option(False, "--json", help="Print only JSON on stdout.")
SuiteName = typer.Argument(..., metavar="SUITE", show_default=False,
                           help="A suite: a folder of suites/ with a suite.toml.")


def existing_run_dir(value: Path | None) -> Path | None:
    """A run directory given on the command line exists: named as missing here, before a
    command looks for one of its files there."""
    if value is not None and not value.is_dir():
        raise InputError(f"run directory {value} does not exist", key="RUN_DIR",
                         expected="a run directory", found=str(value),
                         fix="give a run directory: bench/runs/RUN_ID (ls bench/runs)")
    return value


def run_dir_argument(help_text: str, metavar: str = "RUN_DIR") -> Any:
    """An argument naming a run directory, refused with one error when it does not exist."""
    return typer.Argument(..., file_okay=False, metavar=metavar, help=help_text,
                          callback=existing_run_dir)

# Without a terminal (CI, a pipe, CliRunner) tables are laid out for this fixed width, so
# that nothing depends on COLUMNS and no row is wrapped: a table is only as wide as its cells.
PLAIN_WIDTH = 4096
# Without a terminal, guard results are lines wrapped at this width (their values, such as a
# container's mounts, run to hundreds of characters, too wide for a table).
GUARD_WIDTH = 100


def size_text(n: int | None) -> str | None:
    """Bytes for a person: 1.2 GB, 198.9 MB, 4.0 kB, 512 B (powers of 1000, as docker
    prints them)."""
    if n is None:
        return None
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def seconds_text(s: float | None) -> str | None:
    """Seconds for a person: 37.0 s, 3 min 25.8 s."""
    if s is None:
        return None
    minutes, rest = divmod(float(s), 60)
    return f"{int(minutes)} min {rest:.1f} s" if minutes else f"{rest:.1f} s"


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def settings(bench_root: Path | None) -> Settings:
    return load_settings(bench_root)


def console() -> Console:
    """The one console every table goes through. On a terminal: its width, bold headers,
    long cells folded. Otherwise: the fixed width, no colour and no control codes whatever
    FORCE_COLOR or COLUMNS say, so the text is the same on every host."""
    from rich.console import Console  # rich: only a command that prints a table loads it
    tty = sys.stdout.isatty()
    return Console(file=sys.stdout, force_terminal=tty, no_color=not tty or None,
                   width=None if tty else PLAIN_WIDTH, markup=False, emoji=False,
                   highlight=False, soft_wrap=False)


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> Table:
    """One row per dict, the named columns in order under upper-cased headers; None is an
    empty cell. Cells are plain text (never rich markup), escaped for the terminal: a found
    value or a version may be a tool's bytes."""
    from rich import box
    from rich.table import Table
    from rich.text import Text
    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold",
                 highlight=False)
    for column in columns:
        grid.add_column(column.upper(), overflow="fold")
    for row in rows:
        grid.add_row(*(Text("" if row.get(c) is None else terminal(row.get(c)))
                       for c in columns))
    return grid


def show(*renderables: RenderableType) -> None:
    """Print tables (and text) on stdout through the console, without trailing blanks."""
    out = console()
    with out.capture() as captured:
        out.print(*renderables, sep="\n")
    typer.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))


def show_guards(heading: str, results: Sequence[GuardResult]) -> None:
    """An arm's heading line, then each guard: what `sandbox check` and `audit` print. On a
    terminal a table folded to its width; otherwise lines no wider than GUARD_WIDTH, the
    same whatever COLUMNS says."""
    typer.echo(f"\n{terminal(heading)}")
    if sys.stdout.isatty():
        show(table([{**dataclasses.asdict(r), "ok": "ok" if r.ok else "FAIL"} for r in results],
                   ["guard", "side", "ok", "expected", "found"]))
        return
    for r in results:
        expected, found = terminal(str(r.expected)), terminal(str(r.found))
        values = found if r.ok and expected == found else f"expected {expected}; found {found}"
        typer.echo(textwrap.fill(f"{'ok' if r.ok else 'FAIL':<4}  {r.side:<7}  {r.guard}: "
                                 f"{values}", width=GUARD_WIDTH, subsequent_indent=" " * 17,
                                 break_on_hyphens=False))



def emit_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, sort_keys=True, default=str))
