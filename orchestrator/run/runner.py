"""A run from start to end: its directory opened, its engines and arms made ready, every arm
measured (`jobs` at a time), and its document kept up to date throughout, saying how a run
that stopped ended and how to resume it."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orchestrator import corpus, line_index
from orchestrator.run import document as run_document
from orchestrator.sandbox import engine_limits
from orchestrator.errors import EngineError, SandbenchError
from orchestrator.fsutil import atomic_write_text
from orchestrator.run import cells, prepare, preflight, start
from orchestrator.run.options import Progress, RunContext, RunOptions
from orchestrator.run.pool import Member
from orchestrator.run.document import RunDoc
from orchestrator.settings import Settings


def run(settings: Settings, options: RunOptions, members: Sequence[Member] | None = None,
        progress: Progress | None = None) -> Path:
    """Run (or resume) what `options` asks for on `members` (those of `options.engine_urls`
    when None): its pre-flight, then the run; returns the run directory."""
    return execute(settings, options, preflight.check(settings, options, members), progress)


def execute(settings: Settings, options: RunOptions, checked: preflight.Preflight,
            progress: Progress | None = None) -> Path:
    """Run (or resume) the suite as planned by its pre-flight `checked`, refused with every
    problem it found; returns the run directory. Each engine of the run is made ready
    (images, pre-flight guards) before an arm runs there; an engine that cannot enforce the
    arms' limits has its arms refused unless the options accept that (engine_limits)."""
    the_plan, members = checked.ready()
    r, data = start.open_run(settings, options, the_plan, members, progress)
    with _status_on_failure(r, data):
        run_document.write(r.run_dir, data)
        _save_pin_lines(r)
        prepare.place_and_prepare(r, data)
        for a in the_plan.available:
            data.arms[a.name].engine = r.engine_of[a.name]
        if options.accept_unbounded_limits:
            engine_limits.note_accepted(data.deviations,
                                        [r.member(a.name).facts for a in the_plan.available])
        run_document.write(r.run_dir, data)
        for a, outcome in zip(the_plan.available, _run_arms(r, options.jobs), strict=True):
            data.arms[a.name].ended(**outcome)
    finish(r, data)
    return r.run_dir


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


def _bench_full(r: RunContext, exc: OSError) -> SandbenchError | None:
    """The error that says how to go on when `exc` means the bench root is full."""
    if not _disk_full(exc, r.settings.bench_root):
        return None
    return SandbenchError(f"the bench root {r.settings.bench_root} is full", why=str(exc),
                          fix=f"free space, then: sandbench run {r.plan.suite.name} "
                              f"--resume {r.run_dir}")


def _run_arms(r: RunContext, jobs: int) -> list[dict[str, Any]]:
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
def _status_on_failure(r: RunContext, data: RunDoc) -> Iterator[None]:
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


def finish(r: RunContext, data: RunDoc) -> None:
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


def _save_pin_lines(r: RunContext) -> None:
    """The line index reach is scored against, read (and verified object by object) from
    the pristine copy, never from an arm's copy (git there would run what the arm wrote
    into its `.git`): the scorer then reads RUN_DIR/pin-lines.json alone."""
    path = r.run_dir / line_index.PIN_LINES
    if path.is_file():
        return
    assert r.pin.sha is not None  # verified at the pin (start.verified_corpus) before the run
    index = line_index.load_index(r.run_dir, r.pin.sha, r.pristine)
    if index.available:  # else unverifiable, and the scorer says so
        atomic_write_text(path, line_index.pin_lines_text(index))
