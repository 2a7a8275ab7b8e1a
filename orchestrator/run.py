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
                                     work/ARM/{corpus,state,out} only during the run (where
                                     the engine makes them: in the run's work volume there)
    pin-lines.json                   line counts at the pin, read from the pristine copy
    log.jsonl                        structured log

The stages: the plan (here), every engine and arm made ready (orchestrator/prepare.py, each
arm where its placement puts it: orchestrator/placement), the cells measured
(orchestrator/cells.py), the run document kept up to date throughout (here).
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import (arms, cells, cleanup, corpus, engine_limits, engine_pool, images, log,
                          line_index, preflight, prepare, rundir, run_document, runtimes, suite,
                          workfs)
from orchestrator.engine import Engine
from orchestrator.errors import EngineError, InputError, SandbenchError
from orchestrator.fsutil import atomic_write_text
from orchestrator.images import ImageLock
from orchestrator.run_document import RunDoc
from orchestrator.sandbox_spec import EXEC_PATHS, RESIDENT, default_user
from orchestrator.settings import Settings

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
    # The container runtime of each arm (orchestrator/runtimes.py), fixed when the run begins.
    runtime_of: dict[str, str] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)
    # The run's engines by id, and the engine each arm runs on (engine_pool.place).
    members: dict[str, engine_pool.Member] = field(default_factory=dict)
    engine_of: dict[str, str] = field(default_factory=dict)
    accept_unbounded_limits: bool = False  # arms run on an engine that cannot enforce limits

    def member(self, arm: str) -> engine_pool.Member:
        return self.members[self.engine_of[arm]]


def _new_run_doc(r: _Run) -> RunDoc:
    info = corpus.read_info(r.settings, r.pin.id)
    assert info is not None
    return run_document.new(run_id=r.run_id, the_suite=r.plan.suite, planned=r.plan.arms, pin=r.pin,
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


def _bench_full(r: _Run, exc: OSError) -> SandbenchError | None:
    """The error that says how to go on when `exc` means the bench root is full."""
    if not _disk_full(exc, r.settings.bench_root):
        return None
    return SandbenchError(f"the bench root {r.settings.bench_root} is full", why=str(exc),
                          fix=f"free space, then: sandbench run {r.plan.suite.name} "
                              f"--resume {r.run_dir}")


def execute(engine: Engine, settings: Settings, suite_name: str, *, resume: Path | None = None,
            jobs: int = 1, only: list[str] | None = None, progress: Progress | None = None,
            exec_path: str | None = None, members: list[engine_pool.Member] | None = None,
            on_refused: str = engine_pool.STOP, runtime: str | None = None,
            accept_unbounded_limits: bool = False) -> Path:
    """Run (or resume) a suite; returns the run directory. `exec_path` (resident unless
    given; a resume keeps the run's own) says how every command reaches its container.
    `members` (engine_pool.connect) spreads the arms over several engines, each made ready
    (images, pre-flight guards) before an arm runs there; without it every arm runs on
    `engine`. `runtime` runs every arm under that container runtime instead of the suite's
    (a resume keeps the run's own). An engine that cannot enforce the arms' limits has its
    arms refused unless `accept_unbounded_limits` (engine_limits)."""
    if runtime is not None and runtime not in runtimes.RUNTIMES:
        raise InputError.bad_value("--runtime", "--runtime", f"one of {list(runtimes.RUNTIMES)}",
                                   runtime)
    if exec_path is not None and exec_path not in EXEC_PATHS:
        raise InputError.bad_value("--exec-path", "--exec-path", f"one of {list(EXEC_PATHS)}",
                                   exec_path)
    if on_refused not in engine_pool.ON_REFUSED:
        raise InputError.bad_value("--on-engine-refused", "--on-engine-refused",
                                   f"one of {list(engine_pool.ON_REFUSED)}", on_refused)
    if members:
        engine = members[0].engine
    the_plan = _startable_plan(engine, settings, suite_name, only, runtime, members)
    pin, pristine = _verified_corpus(settings, the_plan.suite)
    r, data = _open_run(engine, settings, the_plan, pin, pristine, resume, progress, exec_path,
                        members, runtime)
    r.accept_unbounded_limits = accept_unbounded_limits
    with _status_on_failure(r, data):
        run_document.write(r.run_dir, data)
        _save_pin_lines(r)
        prepare.place_and_prepare(r, data, on_refused)
        for a in the_plan.available:
            data.arms[a.name].engine = r.engine_of[a.name]
        if accept_unbounded_limits:
            engine_limits.note_accepted(data.deviations,
                                        [r.member(a.name).facts for a in the_plan.available])
        run_document.write(r.run_dir, data)
        for a, outcome in zip(the_plan.available, _run_arms(r, jobs), strict=True):
            data.arms[a.name].ended(**outcome)
    _finish(r, data)
    return r.run_dir


def _startable_plan(engine: Engine, settings: Settings, suite_name: str,
                    only: list[str] | None, runtime: str | None,
                    members: list[engine_pool.Member] | None) -> Plan:
    """The plan, refused with every problem the pre-flight finds (`preflight`, the same
    checks as --dry-run): anything it needs missing, the suite's seal broken, a runtime an
    engine of the run lacks."""
    the_plan = plan(settings, suite_name, only, engine)
    engines = [m.engine for m in members] if members else [engine]
    if problems := preflight.plan_problems(the_plan, settings, runtime, engines):
        raise preflight.could_not_start(problems)
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
              exec_path: str | None, members: list[engine_pool.Member] | None = None,
              runtime: str | None = None) -> tuple[_Run, RunDoc]:
    """A new run directory and its run.json, or the one resumed: checked to continue the
    same run, with what a killed attempt left on the engine removed."""
    if resume is None:
        run_id, run_dir = rundir.create(settings.runs_dir, f"run-{the_plan.suite.name}")
    else:
        run_dir = resume.resolve()
        if not run_document.path(run_dir).is_file():
            raise InputError(f"{run_dir}: no run.json: not a run directory to resume",
                             file=str(run_dir))
        previous = run_document.read(run_dir)
        run_id = previous.run_id
        recorded = previous.exec_path_used
        if exec_path is not None and exec_path != recorded:
            raise InputError.bad_value(run_document.path(run_dir), "exec_path", exec_path, recorded,
                                       fix="a resumed run keeps its exec path: leave out "
                                           "--exec-path, or start a new run")
        exec_path = recorded
        _keep_runtimes(previous, run_dir, runtime)
    log.configure(run_dir / "log.jsonl")
    r = _Run(engine, settings, the_plan, run_id, run_dir, pin, pristine,
             progress or (lambda *_: None), workfs.tree_bytes(pristine),
             exec_path or RESIDENT)
    if not members:  # one engine is a pool of one
        members = [engine_pool.Member(engine.address, engine,
                                      engine_pool.facts(engine, engine.address))]
    r.members = {m.id: m for m in members}
    r.engine_of = {a.name: members[0].id for a in the_plan.available}
    if resume is None:
        r.runtime_of = {a.name: the_plan.suite.runtime.of(a.name, runtime)
                        for a in the_plan.available}
        data = _new_run_doc(r)
        for name, arm_runtime in r.runtime_of.items():
            data.arms[name].runtime = arm_runtime
        return r, data
    r.runtime_of = {a.name: previous.arms[a.name].runtime or runtimes.RUNC
                    for a in the_plan.available if a.name in previous.arms}
    run_document.check_resumable(previous, run_dir, the_plan.suite, the_plan.arms)
    previous.resumed([m.facts for m in members])
    for member in members:
        left = cleanup.find(member.engine, run_id=run_id)
        cleanup.remove(member.engine, left)
        if left:
            logger.info("orphans_removed", run=run_id, engine=member.id, containers=len(left))
    return r, previous


def _keep_runtimes(previous: RunDoc, run_dir: Path, runtime: str | None) -> None:
    """A resumed run keeps each arm's runtime: --runtime may only repeat it."""
    if runtime is None:
        return
    for name, arm in previous.arms.items():
        if (arm.runtime or runtimes.RUNC) != runtime and arm.unavailable is None:
            raise InputError.bad_value(run_document.path(run_dir), f"arms.{name}.runtime",
                                       runtime, arm.runtime or runtimes.RUNC,
                                       fix="a resumed run keeps its arms' runtimes: leave out "
                                           "--runtime, or start a new run")


def _run_arms(r: _Run, jobs: int) -> list[dict[str, Any]]:
    """Every available arm's sandbox made first, then every arm measured, `jobs` at a time;
    the first failure stops the others, and every sandbox made is taken down."""
    prepared = prepare.prepare_arms(r)
    try:
        if jobs <= 1:
            return [cells.run_arm(r, p) for p in prepared]
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="arm") as pool:
            futures = [pool.submit(cells.run_arm, r, p) for p in prepared]
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
        run_document.write_status(r.run_dir, data, run_document.INTERRUPTED)
        raise
    except OSError as exc:
        run_document.write_status(r.run_dir, data, run_document.FAILED)
        if (full := _bench_full(r, exc)) is not None:
            raise full from exc
        raise
    except (EngineError, cells.SandboxLost) as exc:
        run_document.write_status(r.run_dir, data, run_document.FAILED)
        raise SandbenchError(exc.what, why=exc.why,
                             fix=f"once the engine answers: {resume_fix}") from exc
    except BaseException:
        run_document.write_status(r.run_dir, data, run_document.FAILED)
        raise


def _finish(r: _Run, data: RunDoc) -> None:
    """The pristine copy must be as it was before the run; then the run is complete. When
    the bench root has no room for the last run.json, the run stays resumable: every cell is
    done, and the resume only finishes it."""
    before = data.corpus.pristine_digest_before
    unchanged = data.finished(corpus.tree_digest(r.pristine))
    try:
        run_document.write(r.run_dir, data)
    except OSError as exc:
        if (full := _bench_full(r, exc)) is not None:
            raise full from exc
        raise
    if not unchanged:
        raise SandbenchError(f"the pristine copy of {r.pin.id!r} changed during the run",
                             why=f"tree digest {before} before, "
                                 f"{data.corpus.pristine_digest_after} after",
                             fix=f"nothing in sandbench writes it: find out what did, then "
                                 f"refetch it ({r.pin.fetch_hint(force=True)})")


def _save_pin_lines(r: _Run) -> None:
    """The line index reach is scored against, read (and verified object by object) from
    the pristine copy, never from an arm's copy (git there would run what the arm wrote
    into its `.git`): the scorer then reads RUN_DIR/pin-lines.json alone."""
    path = r.run_dir / line_index.PIN_LINES
    if path.is_file():
        return
    assert r.pin.sha is not None  # verified at the pin (_verified_corpus) before the run
    index = line_index.load_index(r.run_dir, r.pin.sha, r.pristine)
    if index.available:  # else unverifiable, and the scorer says so
        atomic_write_text(path, line_index.pin_lines_text(index))
