"""Everything the scorer reads, read and checked before anything is written: the run directory
(run.json, every cell's record and the graded stdout) and the sealed suite whose seal the run
recorded. No engine, no network, no corpus store: a run directory copied to another machine
scores the same there.

Any missing or corrupt input raises InputError naming the file (and the key), so a bad run
directory leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.run import document as run_document
from orchestrator import suite as suite_mod
from orchestrator.errors import InputError
from orchestrator.fsutil import read_json, sha256_file
from orchestrator.kinds import KINDS
from orchestrator.predictions.model import PREDICTIONS
from orchestrator.run.document import SETUP_CELL, ArmRecord, RunDoc
from orchestrator.settings import PACKAGE_DIR
from orchestrator.run.transcripts import RECORD_NAME, ExecRecord, read_record

# The project root the scorer's own sources are sealed relative to.
SOURCE_ROOT = PACKAGE_DIR.parent


@dataclass(frozen=True)
class Rep:
    """One stored invocation: REP 0 is cold, 1..reps warm."""

    rep: int
    cell_dir: Path
    record: ExecRecord


@dataclass(frozen=True)
class ArmRun:
    """An arm of the suite as the run had it; an absent arm has no record and attempts
    nothing."""

    name: str
    record: ArmRecord | None  # run.json arms[name]
    status: str  # "available" | "unavailable" | "refused" | "absent" (not in this run)
    reason: str | None

    @property
    def tasks(self) -> dict[str, list[str]]:
        return {} if self.record is None else self.record.tasks

    @property
    def not_attempted(self) -> dict[str, dict[str, str]]:
        return {} if self.record is None else self.record.not_attempted

    @property
    def parser(self) -> str:
        return "" if self.record is None else self.record.parser

    @property
    def description(self) -> str:
        return "" if self.record is None else self.record.description

    @property
    def env(self) -> dict[str, str]:
        return {} if self.record is None else self.record.env

    @property
    def install_seconds(self) -> float | None:
        return None if self.record is None else self.record.install_seconds

    @property
    def setup_argv(self) -> list[str] | None:
        return None if self.record is None else self.record.setup_argv


@dataclass(frozen=True)
class RunInputs:
    run_dir: Path
    run: RunDoc
    suite: suite_mod.Suite
    suite_text: str
    manifest: dict[str, Any]
    manifest_rows: tuple[dict[str, Any], ...]
    arms: tuple[ArmRun, ...]
    reps: dict[tuple[str, str], tuple[Rep, ...]]
    setup: dict[str, Rep | None]
    state: dict[str, dict[str, Any] | None]
    verdicts: dict[str, list[dict[str, Any]] | None]

    def stdout(self, rep: Rep) -> bytes:
        """The graded stdout, checked against the digest its record holds."""
        return _stream(rep, "stdout")

    def stderr(self, rep: Rep) -> bytes:
        return _stream(rep, "stderr")


def _at(data: Any, dotted: str, source: Path) -> Any:
    """data[a][b]... for "a.b", or an error naming the file and the key."""
    current = data
    for part in dotted.split("."):
        if not isinstance(current, dict) or part not in current:
            raise InputError.bad_value(source, dotted, "present", None)
        current = current[part]
    return current


def read_complete_run(run_dir: Path) -> RunDoc:
    """RUN_DIR/run.json (run_document.read), of a run that finished: only such a run is
    scored, one whose arms were refused too (its arms that ran are scored, the refused ones
    are unscored and named in the disclosure)."""
    run = run_document.read(run_dir)
    if run.status not in run_document.FINISHED:
        raise InputError.bad_value(run_document.path(run_dir), "status",
                                   " or ".join(repr(s) for s in run_document.FINISHED),
                                   run.status, fix="finish the run first: sandbench run SUITE "
                                                   f"--resume {run_dir}")
    return run


def _load_suite(suite_dir: Path, name: str) -> suite_mod.Suite:
    if suite_dir.name != name:
        raise InputError(f"{suite_dir}: the run was made with suite {name!r}",
                         fix=f"give the sealed suite directory suites/{name}",
                         file=str(suite_dir))
    return suite_mod.load_suite(suite_dir.parent, name)


def check_seal(run: RunDoc, the_suite: suite_mod.Suite,
               run_json: Path) -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    """The suite must be the one the run sealed, byte for byte; the scorer's own sources may
    have changed since (a scorer fix), and each such file is reported, never hidden."""
    path = the_suite.path / suite_mod.MANIFEST
    if not path.is_file():
        raise InputError(f"{path} is missing: suite {the_suite.name!r} is not sealed",
                         file=str(path))
    found = hashlib.sha256(path.read_bytes()).hexdigest()
    sealed_for_run = run.suite.manifest_sha256
    if found != sealed_for_run:
        raise InputError(f"{path}: the suite's seal is not the run's (sha256 {found[:12]}, "
                         f"the run recorded {sealed_for_run[:12]})",
                         fix="score with the suite directory exactly as it was sealed for "
                             "this run", file=str(path), key="suite.manifest_sha256",
                         expected=sealed_for_run, found=found)
    manifest = read_json(path)
    inputs = manifest.get("inputs") if isinstance(manifest, dict) else None
    if not isinstance(inputs, dict):
        raise InputError.bad_value(path, "inputs", "an object of path -> sha256", inputs)
    pin = run.corpus.pin
    if manifest.get("corpus") != pin:
        raise InputError.bad_value(path, "corpus", json.dumps(pin, sort_keys=True),
                                   manifest.get("corpus"))
    prefix = f"suites/{the_suite.name}/"
    rows: list[dict[str, Any]] = []
    suite_files = {prefix + p.relative_to(the_suite.path).as_posix()
                   for p in (the_suite.path / "tasks").glob("*.toml")}
    if (the_suite.path / PREDICTIONS).is_file():
        suite_files.add(prefix + PREDICTIONS)
    for extra in sorted(suite_files - set(inputs)):
        raise InputError(f"{the_suite.path / extra.removeprefix(prefix)}: not in the seal "
                         f"of suite {the_suite.name!r}", file=extra)
    for key in sorted(inputs):
        sealed = inputs[key]
        if key.startswith(prefix):
            file = the_suite.path / key.removeprefix(prefix)
            now = sha256_file(file) if file.is_file() else None
            if now != sealed:
                raise InputError(f"{file}: differs from the seal of suite {the_suite.name!r} "
                                 f"(sealed {str(sealed)[:12]}, found "
                                 f"{'missing' if now is None else now[:12]})",
                                 fix="score with the suite exactly as it was sealed for this "
                                     "run", file=str(file), key=key)
            rows.append({"file": key, "kind": "suite", "sealed_sha256": sealed,
                         "found_sha256": now, "status": "match"})
        elif key.startswith("arms/"):
            arm = Path(key).stem
            if arm not in run.arms:
                rows.append({"file": key, "kind": "arm", "sealed_sha256": sealed,
                             "found_sha256": None, "status": "not-run"})
                continue
            recorded = run.arms[arm].spec_sha256
            if recorded != sealed:
                raise InputError.bad_value(run_json, f"arms.{arm}.spec_sha256", str(sealed),
                                           recorded, fix=f"the run's arm spec is not the "
                                           f"sealed {key}")
            rows.append({"file": key, "kind": "arm", "sealed_sha256": sealed,
                         "found_sha256": recorded, "status": "match"})
        else:
            rows.append(_scorer_row(key, sealed))
    # The scorer's sources now for the parsers the run's arms recorded; any not sealed is new.
    parser_names = {arm.parser for arm in run.arms.values()}
    for file in suite_mod.scorer_sources(SOURCE_ROOT, parser_names):
        key = file.relative_to(SOURCE_ROOT).as_posix()
        if key not in inputs:
            rows.append({"file": key, "kind": "scorer", "sealed_sha256": None,
                         "found_sha256": None, "status": "added"})
    rows.sort(key=lambda r: r["file"])
    return manifest, tuple(rows)


def _scorer_row(key: str, sealed: str) -> dict[str, Any]:
    """A scorer source against the seal. Only whether it matches is recorded, not the digest
    of the file running now: scores.json must not change with every later edit of a file
    that already differs."""
    file = SOURCE_ROOT / key
    now = sha256_file(file) if file.is_file() else None
    status = "match" if now == sealed else "missing" if now is None else "differs"
    return {"file": key, "kind": "scorer", "sealed_sha256": sealed,
            "found_sha256": sealed if status == "match" else None, "status": status}


def _arm_runs(run: RunDoc, the_suite: suite_mod.Suite, source: Path) -> tuple[ArmRun, ...]:
    arms = []
    for name in the_suite.arms:
        record = run.arms.get(name)
        if record is None:  # left out of the run (sandbench run --arm)
            arms.append(ArmRun(name, None, "absent", "not part of this run"))
            continue
        for kind in sorted({*KINDS, *(t.kind for t in the_suite.tasks)}):
            if kind not in record.tasks and kind not in record.not_attempted:
                raise InputError.bad_value(source, f"arms.{name}.spec.tasks.{kind}",
                                           "an argv or a not_attempted entry", None)
        if record.unavailable:
            arms.append(ArmRun(name, record, "unavailable", record.unavailable))
        elif record.refused:
            arms.append(ArmRun(name, record, "refused", record.refused))
        else:
            arms.append(ArmRun(name, record, "available", None))
    return tuple(arms)


def _rep(run: RunDoc, arm: str, cell_dir: Path, rep: int, graded: bool) -> Rep:
    """One record, checked to belong to this run and arm; the streams of the graded
    invocation (REP 0 of a task) must be beside it. Warm repeats and the index build are
    read from their records alone (timings, stdout size and digest)."""
    path = cell_dir / RECORD_NAME
    record = read_record(path)
    if record.arm != arm:
        raise InputError.bad_value(path, "arm", repr(arm), record.arm)
    if record.run_id != run.run_id:
        raise InputError.bad_value(path, "run_id", repr(run.run_id), record.run_id,
                                   fix="this cell belongs to another run")
    for stream in ("stdout", "stderr") if graded else ():
        info = getattr(record, stream)
        file = cell_dir / info.path
        if not file.is_file():
            raise InputError(f"{file} is missing (its record {path} names it)", file=str(file))
        size = file.stat().st_size
        if size != info.bytes_kept:
            raise InputError.bad_value(path, f"{stream}.bytes_kept", str(size), info.bytes_kept,
                                       fix=f"{file} is not the stream this record describes")
    return Rep(rep, cell_dir, record)


def _stream(rep: Rep, stream: str) -> bytes:
    info = getattr(rep.record, stream)
    file = rep.cell_dir / info.path
    data = file.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != info.sha256:
        raise InputError(f"{file}: sha256 {digest[:12]} is not the {info.sha256[:12]} its "
                         f"record holds", fix="the transcript was altered after the run",
                         file=str(file), key=f"{stream}.sha256")
    return data


def _optional_json(path: Path) -> Any:
    return read_json(path) if path.exists() else None


def load(run_dir: Path, suite_dir: Path) -> RunInputs:
    """Read and check every input of a score; raises InputError naming the first bad file."""
    run_dir = Path(run_dir)
    run = read_complete_run(run_dir)
    source = run_document.path(run_dir)
    the_suite = _load_suite(Path(suite_dir), run.suite.name)
    if the_suite.reps != run.suite.reps:
        raise InputError.bad_value(source, "suite.reps", str(the_suite.reps), run.suite.reps)
    arms = _arm_runs(run, the_suite, source)  # first: check_seal reads the arms' digests
    manifest, rows = check_seal(run, the_suite, source)
    reps: dict[tuple[str, str], tuple[Rep, ...]] = {}
    setup: dict[str, Rep | None] = {}
    state: dict[str, dict[str, Any] | None] = {}
    verdicts: dict[str, list[dict[str, Any]] | None] = {}
    for arm in arms:
        verdict = _optional_json(run_dir / "guards" / arm.name / "verdict.json")
        verdicts[arm.name] = verdict if isinstance(verdict, list) else None
        if arm.status != "available":
            setup[arm.name] = None
            state[arm.name] = None
            continue
        cells = run_dir / "cells" / arm.name
        setup_dir = cells / SETUP_CELL
        if arm.setup_argv is not None:
            setup[arm.name] = _rep(run, arm.name, setup_dir, 0, graded=False)
        else:
            setup[arm.name] = None
        state_file = run_dir / "arms" / arm.name / "state.json"
        data = read_json(state_file)
        for key in ("state_files", "state_bytes", "corpus_changes", "corpus_added_bytes"):
            _at(data, key, state_file)
        state[arm.name] = data
        for task in the_suite.tasks:
            if task.kind not in arm.tasks:
                continue
            reps[(arm.name, task.id)] = tuple(
                _rep(run, arm.name, cells / task.id / str(rep), rep, graded=rep == 0)
                for rep in range(the_suite.reps + 1))
    return RunInputs(run_dir=run_dir, run=run, suite=the_suite,
                     suite_text=(the_suite.path / "suite.toml").read_text(encoding="utf-8"),
                     manifest=manifest, manifest_rows=rows, arms=arms, reps=reps, setup=setup,
                     state=state, verdicts=verdicts)
