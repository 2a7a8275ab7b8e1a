"""A run begins: the suite's corpus verified at its pin, then a new run directory and its
run.json, or the one resumed (checked to continue the same run, with what a killed attempt
left on the engines removed); from either, the run's context."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestrator import corpus, log, suite
from orchestrator.run import document as run_document, rundir
from orchestrator.sandbox import cleanup, runtimes, workfs
from orchestrator.errors import InputError
from orchestrator.images import ImageLock
from orchestrator.run.options import Progress, RunContext, RunOptions
from orchestrator.run.plan import Plan
from orchestrator.run.pool import Member
from orchestrator.run.document import RunDoc
from orchestrator.sandbox.spec import RESIDENT, default_user
from orchestrator.settings import Settings

logger = log.get(__name__)


def open_run(settings: Settings, options: RunOptions, the_plan: Plan,
             members: Sequence[Member], progress: Progress | None
             ) -> tuple[RunContext, RunDoc]:
    """The run's context and document: new, or the resumed run's (its exec path and
    runtimes kept, --exec-path and --runtime only allowed to repeat them)."""
    pin, pristine = verified_corpus(settings, the_plan.suite)
    previous = None
    if options.resume is None:
        run_id, run_dir = rundir.create(settings.runs_dir, f"run-{the_plan.suite.name}")
        exec_path = options.exec_path or RESIDENT
    else:
        run_dir = options.resume.resolve()
        previous = run_document.read(run_dir)
        run_id = previous.run_id
        exec_path = _kept_exec_path(previous, run_dir, options.exec_path)
        _keep_runtimes(previous, run_dir, options.runtime)
    log.configure(run_dir / "log.jsonl")
    if previous is None:
        runtime_of = {a.name: the_plan.suite.runtime.of(a.name, options.runtime)
                      for a in the_plan.available}
    else:
        runtime_of = {a.name: previous.arms[a.name].runtime or runtimes.RUNC
                      for a in the_plan.available if a.name in previous.arms}
    r = RunContext(settings, options, the_plan, run_id, run_dir, pin, pristine,
                   progress or (lambda *_: None), workfs.tree_bytes(pristine), exec_path,
                   runtime_of, {m.id: m for m in members},
                   {a.name: members[0].id for a in the_plan.available})
    if previous is None:
        data = _new_run_doc(r)
        for name, arm_runtime in runtime_of.items():
            data.arms[name].runtime = arm_runtime
        return r, data
    run_document.check_resumable(previous, run_dir, the_plan.suite, the_plan.arms)
    previous.resumed([m.facts for m in members])
    for member in members:
        left = cleanup.find(member.engine, run_id=run_id)
        cleanup.remove(member.engine, left)
        if left:
            logger.info("orphans_removed", run=run_id, engine=member.id, containers=len(left))
    return r, previous


def verified_corpus(settings: Settings, the_suite: suite.Suite
                    ) -> tuple[corpus.CorpusPin, Path]:
    """The suite's pin and its pristine copy, verified at the pin and holding every truth
    path."""
    lock = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock), the_suite.corpus, lock)
    corpus.verify_pristine(pin, settings)
    pristine = corpus.corpus_dir(settings, pin.id)
    suite.check_truth_at_pin(the_suite, pristine)
    return pin, pristine


def _new_run_doc(r: RunContext) -> RunDoc:
    info = corpus.read_info(r.settings, r.pin.id)
    assert info is not None
    return run_document.new(run_id=r.run_id, the_suite=r.plan.suite, planned=r.plan.arms,
                            pin=r.pin, info=info, pristine_digest=corpus.tree_digest(r.pristine),
                            engine_version=r.engine.version(),
                            engines=[m.facts for m in r.members.values()],
                            lock=ImageLock.load(r.settings.images_lock), user=default_user(),
                            bench_root=r.settings.bench_root, exec_path=r.exec_path)


def _kept_exec_path(previous: RunDoc, run_dir: Path, asked: str | None) -> str:
    """A resumed run keeps its exec path: --exec-path may only repeat it."""
    recorded = previous.exec_path_used
    if asked is not None and asked != recorded:
        raise InputError.bad_value(run_document.path(run_dir), "exec_path", asked, recorded,
                                   fix="a resumed run keeps its exec path: leave out "
                                       "--exec-path, or start a new run")
    return recorded


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
