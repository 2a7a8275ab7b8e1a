"""Which failed image builds are faults from outside, worth another attempt under the one
retry policy (engine/calls.retry_policy), and which are the recipe's own.

A build fails on the outside when a RUN step could not reach the package mirror (a name not
resolved, a fetch cut off or refused) or when the engine dropped or failed the call (a 5xx, a
reset connection: engine/calls.is_transient). What the build printed tells the first kind: its
lines are looked at as they stream (each already cut at `limits.BUILD_LINE_MAX_CHARS`), once,
for the marks below; the first one found is kept to say what failed. Anything else (a package
that does not exist, a command that exits non-zero, a Dockerfile error) is the recipe's and is
never retried.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from orchestrator.engine.calls import TransientFailure, retry_policy
from orchestrator.errors import EngineError

T = TypeVar("T")

# What package managers and fetchers print when the network, not the request, failed: apt
# ("Temporary failure resolving 'host'", "Could not resolve 'host'", "Failed to fetch URL
# ... Connection failed / Could not connect / 503"), the C library and Python ("Temporary
# failure in name resolution"), curl and git ("Could not resolve host"), node ("EAI_AGAIN",
# "ECONNRESET", "ETIMEDOUT"), and any "Connection reset by peer" / "Connection timed out".
TRANSIENT_MARKS = re.compile(
    r"Temporary failure (?:resolving|in name resolution)"
    r"|Could not resolve (?:host\b|['‘\"])"
    r"|Failed to fetch \S+.*(?:Connection|Could not connect|timed out|\b50[0234]\b)"
    r"|Connection (?:reset by peer|timed out|refused)"
    r"|\b(?:EAI_AGAIN|ECONNRESET|ETIMEDOUT)\b"
    r"|Read timed out")


def transient_mark(lines: list[str]) -> str | None:
    """The first line that says the network failed, stripped; None when none does."""
    return next((line.strip() for line in lines if TRANSIENT_MARKS.search(line)), None)


class FaultWatch:
    """Fed a build's lines as they stream: keeps the first one that marks a transient
    fault (the lines are bounded by the stream; the search is linear in them)."""

    def __init__(self) -> None:
        self.mark: str | None = None

    def feed_lines(self, lines: list[str]) -> None:
        if self.mark is None:
            self.mark = transient_mark(lines)


def build_failure(what: str, why: str, fix: str, mark: str | None) -> EngineError:
    """A failed build's error: transient (and so retried) when its output carried a mark,
    which leads the `why` so the retry's log line names it."""
    if mark is None:
        return EngineError(what, why=why, fix=fix)
    return TransientFailure(what, why=f"{mark}\n{why}", fix=fix)


def retried(what: str, attempt: Callable[[], T]) -> T:
    """`attempt` (which must be safe to repeat) under the one retry policy: another try after
    a transient failure, each logged naming `what` and what failed."""
    return retry_policy(what)(attempt)
