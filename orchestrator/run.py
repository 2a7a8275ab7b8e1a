"""The run loop: every available arm answers every task of a sealed suite in its own
verified sandbox, on its own corpus copy, cold once and warm N times, resumably.

Layout of a run directory (everything later stages read; nothing else is needed):

    run.json                         the environment block's facts, arms, seal, status
    guards/ARM/                      policy, inspect and probe snapshots, verdict
    cells/ARM/_setup/                the index build's transcript (when the arm has one)
    cells/ARM/TASK/REP/              stdout, stderr, record.json (REP 0 = cold, 1..N warm)
    arms/ARM/state.json              what the arm wrote: corpus-copy changes, state and out
                                     files, where each listing was cut
    work/ARM/{corpus,state,out}.ext4 the arm's private, size-bounded file systems, mounted at
                                     work/ARM/{corpus,state,out} only during the run
    pin-lines.json                   line counts at the pin, read from the pristine copy
    log.jsonl                        structured log

Every arm's sandbox is made and verified before the first measured command of any arm, so no
container start or corpus copy runs beside a measured tool. A cell counts as done only when
its record.json exists and describes the streams beside it, so a resume runs exactly the
cells without one, and an interrupted cell leaves nothing behind that could be mistaken for
one. Cells are made durable in one sync at the end of each arm, not one fsync each.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import (arms, cleanup, corpus, engines, images, log, mcp, pinlines, remote,
                          rundir, rundoc, suite, workfs)
from orchestrator.engine import Engine
from orchestrator.errors import EngineError, GuardViolation, InputError, SandbenchError
from orchestrator.fsutil import atomic_write_json, atomic_write_text, read_json, sync_filesystem
from orchestrator.images import ImageLock
from orchestrator.sandbox import Sandbox
from orchestrator.rundoc import SETUP_CELL, RunDoc
from orchestrator.sandbox_spec import EXEC_PATHS, RESIDENT, default_user, for_arm
from orchestrator.settings import Settings
from orchestrator.transcripts import RECORD_NAME, ExecRecord, read_record, streams_intact
from orchestrator.untrusted import walk

PREPARE_WORKERS = 2  # arms whose sandboxes are made at once; the engine's waits overlap

logger = log.get(__name__)


@dataclass(frozen=True)
class ArmPlan:
    name: str
    spec: arms.ArmSpec
    image_id: str | None
    tool_version: str
    unavailable: str | None
    cells: tuple[tuple[str, int], ...]  # (task id, rep) in execution order


@dataclass(frozen=True)
class Plan:
    suite: suite.Suite
    arms: tuple[ArmPlan, ...]
    missing: tuple[str, ...]  # what stops the run: images not built or stale, corpus absent

    @property
    def available(self) -> list[ArmPlan]:
        return [a for a in self.arms if a.unavailable is None]

    @property
    def total_cells(self) -> int:
        return sum(len(a.cells) for a in self.available)


def _cells(spec: arms.ArmSpec, the_suite: suite.Suite) -> tuple[tuple[str, int], ...]:
    return tuple((task.id, rep) for task in the_suite.tasks if task.kind in spec.tasks
                 for rep in range(the_suite.reps + 1))


def suite_images(settings: Settings, suite_name: str) -> list[str]:
    """The images a run of the suite starts: each of its arms' image, in the suite's order.
    An oracle's image is not among them: `sandbench truth build` runs it, and the truth it
    made is sealed with the suite, so a run never needs it."""
    the_suite = suite.load_suite(settings.suites_dir, suite_name)
    wanted = [spec.image for spec in arms.load_arms(settings.arms_dir, list(the_suite.arms))]
    return list(dict.fromkeys(wanted))


def plan(settings: Settings, suite_name: str, only: list[str] | None = None,
         engine: Engine | None = None) -> Plan:
    """What a run would do, and what is missing, without starting anything."""
    the_suite = suite.load_suite(settings.suites_dir, suite_name)
    names = list(the_suite.arms)
    if only:
        unknown = [n for n in only if n not in names]
        if unknown:
            raise InputError(f"arm {unknown[0]!r} is not in suite {suite_name!r}",
                             fix=f"the suite's arms: {', '.join(names)}")
        names = [n for n in names if n in only]
    specs = arms.load_arms(settings.arms_dir, names)
    if oracles := [s for s in specs if s.kind == "oracle"]:
        raise InputError.bad_value(the_suite.path / "suite.toml", "arms",
                                   "arms that answer tasks (an oracle is named in [oracle] and "
                                   "run by sandbench truth build)", oracles[0].name)
    for task in the_suite.tasks:
        for spec in specs:
            if task.kind not in spec.tasks and task.kind not in spec.not_attempted:
                raise InputError.bad_value(spec.path, f"tasks.{task.kind}",
                                           "an argv, or a [not_attempted." + task.kind + "] "
                                           f"entry (suite {suite_name!r} has {task.kind} "
                                           "tasks)", None)
    recipes = images.load_recipes(settings.images_dir)
    lock = ImageLock.load(settings.images_lock)
    checks = {c.name: c for c in images.verify(engine, settings)} if engine else {}
    missing: list[str] = []
    planned = []
    for spec in specs:
        recipe = recipes.get(spec.image)
        if recipe is None:
            raise InputError.bad_value(spec.path, "image", f"one of {sorted(recipes)}",
                                       spec.image)
        entry = lock.images.get(spec.image)
        unavailable = None
        if recipe.artifact and entry is None:
            unavailable = (f"no {recipe.artifact} binary was supplied: build its image with "
                           f"`sandbench images build {spec.image} --artifact "
                           f"{recipe.artifact}=PATH`")
        elif entry is None:
            missing.append(f"image {spec.image!r} is not built (sandbench images build)")
        elif spec.image in checks and checks[spec.image].status != "ok":
            missing.append(f"image {spec.image!r} is {checks[spec.image].status}: "
                           f"{checks[spec.image].detail}")
        planned.append(ArmPlan(spec.name, spec, entry["image_id"] if entry else None,
                               entry.get("tool_version", "") if entry else "", unavailable,
                               _cells(spec, the_suite)))
    if corpus.read_info(settings, the_suite.corpus) is None:
        missing.append(f"corpus {the_suite.corpus!r} is not fetched: "
                       f"{corpus.fetch_hint(settings, the_suite.corpus)}")
    return Plan(the_suite, tuple(planned), tuple(missing))


# -- the run ------------------------------------------------------------------------------

Progress = Callable[[str, str, str], None]  # (arm, cell, outcome) after every cell


@dataclass
class _Run:
    engine: Engine
    settings: Settings
    plan: Plan
    run_id: str
    run_dir: Path
    pin: corpus.CorpusPin
    pristine: Path
    progress: Progress
    corpus_bytes: int  # what a copy of the pristine corpus takes on an arm's file system
    exec_path: str = RESIDENT  # one per run: every record of a run came the same way
    stop: threading.Event = field(default_factory=threading.Event)
    # The run's engines by id, and the engine each arm runs on (engines.place).
    members: dict[str, engines.Member] = field(default_factory=dict)
    placement: dict[str, str] = field(default_factory=dict)

    def member(self, arm: str) -> engines.Member:
        return self.members[self.placement[arm]]


def _new_run_doc(r: _Run) -> RunDoc:
    info = corpus.read_info(r.settings, r.pin.id)
    assert info is not None
    return rundoc.new(run_id=r.run_id, the_suite=r.plan.suite, planned=r.plan.arms, pin=r.pin,
                      info=info, pristine_digest=corpus.tree_digest(r.pristine),
                      engine_version=r.engine.version(),
                      engines=[m.facts for m in r.members.values()],
                      lock=ImageLock.load(r.settings.images_lock), user=default_user(),
                      bench_root=r.settings.bench_root, exec_path=r.exec_path)


def _disk_full(exc: OSError, root: Path) -> bool:
    """ENOSPC itself, or a wrapped copy error (shutil.Error carries no errno) on a bench
    root that has no room left."""
    if exc.errno == errno.ENOSPC:
        return True
    try:
        st = os.statvfs(root)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 1 << 20


def execute(engine: Engine, settings: Settings, suite_name: str, *, resume: Path | None = None,
            jobs: int = 1, only: list[str] | None = None, progress: Progress | None = None,
            exec_path: str | None = None, members: list[engines.Member] | None = None,
            on_refused: str = engines.STOP) -> Path:
    """Run (or resume) a suite; returns the run directory. `exec_path` (resident unless
    given; a resume keeps the run's own) says how every command reaches its container.
    `members` (engines.connect) spreads the arms over several engines, each made ready
    (images, pre-flight guards) before an arm runs there; without it every arm runs on
    `engine`."""
    if exec_path is not None and exec_path not in EXEC_PATHS:
        raise InputError.bad_value("--exec-path", "--exec-path", f"one of {list(EXEC_PATHS)}",
                                   exec_path)
    if on_refused not in engines.ON_REFUSED:
        raise InputError.bad_value("--on-engine-refused", "--on-engine-refused",
                                   f"one of {list(engines.ON_REFUSED)}", on_refused)
    if members:
        engine = members[0].engine
    the_plan = _startable_plan(engine, settings, suite_name, only)
    pin, pristine = _verified_corpus(settings, the_plan.suite)
    workfs.require_root(settings.runs_dir)
    r, data = _open_run(engine, settings, the_plan, pin, pristine, resume, progress, exec_path,
                        members)
    with _status_on_failure(r, data):
        rundoc.write(r.run_dir, data)
        _save_pin_lines(r)
        if members:
            _place_and_prepare(r, data, on_refused)
        for a in the_plan.available:
            data.arms[a.name].engine = r.placement[a.name]
        rundoc.write(r.run_dir, data)
        for a, outcome in zip(the_plan.available, _run_arms(r, jobs), strict=True):
            data.arms[a.name].ended(**outcome)
    _finish(r, data)
    return r.run_dir


def _place_and_prepare(r: _Run, data: RunDoc, on_refused: str) -> None:
    """Place the arms and make every engine that has some ready; an engine refused on the
    way has its arms placed again on the others (or the run stops, as the user chose)."""
    images_of = {a.name: a.spec.image for a in r.plan.available}
    previous = {a.name: data.arms[a.name].engine for a in r.plan.available}
    members = list(r.members.values())
    while True:
        r.placement = engines.place(list(images_of), members, previous)
        ready = engines.prepare(members, r.placement, images_of, r.settings, r.run_id,
                                default_user(), r.exec_path, r.run_dir, on_refused)
        for m in members:
            data.engine_prepared(m.facts, m.refused, m.imported,
                                 (m.host.work_volume, m.host.helper_path) if m.host else None)
        if ready:
            break
    _check_engine_images(r, data)


def _startable_plan(engine: Engine, settings: Settings, suite_name: str,
                    only: list[str] | None) -> Plan:
    """The plan, refused when anything it needs is missing or the suite's seal is broken."""
    the_plan = plan(settings, suite_name, only, engine)
    if the_plan.missing:
        raise SandbenchError("the run cannot start: " + "; ".join(the_plan.missing),
                             fix="build and fetch what is missing (scripts/demo does), then "
                                 "run again")
    the_suite = the_plan.suite
    if diffs := suite.verify_seal(the_suite, settings):
        first = diffs[0]
        raise InputError(f"suite {the_suite.name!r}: {first.file} changed since the seal "
                         f"(sealed {first.expected}, now {first.found})",
                         fix=f"review the change, then: sandbench suite seal {the_suite.name}",
                         file=first.file)
    return the_plan


def _verified_corpus(settings: Settings, the_suite: suite.Suite
                     ) -> tuple[corpus.CorpusPin, Path]:
    """The suite's pin and its pristine copy, verified at the pin and holding every truth
    path."""
    lock = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock), the_suite.corpus, lock)
    corpus.verify_pristine(pin, settings)
    pristine = corpus.corpus_dir(settings, pin.id)
    suite.check_truth_at_pin(the_suite, pristine)
    return pin, pristine


def _open_run(engine: Engine, settings: Settings, the_plan: Plan, pin: corpus.CorpusPin,
              pristine: Path, resume: Path | None, progress: Progress | None,
              exec_path: str | None, members: list[engines.Member] | None = None
              ) -> tuple[_Run, RunDoc]:
    """A new run directory and its run.json, or the one resumed: checked to continue the
    same run, with what a killed attempt left on the engine removed."""
    if resume is None:
        run_id, run_dir = rundir.create(settings.runs_dir, f"run-{the_plan.suite.name}")
    else:
        run_dir = resume.resolve()
        if not rundoc.path(run_dir).is_file():
            raise InputError(f"{run_dir}: no run.json: not a run directory to resume",
                             file=str(run_dir))
        previous = rundoc.read(run_dir)
        run_id = previous.run_id
        recorded = previous.exec_path_used
        if exec_path is not None and exec_path != recorded:
            raise InputError.bad_value(rundoc.path(run_dir), "exec_path", exec_path, recorded,
                                       fix="a resumed run keeps its exec path: leave out "
                                           "--exec-path, or start a new run")
        exec_path = recorded
    log.configure(run_dir / "log.jsonl")
    r = _Run(engine, settings, the_plan, run_id, run_dir, pin, pristine,
             progress or (lambda *_: None), workfs.tree_bytes(pristine),
             exec_path or RESIDENT)
    if not members:
        members = [engines.Member(engine.address, engine, engines.facts(engine, engine.address))]
    r.members = {m.id: m for m in members}
    r.placement = {a.name: members[0].id for a in the_plan.available}
    if resume is None:
        return r, _new_run_doc(r)
    rundoc.check_resumable(previous, run_dir, the_plan.suite, the_plan.arms)
    previous.resumed([m.facts for m in members])
    for member in members:
        left = cleanup.find(member.engine, run_id=run_id)
        cleanup.remove(member.engine, left)
        if left:
            logger.info("orphans_removed", run=run_id, engine=member.id, containers=len(left))
    return r, previous


def _check_engine_images(r: _Run, data: RunDoc) -> None:
    """A resumed arm continues only with the image its cells ran: every recorded cell's
    image id must be the locked one, and so must the engine's image under the locked tag."""
    source = rundoc.path(r.run_dir)
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


def _run_arms(r: _Run, jobs: int) -> list[dict[str, Any]]:
    """Every available arm's sandbox made first, then every arm measured, `jobs` at a time;
    the first failure stops the others, and every sandbox made is taken down."""
    prepared = _prepare_arms(r)
    try:
        if jobs <= 1:
            return [_run_arm(r, p) for p in prepared]
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="arm") as pool:
            futures = [pool.submit(_run_arm, r, p) for p in prepared]
            try:
                return [f.result() for f in futures]
            except BaseException as first:
                r.stop.set()
                # The arms stopped because another failed say KeyboardInterrupt: the error
                # that stopped the run is the one to report (a lost engine, a full disk).
                errors = [f.exception() for f in futures]
                raise next((e for e in errors if e is not None
                            and not isinstance(e, KeyboardInterrupt)), first) from None
    finally:
        for p in prepared:
            p.exits.close()  # a no-op for an arm that finished: it closed its own


@contextmanager
def _status_on_failure(r: _Run, data: RunDoc) -> Iterator[None]:
    """run.json says how a run that stopped ended, and the error says how to resume it."""
    resume_fix = f"sandbench run {r.plan.suite.name} --resume {r.run_dir}"
    try:
        yield
    except KeyboardInterrupt:
        rundoc.write_status(r.run_dir, data, rundoc.INTERRUPTED)
        raise
    except OSError as exc:
        rundoc.write_status(r.run_dir, data, rundoc.FAILED)
        if _disk_full(exc, r.settings.bench_root):
            raise SandbenchError(f"the bench root {r.settings.bench_root} is full",
                                 why=str(exc), fix=f"free space, then: {resume_fix}") from exc
        raise
    except (EngineError, SandboxLost) as exc:
        rundoc.write_status(r.run_dir, data, rundoc.FAILED)
        raise SandbenchError(exc.what, why=exc.why,
                             fix=f"once the engine answers: {resume_fix}") from exc
    except BaseException:
        rundoc.write_status(r.run_dir, data, rundoc.FAILED)
        raise


def _finish(r: _Run, data: RunDoc) -> None:
    """The pristine copy must be as it was before the run; then the run is complete."""
    before = data.corpus.pristine_digest_before
    unchanged = data.finished(corpus.tree_digest(r.pristine))
    rundoc.write(r.run_dir, data)
    if not unchanged:
        raise SandbenchError(f"the pristine copy of {r.pin.id!r} changed during the run",
                             why=f"tree digest {before} before, "
                                 f"{data.corpus.pristine_digest_after} after",
                             fix=f"nothing in sandbench writes it: find out what did, then "
                                 f"refetch it ({r.pin.fetch_hint(force=True)})")


def _done(cell: Path) -> bool:
    """A cell is done when its record exists and its streams are the ones it describes,
    unless the record says the sandbox went away: that is no answer of the tool's. A resume
    runs the cell again in either case."""
    path = cell / RECORD_NAME
    if not path.is_file():
        return False
    try:
        record = read_record(path)
    except InputError:
        return False
    return record.outcome != "sandbox-unavailable" and streams_intact(cell, record)


class SandboxLost(SandbenchError):
    """The container or the engine went away mid-run: stop, keep what is recorded, resume."""


def _fresh(cell: Path) -> Path:
    """A cell directory without a record is an unfinished one: start it again from empty."""
    walk.remove_tree(cell)
    return cell


def _resumable_work(r: _Run, a: ArmPlan, work: Path, sizes: dict[str, int]) -> bool:
    """Whether the arm's file systems from an earlier attempt of this run are kept: only
    once its set-up finished (an index build is not repeated); otherwise they are made anew.
    On an engine of another host they are looked for there."""
    if not (_done(r.run_dir / "cells" / a.name / SETUP_CELL) and _corpus_before(r, a).is_file()):
        return False
    host = r.member(a.name).host
    if host is not None:
        return host.has_filesystems(a.name, list(sizes))
    return workfs.image_path(work, "corpus").is_file()


def _corpus_before(r: _Run, a: ArmPlan) -> Path:
    return r.run_dir / "arms" / a.name / "corpus-before.json"


def _prepare_work(r: _Run, a: ArmPlan, work: Path, kept: bool) -> corpus.Snapshot:
    """The arm's private corpus copy on its freshly mounted file system, or the copy it
    already had when its file systems were kept."""
    if kept:
        return _load_snapshot(_corpus_before(r, a))
    corpus.make_arm_copy(r.pristine, work / "corpus", r.pin, owner=default_user())
    return _save_corpus_before(r, a, corpus.snapshot(work / "corpus"))


def _prepare_remote_work(r: _Run, a: ArmPlan, host: remote.EngineHost,
                         volumes: dict[str, str], kept: bool) -> corpus.Snapshot:
    """On an engine of another host: the arm's corpus copy made in its file system there
    and read back (or the copy it already had), and a HOME under /state its user owns."""
    if kept:
        return _load_snapshot(_corpus_before(r, a))
    home = a.spec.env.get("HOME", "")
    if home.startswith("/state/"):
        parts = Path(home.removeprefix("/state/")).parts
        host.seed(volumes["state"], ["/".join(parts[:i + 1]) for i in range(len(parts))],
                  default_user())
    copy = host.copy_corpus(r.pristine, volumes["corpus"], default_user(),
                            r.settings.bench_root / "transfer")
    return _save_corpus_before(r, a, copy)


def _save_corpus_before(r: _Run, a: ArmPlan, snap: corpus.Snapshot) -> corpus.Snapshot:
    before = _portable(snap)
    atomic_write_json(_corpus_before(r, a), {p: [e.kind, e.mode, e.size, e.digest]
                                             for p, e in before.entries.items()})
    return before


def _portable(snap: corpus.Snapshot) -> corpus.Snapshot:
    """Paths as JSON can hold them: a name that is not UTF-8 (a tool may write one) keeps
    its undecodable bytes as \\xNN escapes, the same way on every side of a comparison."""
    return corpus.Snapshot({os.fsencode(p).decode("utf-8", "backslashreplace"): e
                            for p, e in snap.entries.items()}, snap.cuts)


def _load_snapshot(path: Path) -> corpus.Snapshot:
    raw = read_json(path)
    return corpus.Snapshot({p: corpus.Entry(*v) for p, v in raw.items()})


def _stop_if_lost(r: _Run, a: ArmPlan, rec: ExecRecord) -> None:
    if rec.outcome == "sandbox-unavailable":
        raise SandboxLost(f"the sandbox of arm {a.name!r} went away during a cell on engine "
                          f"{r.member(a.name).url}",
                          why="the container or the engine stopped; the cell's record says "
                              "sandbox-unavailable and a resume runs it again",
                          fix=f"once the engine answers: sandbench run {r.plan.suite.name} "
                              f"--resume {r.run_dir}")


@dataclass
class _Prepared:
    """An arm ready to measure: its file systems mounted, its corpus copied, its sandbox
    started and verified (or refused, and already taken down). `exits` unmounts and removes,
    whatever happened."""
    arm: ArmPlan
    work: Path
    before: corpus.Snapshot | None
    box: Sandbox | None
    refused: str | None
    exits: ExitStack
    volumes: dict[str, str] | None = None  # on an engine of another host: its file systems

    def snapshot(self, r: _Run, name: str) -> corpus.Snapshot:
        """The arm's file system `name` as it is now, where it lives."""
        if self.volumes is not None:
            host = r.member(self.arm.name).host
            assert host is not None
            return _portable(host.snapshot(self.volumes[name]))
        return _portable(corpus.snapshot(self.work / name))


def _prepare_arms(r: _Run) -> list[_Prepared]:
    """Every arm's sandbox, `PREPARE_WORKERS` at a time, before any arm's first measured
    command: no container start or corpus copy then runs beside a measured tool, and the
    engine's waits overlap. A failure (or Ctrl-C) takes down every sandbox already made."""
    pool = ThreadPoolExecutor(max_workers=PREPARE_WORKERS, thread_name_prefix="prepare")
    futures = [pool.submit(_prepare_arm, r, a) for a in r.plan.available]
    try:
        return [f.result() for f in futures]
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        for f in futures:
            if not f.cancelled() and f.exception() is None:
                f.result().exits.close()
        raise
    finally:
        pool.shutdown(wait=True)


def _prepare_arm(r: _Run, a: ArmPlan) -> _Prepared:
    work = r.run_dir / "work" / a.name
    sizes = workfs.sizes(a.spec.limits, r.corpus_bytes)
    kept = _resumable_work(r, a, work, sizes)
    setup = r.run_dir / "cells" / a.name / SETUP_CELL
    if not kept and setup.exists():
        # What the set-up built lived on file systems that are made anew (the arm moved to
        # another engine, or they were lost): it runs again before any missing cell.
        logger.info("setup_again", arm=a.name, engine=r.placement[a.name])
        walk.remove_tree(setup)
    member = r.member(a.name)
    host = member.host
    volumes = None
    exits = ExitStack()
    try:
        lock = ImageLock.load(r.settings.images_lock)
        if host is None:
            exits.enter_context(workfs.mounted(work, sizes, fresh=not kept))
            before = _prepare_work(r, a, work, kept)
            spec = for_arm(lock, a.spec, r.run_id, work, default_user(), sizes, r.exec_path)
        else:
            assert host.helper_path is not None
            volumes = exits.enter_context(host.filesystems(a.name, sizes, default_user(),
                                                           fresh=not kept))
            before = _prepare_remote_work(r, a, host, volumes, kept)
            spec = for_arm(lock, a.spec, r.run_id, work, default_user(), sizes, r.exec_path,
                           volumes=volumes, helper_path=Path(host.helper_path))
        box = exits.enter_context(Sandbox(member.engine, spec, member.id,
                                          host.helper_digest if host else None))
        try:
            box.verify(r.run_dir / "guards" / a.name)
        except GuardViolation as exc:
            logger.error("arm_refused", arm=a.name, why=exc.why)
            exits.close()
            return _Prepared(a, work, None, None, exc.why, exits, volumes)
    except BaseException:
        exits.close()
        raise
    return _Prepared(a, work, before, box, None, exits, volumes)


def _run_arm(r: _Run, p: _Prepared) -> dict[str, Any]:
    """One prepared arm: set-up and every cell; then, with every process of the arm's gone
    and its cells made durable at once, what it wrote is disclosed. Its file systems are
    unmounted on the way out, whatever happened."""
    with p.exits:
        if p.refused is not None:
            return {"refused": p.refused}
        assert p.box is not None and p.before is not None
        _run_cells(r, p.arm, p.box)
        p.box.remove()
        sync_filesystem(r.run_dir)
        summary = {"state_bytes": _disclose_state(r, p.arm, p.before, p.snapshot(r, "corpus"),
                                                  p.snapshot(r, "state"), p.snapshot(r, "out"))}
    return summary


def _run_cells(r: _Run, a: ArmPlan, box: Sandbox) -> None:
    """The arm's set-up and every cell not yet recorded, each written without an fsync of
    its own (the arm's end syncs them all; a resume re-runs a cell whose streams were lost)."""
    cells = r.run_dir / "cells" / a.name
    tasks = {t.id: t for t in r.plan.suite.tasks}
    if a.spec.mcp is not None:
        _run_mcp_cells(r, a, box, cells, tasks)
        return
    if a.spec.setup is not None:
        setup = cells / SETUP_CELL
        if not _done(setup):
            rec = box.exec(list(a.spec.setup.argv), _fresh(setup),
                           timeout_s=a.spec.setup.timeout_s, durable=False)
            r.progress(a.name, SETUP_CELL, rec.outcome)
            _stop_if_lost(r, a, rec)
    for task_id, rep in a.cells:
        if r.stop.is_set():
            raise KeyboardInterrupt
        cell = cells / task_id / str(rep)
        if _done(cell):
            continue
        task = tasks[task_id]
        rec = box.exec(a.spec.render(task.kind, task.values), _fresh(cell),
                       timeout_s=r.plan.suite.timeout_s, durable=False)
        r.progress(a.name, f"{task_id}/{rep}", rec.outcome)
        _stop_if_lost(r, a, rec)


def _run_mcp_cells(r: _Run, a: ArmPlan, box: Sandbox, cells: Path,
                   tasks: dict[str, suite.Task]) -> None:
    """An MCP arm: the set-up session, then per task one session sending its call reps + 1
    times (cold, then warm on the same server); every REP record is derived from the
    session's transcript (orchestrator/mcp.py). A task counts as done once all its REP
    records exist; otherwise its session runs again from empty."""
    server = a.spec.mcp
    assert server is not None
    reps = r.plan.suite.reps
    timeout_s = r.plan.suite.timeout_s
    setup = cells / SETUP_CELL
    if not _done(setup):
        session_dir = _fresh(setup) / mcp.SESSION
        argv = mcp.session_argv(server, list(server.setup_calls), timeout_s, box.spec.workdir)
        rec = box.exec(argv, session_dir, timeout_s=mcp.session_timeout_s(
            server, len(server.setup_calls), timeout_s))
        _stop_if_lost(r, a, rec)
        derived = mcp.setup_record(rec, session_dir, setup, server)
        r.progress(a.name, SETUP_CELL, derived.outcome)
    for task_id in dict.fromkeys(task_id for task_id, _ in a.cells):
        if r.stop.is_set():
            raise KeyboardInterrupt
        task_dir = cells / task_id
        if mcp.done(task_dir, reps):
            continue
        task = tasks[task_id]
        call = a.spec.calls[task.kind].render(task.values)
        session_dir = _fresh(task_dir) / mcp.SESSION
        argv = mcp.session_argv(server, [call] * (reps + 1), timeout_s, box.spec.workdir)
        rec = box.exec(argv, session_dir,
                       timeout_s=mcp.session_timeout_s(server, reps + 1, timeout_s))
        _stop_if_lost(r, a, rec)
        for rep, derived in enumerate(mcp.task_records(rec, session_dir, task_dir, call, reps)):
            r.progress(a.name, f"{task_id}/{rep}", derived.outcome)


def _disclose_state(r: _Run, a: ArmPlan, before: corpus.Snapshot, after: corpus.Snapshot,
                    state: corpus.Snapshot, out: corpus.Snapshot) -> int:
    """arms/ARM/state.json: what the arm changed in its corpus copy and wrote to its state
    and out dirs, complete up to the walk's bounds, and where each listing was cut (null
    when complete); returns the bytes it added."""
    changed = corpus.changes(before, after)
    disclosure = {
        "corpus_changes": [{"path": c.path, "status": c.status, "kind": c.kind,
                            "size_before": c.size_before, "size_after": c.size_after,
                            "in_git": c.in_git} for c in changed],
        "state_files": sorted([p, e.size] for p, e in state.entries.items() if e.kind == "file"),
        "state_bytes": sum(e.size for e in state.entries.values() if e.kind == "file"),
        "corpus_added_bytes": sum(max(c.size_after - c.size_before, 0) for c in changed),
        "out_files": sorted([p, e.size] for p, e in out.entries.items() if e.kind == "file"),
        "out_bytes": sum(e.size for e in out.entries.values() if e.kind == "file"),
        "corpus_cut": after.cut_json(), "state_cut": state.cut_json(), "out_cut": out.cut_json(),
        # Files with holes, digested by their allocated extents (their size is apparent).
        "sparse_files": {name: sorted(p for p, e in snap.entries.items()
                                      if e.digest.startswith(walk.SPARSE_PREFIX))
                         for name, snap in (("corpus", after), ("state", state), ("out", out))},
    }
    atomic_write_json(r.run_dir / "arms" / a.name / "state.json", disclosure)
    return disclosure["state_bytes"] + disclosure["corpus_added_bytes"]


def _save_pin_lines(r: _Run) -> None:
    """The line index reach is scored against, read (and verified object by object) from
    the pristine copy, never from an arm's copy (git there would run what the arm wrote
    into its `.git`): the scorer then reads RUN_DIR/pin-lines.json alone."""
    path = r.run_dir / pinlines.PIN_LINES
    if path.is_file():
        return
    index = pinlines.load_index(r.run_dir, r.pin.sha, r.pristine)
    if index.available:  # else unverifiable, and the scorer says so
        atomic_write_text(path, pinlines.pin_lines_text(index))
