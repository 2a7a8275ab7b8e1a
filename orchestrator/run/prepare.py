"""The preparing stage: every engine that has arms made ready, then every arm's sandbox made
and verified before the first measured command of any arm, so no container start or corpus
copy runs beside a measured tool.

Where an arm runs is its placement (orchestrator/placement), chosen once from its engine
member: its file systems, its corpus copy, its sandbox's mounts and helper, and the read-back
of what it wrote come from there, whichever host that is.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from orchestrator import corpus, log, placement
from orchestrator.run import document as run_document
from orchestrator.sandbox import engine_limits, workfs
from orchestrator.errors import GuardViolation, InputError
from orchestrator.fsutil import atomic_write_json, read_json
from orchestrator.images import ImageLock
from orchestrator.run import pool, ready
from orchestrator.run.measure import done
from orchestrator.run.options import RunContext
from orchestrator.run.plan import ArmPlan
from orchestrator.run.document import SETUP_CELL, RunDoc
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import default_user
from orchestrator.run.transcripts import RECORD_NAME, read_record
from orchestrator.untrusted import walk
from orchestrator.untrusted.strings import portable

PREPARE_WORKERS = 2  # arms whose sandboxes are made at once; the engine's waits overlap

logger = log.get(__name__)


# -- the engines --------------------------------------------------------------------------

def place_and_prepare(r: RunContext, data: RunDoc) -> None:
    """Place the arms and make every engine that has some ready; an engine refused on the
    way has its arms placed again on the others (or the run stops, as the user chose)."""
    images_of = {a.name: a.spec.image for a in r.plan.available}
    previous = {a.name: data.arms[a.name].engine for a in r.plan.available}
    members = list(r.members.values())
    while True:
        r.engine_of.clear()
        r.engine_of.update(pool.place(list(images_of), members, previous))
        all_ready = ready.prepare(r, images_of)
        for m in members:
            data.engine_prepared(m.facts, m.refused, m.imported, placement.engine_facts(m))
        if all_ready:
            break
    _check_engine_images(r)


def _check_engine_images(r: RunContext) -> None:
    """A resumed arm continues only with the image its cells ran: every recorded cell's
    image id must be the locked one, and so must the engine's image under the locked tag."""
    source = run_document.path(r.run_dir)
    lock = ImageLock.load(r.settings.images_lock)
    for a in r.plan.available:
        member = r.member(a.name)
        for path in sorted((r.run_dir / "cells" / a.name).glob("**/" + RECORD_NAME)):
            rec = read_record(path)
            if rec.image_id != a.image_id:
                raise InputError.bad_value(path, "image_id", str(a.image_id), rec.image_id,
                                           fix=f"the cell ran another image than arm {a.name!r} "
                                               "has now; start a new run")
        tag = lock.images.get(a.spec.image, {}).get("tag")
        found = member.engine.image_id(tag) if tag else None
        if found is not None and found != a.image_id:
            raise InputError.bad_value(source, f"arms.{a.name}.image_id", str(a.image_id),
                                       found, fix=f"engine {member.url} ({member.id}) has "
                                       f"{tag} as another image: the arm's engine changed "
                                       "image id; start a new run")




# -- the arms -------------------------------------------------------------------------------

@dataclass
class Prepared:
    """An arm ready to measure: its file systems made, its corpus copied, its sandbox
    started and verified (or refused, and already taken down). `exits` takes down and
    removes, whatever happened."""
    arm: ArmPlan
    place: placement.Placement
    before: corpus.Snapshot | None
    box: Sandbox | None
    refused: str | None
    exits: ExitStack

    def snapshot(self, name: str, budget: walk.Budget) -> corpus.Snapshot:
        """The arm's file system `name` as it is now, where it lives, spending from the
        arm's `budget`."""
        return portable_snapshot(self.place.snapshot(name, budget))


def prepare_arms(r: RunContext) -> list[Prepared]:
    """Every arm's sandbox, `PREPARE_WORKERS` at a time, before any arm's first measured
    command: no container start or corpus copy then runs beside a measured tool, and the
    engine's waits overlap. A failure (or Ctrl-C) takes down every sandbox already made."""
    workers = ThreadPoolExecutor(max_workers=PREPARE_WORKERS, thread_name_prefix="prepare")
    futures = [workers.submit(_prepare_arm, r, a) for a in r.plan.available]
    try:
        return [f.result() for f in futures]
    except BaseException:
        workers.shutdown(wait=True, cancel_futures=True)
        for f in futures:
            if not f.cancelled() and f.exception() is None:
                f.result().exits.close()
        raise
    finally:
        workers.shutdown(wait=True)


def _prepare_arm(r: RunContext, a: ArmPlan) -> Prepared:
    member = r.member(a.name)
    place = placement.for_arm(member, a.name, r.run_dir / "work" / a.name,
                              r.settings.bench_root / "transfer")
    if (why := engine_limits.refusal(member.facts, r.options.accept_unbounded_limits)) is not None:
        logger.error("arm_refused", arm=a.name, why=why)
        return Prepared(a, place, None, None, why, ExitStack())
    sizes = workfs.sizes(a.spec.limits, r.corpus_bytes)
    kept = _kept(r, a, place, sizes)
    setup = r.run_dir / "cells" / a.name / SETUP_CELL
    if not kept and setup.exists():
        # What the set-up built lived on file systems that are made anew (the arm moved to
        # another engine, or they were lost): it runs again before any missing cell.
        logger.info("setup_again", arm=a.name, engine=r.engine_of[a.name])
        walk.remove_tree(setup)
    exits = ExitStack()
    try:
        lock = ImageLock.load(r.settings.images_lock)
        exits.enter_context(place.filesystems(sizes, default_user(), fresh=not kept))
        if kept:
            before = _load_snapshot(_corpus_before(r, a))
        else:
            before = _save_corpus_before(r, a, place.copy_corpus(
                r.pristine, r.pin, default_user(), a.spec.env.get("HOME", "")))
        spec = dataclasses.replace(
            place.sandbox_spec(lock, a.spec, r.run_id, default_user(), sizes, r.exec_path),
            runtime=r.runtime_of[a.name],  # accepted, or the arm was refused above:
            unbounded_limits_accepted=engine_limits.refusal(member.facts, False) is not None)
        box = exits.enter_context(Sandbox(member.engine, spec, member.id, place.helper))
        try:
            box.verify(r.run_dir / "guards" / a.name)
        except GuardViolation as exc:
            logger.error("arm_refused", arm=a.name, why=exc.why)
            exits.close()
            return Prepared(a, place, None, None, exc.why, exits)
    except BaseException:
        exits.close()
        raise
    return Prepared(a, place, before, box, None, exits)


def _kept(r: RunContext, a: ArmPlan, place: placement.Placement, sizes: dict[str, int]) -> bool:
    """Whether the arm's file systems from an earlier attempt of this run are kept: only
    once its set-up finished (an index build is not repeated) and they are still where it
    runs; otherwise they are made anew."""
    return (done(r.run_dir / "cells" / a.name / SETUP_CELL)
            and _corpus_before(r, a).is_file() and place.kept(list(sizes)))


def _corpus_before(r: RunContext, a: ArmPlan) -> Path:
    return r.run_dir / "arms" / a.name / "corpus-before.json"


def _save_corpus_before(r: RunContext, a: ArmPlan, snap: corpus.Snapshot) -> corpus.Snapshot:
    before = portable_snapshot(snap)
    atomic_write_json(_corpus_before(r, a), {p: [e.kind, e.mode, e.size, e.digest]
                                             for p, e in before.entries.items()})
    return before


def portable_snapshot(snap: corpus.Snapshot) -> corpus.Snapshot:
    """Paths as a document can hold them, by the one rule for tool strings
    (`untrusted.strings.portable`: a byte that is not UTF-8 as \\xNN, injectively, so no two
    names become one key), for every entry, every cut point and every repeated name, the same
    way on every side of a comparison."""
    return corpus.Snapshot({portable(p): e for p, e in snap.entries.items()},
                           tuple(dataclasses.replace(c, at=portable(c.at)) for c in snap.cuts),
                           frozenset(portable(p) for p in snap.repeats))


def _load_snapshot(path: Path) -> corpus.Snapshot:
    raw = read_json(path)
    return corpus.Snapshot({p: corpus.Entry(*v) for p, v in raw.items()})


