"""What an image build's stream says, read within bounds.

A build's stream carries the output of its RUN steps: package managers, and the install
scripts of third-party packages (an npm `postinstall`, a Python build backend), which run with
the network the build needs and can print anything, at any length, with or without newlines.
The host reads that stream as it reads a tool's output: the build log keeps at most
`limits.BUILD_LOG_MAX_BYTES` (then one line saying what was left out), a line is looked at only
up to `limits.BUILD_LINE_MAX_CHARS` (a longer one can be no step or image line, and no longer
line is kept in memory: the stream is read in time linear in its length), and an error quotes
the last `TAIL_LINES` lines, each clipped. Each step line is reported as the build reaches it
(which image, which step, how long in), and the first line that marks a fault from outside is
kept (build_faults.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from orchestrator import labels as lb, log
from orchestrator.errors import EngineError
from orchestrator.images.build_faults import FaultWatch
from orchestrator.untrusted import limits

if TYPE_CHECKING:
    from orchestrator.engine import Engine

logger = log.get(__name__)
TAIL_LINES = 15
# The classic builder's "Step 2/7 : RUN ...", Podman's "STEP 2/7: RUN ...".
# A RUN step may print such lines too: only the next step in order is reported, at most
# MAX_STEPS of them.
STEP = re.compile(r"step (\d+)/(\d+) ?: (.*)", re.IGNORECASE)
MAX_STEPS = 200


class Lines:
    """Complete lines out of a stream of text chunks, each cut at `limit` characters: a
    partial line is never held past `limit`, so memory stays bounded and time linear however
    long a line without a newline grows, and however small the chunks."""

    def __init__(self, limit: int = limits.BUILD_LINE_MAX_CHARS) -> None:
        self._limit = limit
        self._parts: list[str] = []
        self._room = limit  # characters the partial line may still take

    def feed(self, text: str) -> list[str]:
        done: list[str] = []
        pieces = text.split("\n")
        for i, piece in enumerate(pieces):
            if self._room > 0 and piece:
                self._parts.append(piece[:self._room])
                self._room -= len(self._parts[-1])
            if i < len(pieces) - 1:  # a newline ends this line
                done.append("".join(self._parts))
                self._parts, self._room = [], self._limit
        return done


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit:,} more)"


class BuildStream:
    """One build's stream: written to its log within the log's bound, its lines fed to
    `StageImages` and a `FaultWatch`, each step line to `on_step` (step, instruction), its
    last lines (clipped) kept for an error."""

    def __init__(self, log_file: TextIO, stages: StageImages,
                 log_limit: int = limits.BUILD_LOG_MAX_BYTES,
                 on_step: Callable[[str, str], None] | None = None) -> None:
        self._log, self._stages = log_file, stages
        self._limit = self._left = log_limit
        self._lines = Lines()
        self._on_step = on_step
        self._steps = 0  # the last step reported
        self.faults = FaultWatch()
        self.tail: list[str] = []
        self.dropped = 0  # characters of output not written to the log

    def feed(self, text: str) -> None:
        if not text:
            return
        kept = text[:max(self._left, 0)]
        if kept:
            self._log.write(kept)
            self._left -= len(kept)
        self.dropped += len(text) - len(kept)
        lines = self._lines.feed(text)
        self._stages.feed_lines(lines)
        self.faults.feed_lines(lines)
        if self._on_step is not None:
            for line in lines:
                step = STEP.match(line)
                if step and int(step[1]) == self._steps + 1 and self._steps < MAX_STEPS:
                    self._steps += 1
                    self._on_step(f"{step[1]}/{step[2]}", step[3].strip())
        self.tail = (self.tail + [_cut(line, limits.EXCERPT_CHARS) for line in lines[-TAIL_LINES:]]
                     )[-TAIL_LINES:]

    def end(self) -> None:
        """Say in the log what it left out, if anything."""
        if self.dropped:
            self._log.write(f"\n[sandbench: {self.dropped:,} characters of build output past "
                            f"the log's bound ({self._limit:,}) were not kept]\n")
            self.dropped = 0

    def failed(self, error: str) -> str:
        """A failed build's error with the stream's last lines, for the message; the log ends
        with the error."""
        self.end()
        error = _cut(error.strip(), limits.BUILD_LINE_MAX_CHARS)
        self.faults.feed_lines(error.splitlines())
        self._log.write(error + "\n")
        return "\n".join([error, *self.tail[-8:]])


class StageImages:
    """The image each finished stage of a classic multi-stage build left: the last
    ` ---> ID` line before the next `FROM` step. The stream also carries the RUN steps' own
    output, which may print such lines: an id read here is only a candidate
    (`remove_stage_images` says what the engine must confirm)."""

    STEP_FROM = re.compile(r"Step \d+/\d+ : FROM ")
    IMAGE = re.compile(r" ---> ([0-9a-f]{12,64})")

    def __init__(self) -> None:
        self._last: str | None = None
        self._finished: list[str] = []
        self._bases: set[str] = set()  # the image right after a FROM is its base: never ours
        self._after_from = False

    def feed_lines(self, lines: list[str]) -> None:
        for line in lines:
            if self.STEP_FROM.match(line):
                if self._last is not None:
                    self._finished.append(self._last)
                self._last, self._after_from = None, True
            elif match := self.IMAGE.fullmatch(line.rstrip("\r")):
                if self._after_from:
                    self._bases.add(match[1])
                self._last, self._after_from = match[1], False

    def left(self, failed: bool = False) -> list[str]:
        """The finished stages' images; after a failed build, the failing stage's last image
        too (what its steps committed before the one that failed)."""
        ids = [*self._finished, *([self._last] if failed and self._last else [])]
        return [i for i in dict.fromkeys(ids) if i not in self._bases]


def remove_stage_images(engine: Engine, ids: list[str], keep: str | None,
                         since: datetime) -> None:
    """Remove the untagged images a build's earlier stages left. An id comes from the
    build's stream, which a RUN step can print into: it is removed only when the engine shows
    an untagged image that carries the stage label or was made after the build started (a
    stage FROM the unlabelled root file system carries no label)."""
    for short in ids:
        try:
            found = engine.inspect_image(short)
        except EngineError:
            continue
        labels = (found.get("Config") or {}).get("Labels") or {}
        made = engine_time(found.get("Created", ""))
        ours = lb.LABEL_STAGE in labels or (made is not None and made >= since)
        if found["Id"] == keep or found.get("RepoTags") or not ours:
            continue
        try:
            engine.remove_image(found["Id"])
        except EngineError as err:  # another image builds on it: left to `images prune`
            logger.info("stage image kept", image=found["Id"][:19], why=err.what)


def engine_time(text: str) -> datetime | None:
    """The engine's RFC 3339 time (nanoseconds, `Z`) as an aware datetime, or None."""
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", text)
    if match is None:
        return None
    fraction = (match[2] or "0")[:6].ljust(6, "0")
    zone = "+00:00" if match[3] == "Z" else match[3]
    return datetime.fromisoformat(f"{match[1]}.{fraction}{zone}")


