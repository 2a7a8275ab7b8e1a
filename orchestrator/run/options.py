"""What a run was asked for (`RunOptions`, built and checked once, from the command line or a
caller) and what it is while it runs (`RunContext`, made once the run directory exists): the
two values every stage of the run reads, instead of parameters passed down stage by stage."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import corpus
from orchestrator.sandbox import runtimes
from orchestrator.engine import Engine
from orchestrator.errors import InputError
from orchestrator.run.plan import Plan
from orchestrator.run.pool import ON_REFUSED, STOP, Member
from orchestrator.sandbox.spec import EXEC_PATHS
from orchestrator.settings import Settings

Progress = Callable[[str, str, str], None]  # (arm, cell, outcome) after every cell


@dataclass(frozen=True)
class RunOptions:
    """A run as asked for: the suite, which of its arms, where to resume, how many arms at
    once, the engines (the default one when none is given), and the choices that hold for
    every arm. Each value is checked here, once: a wrong one is refused before anything is
    read or dialled."""

    suite: str
    arms: tuple[str, ...] = ()  # only these arms of the suite; all when empty
    resume: Path | None = None  # continue this run directory
    jobs: int = 1  # arms measured in parallel
    exec_path: str | None = None  # how commands reach each container; resident unless given
    engine_urls: tuple[str, ...] = ()  # the default engine when empty
    insecure_engine: bool = False  # a plain tcp:// engine is allowed
    on_engine_refused: str = STOP  # a refused engine stops the run, or its arms move
    runtime: str | None = None  # every arm's container runtime instead of the suite's
    accept_unbounded_limits: bool = False  # an engine that cannot enforce limits runs arms

    def __post_init__(self) -> None:
        if self.jobs < 1:
            raise InputError.bad_value("--jobs", "--jobs", "a whole number of 1 or more",
                                       self.jobs)
        _one_of("--runtime", self.runtime, runtimes.RUNTIMES)
        _one_of("--exec-path", self.exec_path, EXEC_PATHS)
        _one_of("--on-engine-refused", self.on_engine_refused, ON_REFUSED)


def _one_of(option: str, value: str | None, allowed: tuple[str, ...]
            ) -> None:
    if value is not None and value not in allowed:
        raise InputError.bad_value(option, option, f"one of {list(allowed)}", value)


@dataclass(frozen=True)
class RunContext:
    """One run under way: its options and plan, its directory, the pristine corpus it
    copies, and its engines. `engine_of` (arm -> engine id) changes in place only while the
    engines are made ready (an engine refused there has its arms placed again); `stop` is
    set when one arm's failure stops the others."""

    settings: Settings
    options: RunOptions
    plan: Plan
    run_id: str
    run_dir: Path
    pin: corpus.CorpusPin
    pristine: Path
    progress: Progress
    corpus_bytes: int  # what a copy of the pristine corpus takes on an arm's file system
    exec_path: str  # one per run: every record of a run came the same way
    runtime_of: dict[str, str]  # each arm's container runtime, fixed when the run begins
    members: dict[str, Member]  # the run's engines by id, the first the run's own
    engine_of: dict[str, str] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def engine(self) -> Engine:
        """The run's first engine: the one its document's engine version is read from."""
        return next(iter(self.members.values())).engine

    def member(self, arm: str) -> Member:
        return self.members[self.engine_of[arm]]
