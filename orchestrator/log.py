"""structlog, configured once: human-readable on a terminal, JSON lines into a run directory."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, TextIO, cast

import structlog
from structlog.typing import EventDict

from orchestrator.untrusted.text import terminal, terminal_traceback

_run_log: TextIO | None = None
_console_level = logging.NOTSET


def console_level(level: int) -> None:
    """Show only events at `level` and above on the console, from now on (a live display
    owns the terminal: info lines would scroll it away). The run log keeps every event."""
    global _console_level
    _console_level = level


def _tee_to_run_log(_logger: Any, _name: str, event: EventDict) -> EventDict:
    """Best effort: a log line that cannot be written (a full disk) must not stop the work
    it describes; the terminal rendering still carries it."""
    global _run_log
    if _run_log is not None:
        try:
            _run_log.write(json.dumps(event, default=str, sort_keys=True) + "\n")
            _run_log.flush()
        except OSError as exc:
            event["run_log_error"] = str(exc)
            _run_log = None
    return event


def _drop_below_console_level(_logger: Any, _name: str, event: EventDict
                              ) -> EventDict:
    if logging.getLevelNamesMapping()[event["level"].upper()] < _console_level:
        raise structlog.DropEvent
    return event


def _escape_for_console(_logger: Any, _name: str, event: EventDict) -> EventDict:
    """The console renderer prints strings as they are; an event may carry a tool's bytes (a
    path, a version, an error's text), so every string key and value is escaped for the
    terminal first (other values it prints by repr, which escapes them). JSON lines need
    nothing: json escapes every control."""
    return {terminal(k) if isinstance(k, str) else k:
            terminal(v) if isinstance(v, str) else v for k, v in event.items()}


def _escaped_traceback(sio: TextIO, exc_info: Any) -> None:
    """A plain traceback (rich's would print local values raw), its text escaped."""
    sio.write("\n" + terminal_traceback(*exc_info) + "\n")


class _CurrentStderr:
    """Whatever sys.stderr is at the moment of writing (test runners swap it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


def configure(run_log: Path | None = None, *, stream: TextIO | None = None) -> None:
    """Console rendering on a TTY, JSON lines otherwise; every event also goes to `run_log`."""
    global _run_log
    if _run_log is not None:
        _run_log.close()
        _run_log = None
    if run_log is not None:
        run_log.parent.mkdir(parents=True, exist_ok=True)
        _run_log = open(run_log, "a", encoding="utf-8")  # noqa: SIM115 - closed on reconfigure
    out = stream or _CurrentStderr()
    console = out.isatty()
    renderer = (structlog.dev.ConsoleRenderer(colors=True,
                                              exception_formatter=_escaped_traceback)
                if console else structlog.processors.JSONRenderer(sort_keys=True))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _tee_to_run_log,
            _drop_below_console_level,
            *([_escape_for_console] if console else []),
            renderer,
        ],
        # PrintLogger only writes to and flushes its file: a stream that does both is one.
        logger_factory=structlog.PrintLoggerFactory(cast(TextIO, out)),
        cache_logger_on_first_use=False,
    )


def get(name: str | None = None) -> Any:
    return structlog.get_logger(name)
