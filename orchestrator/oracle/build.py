"""`sandbench truth build SUITE`: run the suite's oracle in a sandbox like any arm's (its own
file systems, a private corpus copy, guards verified, no network, a verbatim transcript), decode
the index it wrote to stdout, and store the truth sets under the suite with the oracle's image
id, tool version and transcript hashes. The scorer never runs an oracle: it reads this file,
which the suite's seal covers.

Nothing is written under the suite unless every step held: an oracle that fails, an index
that does not decode, a task whose rule gives an empty set each stop with one error naming
the transcript or the task file, and the previous truth file stays as it was."""

from __future__ import annotations

from datetime import UTC, datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator import arms, corpus, log, suite
from orchestrator.run import rundir
from orchestrator.sandbox import one_sandbox
from orchestrator.engine import Engine
from orchestrator.errors import InputError, SandbenchError
from orchestrator.fsutil import atomic_write_json, sha256_file
from orchestrator.images import ImageLock
from orchestrator.oracle import scip, truth
from orchestrator.oracle.sources import PinnedSources
from orchestrator.sandbox.spec import default_user
from orchestrator.settings import Settings
from orchestrator.run.transcripts import RECORD_NAME, ExecRecord
from orchestrator.untrusted.errors import HostileInput

SCHEMA = "sandbench.truth/1"
INDEX_CELL = "index"

logger = log.get(__name__)


class OracleFailed(SandbenchError):
    """The oracle's command did not end well: the truth cannot come from it."""

    exit_code = 2


def oracle_of(settings: Settings, the_suite: suite.Suite) -> arms.ArmSpec:
    """The suite's oracle arm, checked to be one."""
    if the_suite.oracle is None:
        raise InputError.bad_value(the_suite.path / "suite.toml", "oracle",
                                   "an [oracle] table naming the oracle arm and its project",
                                   None)
    (spec,) = arms.load_arms(settings.arms_dir, [the_suite.oracle.arm])
    if spec.kind != "oracle" or spec.oracle is None:
        raise InputError.bad_value(the_suite.path / "suite.toml", "oracle.arm",
                                   "an arm of kind = \"oracle\"", the_suite.oracle.arm)
    return spec


def build(engine: Engine, settings: Settings, suite_name: str) -> Path:
    """Run the oracle and write suites/SUITE/truth/ORACLE.json; returns its path."""
    the_suite = suite.load_suite(settings.suites_dir, suite_name)
    spec = oracle_of(settings, the_suite)
    assert spec.oracle is not None and the_suite.oracle is not None
    lock_file = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock_file), the_suite.corpus, lock_file)
    corpus.verify_pristine(pin, settings)
    pristine = corpus.corpus_dir(settings, pin.id)
    suite.check_truth_at_pin(the_suite, pristine)
    assert pin.sha is not None
    sources = PinnedSources.at_pin(pristine, pin.sha)
    lock = ImageLock.load(settings.images_lock)
    lock.image_id(spec.image)
    run_id, run_dir = rundir.create(settings.runs_dir, f"truth-{the_suite.name}")
    log.configure(run_dir / "log.jsonl")
    argv = spec.oracle.render(the_suite.oracle.project)
    cell = run_dir / "cells" / spec.name / INDEX_CELL
    user = default_user()
    with one_sandbox.member(engine, settings, run_id, user) as one, \
            one_sandbox.arm_sandbox(one, settings, spec, run_id, run_dir, user,
                                    pristine=(pristine, pin)) as box:
        box.verify(run_dir / "guards" / spec.name)
        logger.info("oracle_index", oracle=spec.name, argv=argv)
        record = box.exec(argv, cell, timeout_s=spec.oracle.timeout_s)
    document = _truth(the_suite, spec, record, cell,
                      lock.images[spec.image].get("tool_version", ""), sources)
    document["run"] = {"run_id": run_id, "record_sha256": sha256_file(cell / RECORD_NAME),
                       "built_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    path = the_suite.truth_file()
    assert path is not None
    atomic_write_json(path, document)
    return path


def _truth(the_suite: suite.Suite, spec: arms.ArmSpec, record: ExecRecord, cell: Path,
           tool_version: str, sources: PinnedSources) -> dict[str, Any]:
    """The truth document from a transcript that ended well and kept every byte, or one
    error naming the oracle, the document and the reason: the index is hostile input, and
    whatever it makes the host's decoding or lexing do wrong is the oracle's failure."""
    _check_ended_well(record, cell, spec)
    assert spec.oracle is not None
    try:
        index = scip.rebased(scip.decode((cell / "stdout").read_bytes()), spec.oracle.root)
        return truth_document(the_suite, spec, index, record, tool_version, sources.read)
    except SandbenchError:
        raise
    except HostileInput as exc:
        raise _refused(spec, cell, exc) from exc
    except Exception as exc:  # noqa: BLE001 - any failure on the index is the oracle's
        raise _refused(spec, cell, HostileInput(
            "unprocessable", f"{type(exc).__name__}: {str(exc)[:400]}")) from exc


def _check_ended_well(record: ExecRecord, cell: Path, spec: arms.ArmSpec) -> None:
    """Refuse a transcript that did not end well or lost bytes; the oracle's stderr goes
    into the error as it is (the error printer escapes it)."""
    stderr_tail = (cell / "stderr").read_bytes()[-600:].decode("utf-8", "replace").strip()
    if record.outcome != "ok":
        raise OracleFailed(f"oracle {spec.name!r} ended {record.outcome} (exit "
                           f"{record.exit.get('exit_code')}, signal {record.exit.get('signal')})",
                           why=stderr_tail or None, fix=f"see its transcript {cell}",
                           file=str(cell))
    if record.stdout.truncated:
        raise OracleFailed(f"oracle {spec.name!r} wrote {record.stdout.bytes_total} bytes, more "
                           f"than the transcript keeps ({record.stdout.bytes_kept})",
                           fix="index a smaller project (the suite's [oracle] project)",
                           file=str(cell / "stdout"))


def _refused(spec: arms.ArmSpec, cell: Path, exc: HostileInput) -> OracleFailed:
    """The one error of an index the host refuses: the oracle, the document, the reason."""
    document = exc.data.get("document")
    verdict = ("does not decode as SCIP" if exc.kind in ("malformed", "too-large")
               else f"is refused ({exc.kind})")
    return OracleFailed(f"{cell / 'stdout'}: the index of oracle {spec.name!r} {verdict}"
                        + (f", document {document!r}" if document else ""),
                        why=str(exc), fix=f"see its transcript {cell}; nothing was written",
                        file=str(cell / "stdout"), oracle=spec.name, kind=exc.kind,
                        document=document)


def _check_edge_tasks(the_suite: suite.Suite, spec: arms.ArmSpec,
                      document: dict[str, Any]) -> None:
    """An edge task needs the Rust edges block, and a population to be graded against."""
    from orchestrator.kinds import EDGE_KINDS
    from orchestrator.score import edges

    for task in the_suite.tasks:
        if task.kind not in EDGE_KINDS:
            continue
        if "rust_edges" not in document:
            raise InputError.bad_value(the_suite.path / "suite.toml", "oracle.arm",
                                       f"a Rust oracle (task {task.id} is {task.kind})",
                                       spec.name)
        population = edges.EdgeTruth.of(document["rust_edges"]).population()
        if not population:
            raise InputError(f"{task.path}: the oracle's truth for this task is empty",
                             why="the index holds no path call to a fn defined in the corpus",
                             fix="check the suite's [oracle] project", file=str(task.path))


def truth_document(the_suite: suite.Suite, spec: arms.ArmSpec, index: scip.Index,
                   record: ExecRecord, tool_version: str,
                   read_source: Callable[[str], str] | None = None) -> dict[str, Any]:
    """Every truth set the oracle gives the suite's tasks of its language, by the rules in
    orchestrator/oracle/truth.py, with where each came from."""
    assert spec.oracle is not None and the_suite.oracle is not None
    defs = truth.Definitions.of(index)
    tasks: dict[str, Any] = {}
    for task in the_suite.tasks:
        if task.language != spec.oracle.language or task.kind not in ("references", "impact"):
            continue
        try:
            if task.kind == "references":
                core, symbols = truth.references(index, defs, task.input["symbol"],
                                                 suite.LANGUAGES[task.language])
                tasks[task.id] = {"kind": task.kind, "core": core, "symbols": symbols}
            else:
                graded, defined = truth.dependents(index, defs, task.input["seed"])
                tasks[task.id] = {"kind": task.kind, "graded": graded,
                                  "seed_symbols": defined}
        except truth.EmptyTruth as exc:
            raise InputError(f"{task.path}: the oracle's truth for this task is empty",
                             why=str(exc), fix="check the task's input against the corpus, or "
                             "drop the task from the oracle's truth", file=str(task.path)) from exc
    document: dict[str, Any] = {
        "schema": SCHEMA, "suite": the_suite.name,
        "oracle": {"arm": spec.name, "image": spec.image, "image_id": record.image_id,
                   "tool_version": tool_version,
                   "index_tool": f"{index.tool_name} {index.tool_version}",
                   "argv": record.argv, "project": the_suite.oracle.project},
        "transcript": {"stdout_sha256": record.stdout.sha256,
                       "stdout_bytes": record.stdout.bytes_total,
                       "stderr_sha256": record.stderr.sha256,
                       "wall_ns": record.timing.get("wall_ns"),
                       "maxrss_kb": record.timing.get("maxrss_kb")},
        "resolution": truth.resolution(index, defs),
        "rules": truth.RULES, "tasks": tasks}
    if the_suite.oracle.edges:
        document["edges"] = truth.edges(index, defs)
        if spec.oracle.language == "rust" and read_source is not None:
            # The Rust edges family: every reference's site class, the #[test] scan.
            document["rust_edges"] = truth.rust_sites(index, defs, read_source)
    _check_edge_tasks(the_suite, spec, document)
    return document
