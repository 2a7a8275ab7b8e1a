"""RUN_DIR/run.json, the run document: what a run recorded about itself, typed, with its one
reader and its one writer. The run writes it, the scorer, the k8s export and a resume read it.

The reader treats the file as damaged until shown otherwise (it may be a copy from another
machine): one InputError naming the file, the key, what was expected and what was found,
checked against orchestrator/schemas/run.schema.json before a field is read. The writer
writes it atomically, in the one JSON spelling sandbench uses; a document read and written
again is the same bytes, so a run made before this module still resumes and scores.
"""

from __future__ import annotations

import dataclasses
import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from orchestrator import __version__, log, suite
from orchestrator.errors import InputError
from orchestrator.fsutil import atomic_write_json, read_json, sha256_file
from orchestrator.run.engines import EngineRecord, Preparation, engine_record
from orchestrator.sandbox.spec import DOCKER_EXEC
from orchestrator.sandbox.shared_checks import check_schema

if TYPE_CHECKING:
    from orchestrator.arms import ArmSpec
    from orchestrator.corpus import CorpusPin, PristineInfo
    from orchestrator.images import ImageLock

RUN_SCHEMA = "sandbench.run/1"
RUN_JSON = "run.json"
SCHEMA_FILE = "run.schema.json"
SETUP_CELL = "_setup"  # the cell directory of an arm's index build, beside its tasks'
RUNNING, COMPLETE, REFUSED_ARMS = "running", "complete", "refused-arms"
INTERRUPTED, FAILED, PRISTINE_CHANGED = "interrupted", "failed", "pristine-changed"
STATUSES = (RUNNING, COMPLETE, REFUSED_ARMS, INTERRUPTED, FAILED, PRISTINE_CHANGED)
FINISHED = (COMPLETE, REFUSED_ARMS)  # a run that ended with every cell it could run: scored

logger = log.get(__name__)


def now() -> str:
    """A timestamp as run.json holds them (UTC, to the second)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


@dataclass
class SuiteRecord:
    """The suite the run was made with, as sealed: the scorer checks the seal against it."""

    name: str
    manifest_sha256: str
    reps: int
    timeout_s: float
    baseline: str | None
    precision_cap: int
    top_k: int
    bands: dict[str, float]


@dataclass
class CorpusRecord:
    id: str
    repo: str
    sha: str
    tracked_files: int
    languages: dict[str, int]
    pristine_digest_before: str
    pristine_digest_after: str | None = None  # set when the run ends

    @property
    def pin(self) -> dict[str, str]:
        """The pin as a suite's manifest holds it."""
        return {"id": self.id, "repo": self.repo, "sha": self.sha}


@dataclass
class ArmRecord:
    """One arm of the run: its image and spec, and once it ran, where and with what end
    (`engine`, `state_bytes`, `refused`, `runtime`: absent, None, until the run sets them)."""

    image: str
    image_id: str | None
    tool_version: str
    spec_sha256: str
    spec: dict[str, Any]  # arms.ArmSpec.to_json(); the schema types what the scorer reads
    unavailable: str | None
    install_seconds: float | None
    install_build_jobs: int
    image_size_bytes: int | None
    artifact: dict[str, str] | None  # a supplied binary: its name, path and sha256 (images.lock)
    engine: str | None = None
    state_bytes: int | None = None
    refused: str | None = None
    # Its container runtime (runtimes.py), set as the run begins; older runs ran runc.
    runtime: str | None = None

    def ended(self, *, state_bytes: int | None = None, refused: str | None = None) -> None:
        """How the arm's part ended: the bytes it left, or why it was refused (None: it ran)."""
        self.state_bytes = state_bytes if state_bytes is not None else self.state_bytes
        self.refused = refused

    @property
    def parser(self) -> str:
        return str(self.spec["parser"])

    @property
    def description(self) -> str:
        return str(self.spec.get("description", ""))

    @property
    def env(self) -> dict[str, str]:
        return dict(self.spec["env"])

    @property
    def tasks(self) -> dict[str, list[str]]:
        """Kind -> argv template, for the kinds the arm attempts."""
        return dict(self.spec["tasks"])

    @property
    def not_attempted(self) -> dict[str, dict[str, str]]:
        """Kind -> {reason, source} the arm quotes for a kind it cannot express."""
        return dict(self.spec["not_attempted"])

    @property
    def setup_argv(self) -> list[str] | None:
        setup = self.spec.get("setup")
        return None if setup is None else list(setup["argv"])


@dataclass
class EngineVersion:
    """The default engine's versions (`docker version`)."""

    version: str | None
    api_version: str | None
    kernel: str | None
    os: str | None


@dataclass
class Host:
    arch: str
    cores: int
    memory_bytes: int
    os: str

    @classmethod
    def this(cls) -> Host:
        """The host the run is made on (its name is never recorded)."""
        mem_kib = 0
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemTotal:"):
                    mem_kib = int(line.split()[1])
        except OSError:
            pass
        return cls(platform.machine(), os.cpu_count() or 0, mem_kib * 1024, platform.system())


@dataclass
class RunDoc:
    """run.json, typed. `engines`, `exec_path` and `bench_root` are None in a run recorded
    before they were; `finished_at` is None until the run completes."""

    run_id: str
    sandbench_version: str
    date: str
    started_at: str
    status: str
    suite: SuiteRecord
    corpus: CorpusRecord
    arms: dict[str, ArmRecord]
    engine: EngineVersion
    host: Host
    user: str
    deviations: list[str]
    resumes: list[str] = field(default_factory=list)
    engines: dict[str, EngineRecord] | None = None
    bench_root: str | None = None
    exec_path: str | None = None
    finished_at: str | None = None
    schema: str = RUN_SCHEMA

    def engine_prepared(self, facts: dict[str, Any], refused: str | None,
                        imported: dict[str, float], placed: Mapping[str, str | None]) -> None:
        """An engine of the run made ready (or refused); `placed` is what its placement
        records of where the run lives there (placement.engine_facts: its name, and where the
        engine made the file systems, the work volume and helper path)."""
        record = EngineRecord.from_facts(facts)
        record.preparation = Preparation(refused, imported, placed.get("placement"),
                                         placed.get("work_volume"), placed.get("helper_path"))
        self.engines = {**(self.engines or {}), record.id: record}

    def resumed(self, facts: Sequence[dict[str, Any]]) -> None:
        """A resume of this run begins, on the engines whose facts are given."""
        self.resumes.append(now())
        self.status = RUNNING
        self.engines = {**(self.engines or {}),
                        **{f["id"]: EngineRecord.from_facts(f) for f in facts}}

    def finished(self, pristine_digest_after: str) -> bool:
        """The run's end if the pristine copy is as it was before it: complete, or refused-arms
        when an arm was refused; else pristine-changed, and False."""
        self.corpus.pristine_digest_after = pristine_digest_after
        if pristine_digest_after != self.corpus.pristine_digest_before:
            self.status = PRISTINE_CHANGED
            return False
        self.status = REFUSED_ARMS if self.refused_arms else COMPLETE
        self.finished_at = now()
        return True

    @property
    def refused_arms(self) -> dict[str, str]:  # arm -> why its guards refused it
        return {name: arm.refused for name, arm in self.arms.items() if arm.refused}

    @property
    def exec_path_used(self) -> str:
        """How commands reached the containers; a run recorded before the resident executor
        has no exec_path and used docker exec."""
        return self.exec_path or DOCKER_EXEC

    def to_json(self) -> dict[str, Any]:
        """The document as run.json holds it: optional keys only when set."""
        out: dict[str, Any] = {
            "schema": self.schema, "run_id": self.run_id,
            "sandbench_version": self.sandbench_version, "date": self.date,
            "started_at": self.started_at, "status": self.status,
            "suite": dataclasses.asdict(self.suite), "corpus": dataclasses.asdict(self.corpus),
            "arms": {name: _arm_json(a) for name, a in self.arms.items()},
            "engine": dataclasses.asdict(self.engine), "host": dataclasses.asdict(self.host),
            "user": self.user, "deviations": list(self.deviations),
            "resumes": list(self.resumes)}
        if self.engines is not None:
            out["engines"] = {k: e.to_json() for k, e in self.engines.items()}
        for key in ("bench_root", "exec_path", "finished_at"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


_ARM_SET_LATER = ("engine", "state_bytes", "refused", "runtime")


def _arm_json(arm: ArmRecord) -> dict[str, Any]:
    out = dataclasses.asdict(arm)
    for key in _ARM_SET_LATER:
        if out[key] is None:
            del out[key]
    return out


def from_json(data: Any, source: Path) -> RunDoc:
    """The typed document from parsed JSON: checked against the schema first, so that every
    field below is there and of its type."""
    check_schema(source, data, SCHEMA_FILE)
    engines = data.get("engines")
    return RunDoc(
        schema=data["schema"], run_id=data["run_id"],
        sandbench_version=data["sandbench_version"], date=data["date"],
        started_at=data["started_at"], status=data["status"],
        suite=SuiteRecord(**data["suite"]), corpus=CorpusRecord(**data["corpus"]),
        arms={name: ArmRecord(**arm) for name, arm in data["arms"].items()},
        engine=EngineVersion(**data["engine"]), host=Host(**data["host"]), user=data["user"],
        deviations=list(data["deviations"]), resumes=list(data["resumes"]),
        engines=None if engines is None else {k: engine_record(v) for k, v in engines.items()},
        bench_root=data.get("bench_root"), exec_path=data.get("exec_path"),
        finished_at=data.get("finished_at"))


def path(run_dir: Path) -> Path:
    return Path(run_dir) / RUN_JSON


def read(run_dir: Path) -> RunDoc:
    """RUN_DIR/run.json, checked and typed; an InputError naming the file and key if not."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError(f"{run_dir} is not a directory", fix="give a run directory "
                         "(bench/runs/RUN_ID)", file=str(run_dir))
    source = path(run_dir)
    return from_json(read_json(source), source)


def write(run_dir: Path, doc: RunDoc) -> None:
    """RUN_DIR/run.json, atomically: a reader sees the old document or the new one."""
    atomic_write_json(path(run_dir), doc.to_json())


def write_status(run_dir: Path, doc: RunDoc, status: str) -> None:
    """Best effort on the way out of a run that stopped: a full disk must not hide the error
    that stopped it (run.json keeps its last complete version, and a resume does not depend
    on the status)."""
    doc.status = status
    try:
        write(run_dir, doc)
    except OSError as exc:
        logger.error("run_json_not_updated", error=str(exc))


# -- a new run's document, and the checks of a resumed one ---------------------------------

class PlannedArm(Protocol):
    """An arm as the run planned it (run.ArmPlan)."""

    @property
    def name(self) -> str: ...
    @property
    def spec(self) -> ArmSpec: ...
    @property
    def image_id(self) -> str | None: ...
    @property
    def tool_version(self) -> str: ...
    @property
    def unavailable(self) -> str | None: ...


def arm_record(arm: PlannedArm, lock: ImageLock) -> ArmRecord:
    """An arm as the run begins it: its spec and the image the lock says it was built as."""
    entry = lock.images.get(arm.spec.image, {})
    return ArmRecord(image=arm.spec.image, image_id=arm.image_id, tool_version=arm.tool_version,
                     spec_sha256=sha256_file(arm.spec.path), spec=arm.spec.to_json(),
                     unavailable=arm.unavailable, install_seconds=entry.get("build_seconds"),
                     install_build_jobs=entry.get("build_jobs", 1),
                     image_size_bytes=entry.get("size_bytes"), artifact=entry.get("artifact"))


def suite_deviations(the_suite: suite.Suite) -> list[str]:
    """What the suite's declared choices leave out, said in every run of it."""
    said = [f"metric family {family} not attempted: {reason} ({source})"
            for family, (reason, source) in the_suite.families_not_attempted.items()]
    if the_suite.test_files == "exclude":
        said.append("truth of locate and e2e-retrieval leaves out the test files the fix "
                    "touched (suite.toml test_files = \"exclude\")")
    return said


def new(*, run_id: str, the_suite: suite.Suite, planned: Sequence[PlannedArm],
        pin: CorpusPin, info: PristineInfo, pristine_digest: str,
        engine_version: Mapping[str, Any], engines: Sequence[dict[str, Any]], lock: ImageLock,
        user: str, bench_root: Path, exec_path: str) -> RunDoc:
    """A new run's document, every deviation it has from its start disclosed."""
    deviations = [f"arm {a.name} not run: {a.unavailable}" for a in planned if a.unavailable]
    deviations += suite_deviations(the_suite)
    if pin.status != "registered":
        deviations.insert(0, f"corpus {pin.id} ({pin.repo} @ {pin.sha}) is a proposed "
                             f"substitute, not a registered corpus: {pin.note}")
    assert pin.sha is not None  # a pin without one cannot be fetched, so never run
    return RunDoc(
        run_id=run_id, sandbench_version=__version__, date=today(), started_at=now(),
        status=RUNNING,
        suite=SuiteRecord(name=the_suite.name, manifest_sha256=suite.manifest_sha256(the_suite),
                          reps=the_suite.reps, timeout_s=the_suite.timeout_s,
                          baseline=the_suite.baseline, precision_cap=the_suite.precision_cap,
                          top_k=the_suite.top_k, bands=the_suite.bands),
        corpus=CorpusRecord(id=pin.id, repo=pin.repo, sha=pin.sha,
                            tracked_files=info.tracked_files, languages=info.languages,
                            pristine_digest_before=pristine_digest),
        arms={a.name: arm_record(a, lock) for a in planned},
        engine=EngineVersion(*(engine_version.get(key) for key in
                               ("Version", "ApiVersion", "KernelVersion", "Os"))),
        engines={f["id"]: EngineRecord.from_facts(f) for f in engines},
        host=Host.this(), user=user, deviations=deviations, resumes=[],
        bench_root=str(bench_root), exec_path=exec_path)


def check_resumable(doc: RunDoc, run_dir: Path, the_suite: suite.Suite,
                    planned: Sequence[PlannedArm]) -> None:
    """A resume continues the same run or refuses: same seal, arm specs and image ids."""
    source = path(run_dir)
    sealed = suite.manifest_sha256(the_suite)
    if doc.suite.manifest_sha256 != sealed:
        raise InputError.bad_value(source, "suite.manifest_sha256", sealed,
                                   doc.suite.manifest_sha256,
                                   fix="the suite's seal changed since the run began; start "
                                       "a new run")
    for a in planned:
        was = doc.arms.get(a.name)
        if was is None:
            raise InputError.bad_value(source, f"arms.{a.name}", "present", None)
        if was.spec_sha256 != sha256_file(a.spec.path):
            raise InputError.bad_value(source, f"arms.{a.name}.spec_sha256",
                                       sha256_file(a.spec.path), was.spec_sha256,
                                       fix=f"{a.spec.path} changed since the run began")
        if was.image_id != a.image_id:
            raise InputError.bad_value(source, f"arms.{a.name}.image_id", str(a.image_id),
                                       was.image_id,
                                       fix=f"image {a.spec.image!r} was rebuilt since the run "
                                           "began; start a new run")
