"""One arm's sandbox outside a run (`sandbox check`, `sandbox exec`, `truth build`): made
where a run would make it. The engine is a pool of one (`run.pool.one`), its placement
decided from what this process and that engine can do, so a member of the docker group gets
file systems the engine makes where root would loop-mount them here, and root is needed only
by the placement that needs it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestrator import corpus, placement
from orchestrator.sandbox import runtimes, workfs
from orchestrator.arms import ArmSpec
from orchestrator.engine import Engine
from orchestrator.images import ImageLock
from orchestrator.run import pool
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import RESIDENT
from orchestrator.settings import Settings


@contextmanager
def member(engine: Engine, settings: Settings, run_id: str, user: str
           ) -> Iterator[pool.Member]:
    """The engine as a run's only member, made ready as a run makes it (its ids learnt, the
    run's place there opened), without a pre-flight: the caller verifies its own sandbox.
    What was opened there is taken down on the way out: nothing of a one-off is resumed."""
    one = pool.one(engine)
    pool.learn_ids(one, settings, user, run_id)
    placement.open_engine(one, settings, run_id)
    try:
        yield one
    finally:
        placement.close_engine(one)


@contextmanager
def arm_sandbox(one: pool.Member, settings: Settings, arm: ArmSpec, run_id: str,
                run_dir: Path, user: str, *, runtime: str = runtimes.DEFAULT,
                pristine: tuple[Path, corpus.CorpusPin] | None = None) -> Iterator[Sandbox]:
    """The arm's sandbox on fresh file systems of its placement, with a copy of the pristine
    corpus when one is given (else an empty /corpus), started and not yet verified."""
    lock = ImageLock.load(settings.images_lock)
    place = placement.for_arm(one, arm.name, run_dir / "work" / arm.name,
                              settings.bench_root / "transfer")
    sizes = workfs.sizes(arm.limits, workfs.tree_bytes(pristine[0]) if pristine else 0)
    with place.filesystems(sizes, user, fresh=True):
        if pristine is not None:
            place.copy_corpus(*pristine, user, arm.env.get("HOME", ""))
        spec = dataclasses.replace(place.sandbox_spec(lock, arm, run_id, user, sizes, RESIDENT),
                                   runtime=runtime)
        with Sandbox(one.engine, spec, one.id, place.helper) as box:
            yield box
