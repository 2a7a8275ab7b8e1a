"""The run document (orchestrator/run/document.py): a run.json written by the run loads typed and
is written again byte for byte; a damaged one is refused with one error naming the file, the
key, what was expected and what was found."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.run import document as run_document
from orchestrator.errors import InputError
from orchestrator.fsutil import canonical_json
from orchestrator.sandbox.spec import EXEC_PATHS
from orchestrator.sandbox.shared_checks import load_schema

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"
GOLDEN_BYTES = (GOLDEN / "run.json").read_bytes()


def _golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(GOLDEN_BYTES)
    return data


def _write(tmp_path: Path, data: Any) -> Path:
    (tmp_path / "run.json").write_text(json.dumps(data))
    return tmp_path


def test_the_golden_run_json_round_trips_byte_for_byte(tmp_path: Path) -> None:
    doc = run_document.read(GOLDEN)
    assert canonical_json(doc.to_json()).encode() == GOLDEN_BYTES
    run_document.write(tmp_path, doc)
    assert (tmp_path / "run.json").read_bytes() == GOLDEN_BYTES


def test_the_schema_names_what_the_code_defines() -> None:
    """The schema is data: its constants are checked against the one definition in code."""
    schema = load_schema(run_document.SCHEMA_FILE)["properties"]
    assert schema["schema"]["const"] == run_document.RUN_SCHEMA
    assert tuple(schema["status"]["enum"]) == run_document.STATUSES
    assert tuple(schema["exec_path"]["enum"]) == EXEC_PATHS


def test_the_golden_run_reads_typed() -> None:
    doc = run_document.read(GOLDEN)
    assert doc.status == run_document.COMPLETE and doc.suite.name == "demo"
    assert doc.arms["rg"].engine is not None and doc.arms["rg"].state_bytes == 0
    assert doc.arms["devscout"].engine is None and doc.arms["devscout"].unavailable
    assert doc.arms["rg"].parser == "rg" and "references" in doc.arms["rg"].tasks
    assert doc.corpus.pin == {"id": "demo", "repo": doc.corpus.repo, "sha": doc.corpus.sha}
    assert doc.exec_path_used == "resident"


def test_keys_a_run_sets_later_or_never_had_stay_absent(tmp_path: Path) -> None:
    """An unfinished run (no finished_at), an arm not yet run (no engine, state_bytes), a run
    made before engines, exec_path and bench_root were recorded: each written back as it was."""
    data = _golden()
    for key in ("finished_at", "engines", "exec_path", "bench_root"):
        del data[key]
    data["status"] = run_document.RUNNING
    for key in ("engine", "state_bytes"):
        del data["arms"]["rg"][key]
    data["arms"]["ctags"]["refused"] = "network_mode: expected none"
    data["arms"]["devscout"]["artifact"] = {"name": "devscout", "path": "/x/devscout",
                                            "sha256": "a" * 64}
    doc = run_document.read(_write(tmp_path, data))
    assert doc.exec_path_used == "docker-exec" and doc.engines is None
    assert canonical_json(doc.to_json()) == canonical_json(data)


def test_a_multi_engine_preparation_round_trips(tmp_path: Path) -> None:
    data = _golden()
    engine = next(iter(data["engines"].values()))
    other = {**engine, "id": "engine-000000000002", "url": "ssh://b", "on_this_host": False,
             "refused": None, "images_imported_s": {"rg": 1.5}, "placement": "engine-made",
             "work_volume": "w", "helper_path": "/opt/h"}
    data["engines"][other["id"]] = other
    data["engines"][engine["id"]] = {**engine, "refused": "guards failed",
                                     "images_imported_s": {}}
    doc = run_document.read(_write(tmp_path, data))
    assert canonical_json(doc.to_json()) == canonical_json(data)


def test_the_document_is_changed_only_through_its_methods() -> None:
    doc = run_document.read(GOLDEN)
    doc.status, doc.finished_at = run_document.RUNNING, None
    doc.resumed([])
    assert doc.status == run_document.RUNNING and len(doc.resumes) == 1
    assert not doc.finished("0" * 64) and doc.status == run_document.PRISTINE_CHANGED
    assert doc.finished_at is None
    assert doc.finished(doc.corpus.pristine_digest_before)
    assert doc.status == run_document.COMPLETE and doc.finished_at is not None
    doc.arms["rg"].ended(refused="why")
    assert doc.arms["rg"].refused == "why" and doc.arms["rg"].state_bytes == 0
    assert doc.finished(doc.corpus.pristine_digest_before)
    assert doc.status == run_document.REFUSED_ARMS and doc.refused_arms == {"rg": "why"}
    doc.arms["rg"].ended(state_bytes=7)  # a resume verified it and it ran
    assert doc.arms["rg"].refused is None and doc.arms["rg"].state_bytes == 7
    assert doc.finished(doc.corpus.pristine_digest_before)
    assert doc.status == run_document.COMPLETE and doc.refused_arms == {}


DAMAGE: list[tuple[str, tuple[str, ...], Any, str]] = [
    # (name, where, new value (... = delete), the key the error must name)
    ("schema", ("schema",), "sandbench.run/2", "schema"),
    ("no run_id", ("run_id",), ..., "run_id"),
    ("status", ("status",), "Complete", "status"),
    ("date", ("date",), "2026-12-2", "date"),
    ("reps as float", ("suite", "reps"), 3.0, "suite.reps"),
    ("no corpus sha", ("corpus", "sha"), ..., "corpus.sha"),
    ("cores as bool", ("host", "cores"), True, "host.cores"),
    ("arm not an object", ("arms", "rg"), 5, "arms.rg"),
    ("arm without image", ("arms", "rg", "image"), ..., "arms.rg.image"),
    ("arm image null", ("arms", "rg", "image"), None, "arms.rg.image"),
    ("parser missing", ("arms", "rg", "spec", "parser"), ..., "arms.rg.spec.parser"),
    ("tasks wrong", ("arms", "rg", "spec", "tasks"), [], "arms.rg.spec.tasks"),
    ("unknown key", ("surprise",), 1, "surprise"),
    ("exec path", ("exec_path",), "ssh", "exec_path"),
    ("artifact as text", ("arms", "rg", "artifact"), "devscout", "arms.rg.artifact"),
    ("engine facts", ("engines", "ENGINE", "cores"), "2", "engines.ENGINE.cores"),
]


@pytest.mark.parametrize(("where", "value", "key"), [d[1:] for d in DAMAGE],
                         ids=[d[0] for d in DAMAGE])
def test_a_damaged_run_json_is_one_named_error(tmp_path: Path, where: tuple[str, ...],
                                               value: Any, key: str) -> None:
    data = _golden()
    engine = next(iter(data["engines"]))  # the golden run's one engine, whichever it was
    where = tuple(engine if part == "ENGINE" else part for part in where)
    key = key.replace("ENGINE", engine)
    holder = data
    for part in where[:-1]:
        holder = holder[part]
    found = copy.deepcopy(holder.get(where[-1]))
    if value is ...:
        del holder[where[-1]]
    else:
        holder[where[-1]] = value
    with pytest.raises(InputError) as err:
        run_document.read(_write(tmp_path, data))
    assert err.value.data["file"] == str(tmp_path / "run.json")
    assert err.value.data["key"] == key
    assert err.value.data["expected"]
    if value is ...:
        assert err.value.data["found"] is None, found
    elif key == "surprise":  # an unknown key is named as what was found
        assert err.value.data["found"] == "surprise"
    else:
        assert err.value.data["found"] == value


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '"run"'])
def test_run_json_that_is_not_a_document_is_named(tmp_path: Path, text: str) -> None:
    (tmp_path / "run.json").write_text(text)
    with pytest.raises(InputError) as err:
        run_document.read(tmp_path)
    assert str(tmp_path / "run.json") in err.value.render()


def test_a_missing_run_json_or_run_dir_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="run.json is missing"):
        run_document.read(tmp_path)
    with pytest.raises(InputError, match="is not a directory"):
        run_document.read(tmp_path / "absent")


def test_a_prepared_engine_is_recorded_as_the_run_recorded_it() -> None:
    """engine_prepared writes the keys the run wrote by hand: the facts, why it was refused,
    the images it was sent, and on another host its work volume and helper path."""
    doc = run_document.read(GOLDEN)
    prepared = ("refused", "images_imported_s", "placement", "work_volume", "helper_path")
    facts = {k: v for k, v in next(iter(_golden()["engines"].values())).items()
             if k not in prepared}
    imported = {"rg": 2.5}
    doc.engine_prepared(facts, None, imported, {"placement": "loop-here"})
    assert doc.to_json()["engines"][facts["id"]] == {**facts, "refused": None,
                                                     "images_imported_s": imported,
                                                     "placement": "loop-here"}
    other = {**facts, "id": "engine-000000000002", "on_this_host": False}
    doc.engine_prepared(other, "guards failed", {}, {
        "placement": "engine-made", "work_volume": "vol", "helper_path": "/opt/helper"})
    assert doc.to_json()["engines"][other["id"]] == {
        **other, "refused": "guards failed", "images_imported_s": {}, "placement": "engine-made",
        "work_volume": "vol", "helper_path": "/opt/helper"}
    doc.resumed([facts])  # a resume records the engine's facts afresh, as before
    assert doc.to_json()["engines"][facts["id"]] == facts
