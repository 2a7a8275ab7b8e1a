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
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import suite as suite_mod
from orchestrator.errors import InputError
from orchestrator.fsutil import read_json, sha256_file
from orchestrator.kinds import KINDS
from orchestrator.settings import PACKAGE_DIR
from orchestrator.transcripts import RECORD_NAME, ExecRecord, read_record

RUN_SCHEMA = "sandbench.run/1"
SETUP_CELL = "_setup"
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
    name: str
    data: dict[str, Any]  # run.json arms[name]
    status: str  # "available" | "unavailable" | "refused" | "absent" (not in this run)
    reason: str | None

    @property
    def spec(self) -> dict[str, Any]:
        """The arm spec the run recorded; an absent arm has none (it attempts nothing)."""
        spec: dict[str, Any] = self.data.get("spec") or {
            "parser": "", "tasks": {}, "not_attempted": {}, "env": {}, "setup": None}
        return spec


@dataclass(frozen=True)
class RunInputs:
    run_dir: Path
    run: dict[str, Any]
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


def _at(data: Any, dotted: str, kinds: type | tuple[type, ...] | None, source: Path) -> Any:
    """data[a][b]... for "a.b", or an error naming the file and the key."""
    current = data
    for part in dotted.split("."):
        if not isinstance(current, dict) or part not in current:
            raise InputError.bad_value(source, dotted, "present", None)
        current = current[part]
    if kinds is not None:
        names = kinds if isinstance(kinds, tuple) else (kinds,)
        if not isinstance(current, names) or isinstance(current, bool) and bool not in names:
            raise InputError.bad_value(source, dotted, " or ".join(k.__name__ for k in names),
                                       current)
    return current


# How commands reached the containers; a run recorded before the resident executor has no
# exec_path and used docker exec.
EXEC_PATHS = ("resident", "docker-exec")
RUN_KEYS: tuple[tuple[str, type | tuple[type, ...] | None], ...] = (
    ("run_id", str), ("date", str), ("status", str),
    ("suite.name", str), ("suite.manifest_sha256", str), ("suite.reps", int),
    ("corpus.id", str), ("corpus.repo", str), ("corpus.sha", str),
    ("corpus.tracked_files", int), ("corpus.languages", dict),
    ("arms", dict), ("host.arch", str), ("host.cores", int), ("host.memory_bytes", int),
    ("engine", dict), ("deviations", list), ("resumes", list),
)
ARM_KEYS: tuple[tuple[str, type | tuple[type, ...] | None], ...] = (
    ("image", str), ("tool_version", str), ("spec", dict), ("spec.parser", str),
    ("spec.tasks", dict), ("spec.not_attempted", dict), ("spec.env", dict),
    ("spec_sha256", str),
)


def read_run_json(run_dir: Path) -> dict[str, Any]:
    source = run_dir / "run.json"
    if not run_dir.is_dir():
        raise InputError(f"{run_dir} is not a directory", fix="give a run directory "
                         "(bench/runs/RUN_ID)", file=str(run_dir))
    run = read_json(source)
    if not isinstance(run, dict):
        raise InputError.bad_value(source, "(top level)", "an object", type(run).__name__)
    if run.get("schema") != RUN_SCHEMA:
        raise InputError.bad_value(source, "schema", RUN_SCHEMA, run.get("schema"))
    for key, kinds in RUN_KEYS:
        _at(run, key, kinds, source)
    if run["status"] != "complete":
        raise InputError.bad_value(source, "status", "'complete'", run["status"],
                                   fix="finish the run first: sandbench run SUITE --resume "
                                       f"{run_dir}")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", run["date"]):
        raise InputError.bad_value(source, "date", "YYYY-MM-DD", run["date"])
    if run.get("exec_path", EXEC_PATHS[1]) not in EXEC_PATHS:
        raise InputError.bad_value(source, "exec_path", f"one of {list(EXEC_PATHS)}",
                                   run["exec_path"])
    return run


def _load_suite(suite_dir: Path, name: str) -> suite_mod.Suite:
    if suite_dir.name != name:
        raise InputError(f"{suite_dir}: the run was made with suite {name!r}",
                         fix=f"give the sealed suite directory suites/{name}",
                         file=str(suite_dir))
    return suite_mod.load_suite(suite_dir.parent, name)


def check_seal(run: dict[str, Any], the_suite: suite_mod.Suite,
               run_json: Path) -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    """The suite must be the one the run sealed, byte for byte; the scorer's own sources may
    have changed since (a scorer fix), and each such file is reported, never hidden."""
    path = the_suite.path / suite_mod.MANIFEST
    if not path.is_file():
        raise InputError(f"{path} is missing: suite {the_suite.name!r} is not sealed",
                         file=str(path))
    found = hashlib.sha256(path.read_bytes()).hexdigest()
    if found != run["suite"]["manifest_sha256"]:
        raise InputError(f"{path}: the suite's seal is not the run's (sha256 {found[:12]}, "
                         f"the run recorded {run['suite']['manifest_sha256'][:12]})",
                         fix="score with the suite directory exactly as it was sealed for "
                             "this run", file=str(path), key="suite.manifest_sha256",
                         expected=run["suite"]["manifest_sha256"], found=found)
    manifest = read_json(path)
    inputs = manifest.get("inputs") if isinstance(manifest, dict) else None
    if not isinstance(inputs, dict):
        raise InputError.bad_value(path, "inputs", "an object of path -> sha256", inputs)
    pin = {"id": run["corpus"]["id"], "repo": run["corpus"]["repo"], "sha": run["corpus"]["sha"]}
    if manifest.get("corpus") != pin:
        raise InputError.bad_value(path, "corpus", json.dumps(pin, sort_keys=True),
                                   manifest.get("corpus"))
    prefix = f"suites/{the_suite.name}/"
    rows: list[dict[str, Any]] = []
    suite_files = {prefix + p.relative_to(the_suite.path).as_posix()
                   for p in (the_suite.path / "tasks").glob("*.toml")}
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
            if arm not in run["arms"]:
                rows.append({"file": key, "kind": "arm", "sealed_sha256": sealed,
                             "found_sha256": None, "status": "not-run"})
                continue
            recorded = run["arms"][arm].get("spec_sha256")
            if recorded != sealed:
                raise InputError.bad_value(run_json, f"arms.{arm}.spec_sha256", str(sealed),
                                           recorded, fix=f"the run's arm spec is not the "
                                           f"sealed {key}")
            rows.append({"file": key, "kind": "arm", "sealed_sha256": sealed,
                         "found_sha256": recorded, "status": "match"})
        else:
            rows.append(_scorer_row(key, sealed))
    # The scorer's sources now for the parsers the run's arms recorded; any not sealed is new.
    specs = [arm.get("spec") for arm in run["arms"].values() if isinstance(arm, dict)]
    recorded = {spec["parser"] for spec in specs
                if isinstance(spec, dict) and isinstance(spec.get("parser"), str)}
    for file in suite_mod.scorer_sources(SOURCE_ROOT, recorded):
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


def _arm_runs(run: dict[str, Any], the_suite: suite_mod.Suite,
              source: Path) -> tuple[ArmRun, ...]:
    arms = []
    for name in the_suite.arms:
        if name not in run["arms"]:  # left out of the run (sandbench run --arm)
            arms.append(ArmRun(name, {}, "absent", "not part of this run"))
            continue
        data = run["arms"][name]
        if not isinstance(data, dict):
            raise InputError.bad_value(source, f"arms.{name}", "an object", data)
        for key, kinds in ARM_KEYS:
            _at(run, f"arms.{name}.{key}", kinds, source)
        spec = data["spec"]
        for kind in sorted({*KINDS, *(t.kind for t in the_suite.tasks)}):
            if kind not in spec["tasks"] and kind not in spec["not_attempted"]:
                raise InputError.bad_value(source, f"arms.{name}.spec.tasks.{kind}",
                                           "an argv or a not_attempted entry", None)
        if data.get("unavailable"):
            arms.append(ArmRun(name, data, "unavailable", str(data["unavailable"])))
        elif data.get("refused"):
            arms.append(ArmRun(name, data, "refused", str(data["refused"])))
        else:
            arms.append(ArmRun(name, data, "available", None))
    return tuple(arms)


def _rep(run: dict[str, Any], arm: str, cell_dir: Path, rep: int, graded: bool) -> Rep:
    """One record, checked to belong to this run and arm; the streams of the graded
    invocation (REP 0 of a task) must be beside it. Warm repeats and the index build are
    read from their records alone (timings, stdout size and digest)."""
    path = cell_dir / RECORD_NAME
    record = read_record(path)
    if record.arm != arm:
        raise InputError.bad_value(path, "arm", repr(arm), record.arm)
    if record.run_id != run["run_id"]:
        raise InputError.bad_value(path, "run_id", repr(run["run_id"]), record.run_id,
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
    run = read_run_json(run_dir)
    source = run_dir / "run.json"
    the_suite = _load_suite(Path(suite_dir), run["suite"]["name"])
    if the_suite.reps != run["suite"]["reps"]:
        raise InputError.bad_value(source, "suite.reps", str(the_suite.reps),
                                   run["suite"]["reps"])
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
        if arm.spec.get("setup") is not None:
            setup[arm.name] = _rep(run, arm.name, setup_dir, 0, graded=False)
        else:
            setup[arm.name] = None
        state_file = run_dir / "arms" / arm.name / "state.json"
        data = read_json(state_file)
        for key in ("state_files", "state_bytes", "corpus_changes", "corpus_added_bytes"):
            _at(data, key, None, state_file)
        state[arm.name] = data
        for task in the_suite.tasks:
            if task.kind not in arm.spec["tasks"]:
                continue
            reps[(arm.name, task.id)] = tuple(
                _rep(run, arm.name, cells / task.id / str(rep), rep, graded=rep == 0)
                for rep in range(the_suite.reps + 1))
    return RunInputs(run_dir=run_dir, run=run, suite=the_suite,
                     suite_text=(the_suite.path / "suite.toml").read_text(encoding="utf-8"),
                     manifest=manifest, manifest_rows=rows, arms=arms, reps=reps, setup=setup,
                     state=state, verdicts=verdicts)
