"""An engine that remaps its containers' ids (orchestrator/sandbox/userns.py): detected from `docker
info`, the kernel's map parsed strictly, container ids turned into the host's, recorded in
run.json and disclosed once per remapping engine, in engine order."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from orchestrator.run import document as run_document
from orchestrator.sandbox import userns
from orchestrator.errors import InputError, SandbenchError
from orchestrator.fsutil import canonical_json
from orchestrator.score.environment import disclosure
from orchestrator.settings import Settings
from orchestrator.run import pool

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"
BASE = 0x70000000
REMAPPED = {"remap": True, "uid_map": [[0, BASE, 65536]], "gid_map": [[0, BASE + 7, 65536]]}


def test_docker_info_says_whether_an_engine_remaps() -> None:
    assert userns.remaps({"SecurityOptions": ["name=seccomp,profile=default", "name=userns"]})
    assert not userns.remaps({"SecurityOptions": ["name=seccomp,profile=default"]})
    assert not userns.remaps({"SecurityOptions": None})


def test_a_kernel_map_is_parsed_and_anything_else_refused() -> None:
    text = f"         0 {BASE}      65536\n  70000 5000 10\n"
    assert userns.parse(text, "uid_map") == ((0, BASE, 65536), (70000, 5000, 10))
    for bad in ("", "0 1\n", "0 x 3\n", "-1 0 3\n", "0 0 1\n" * (userns.MAP_LINES + 1)):
        with pytest.raises(SandbenchError, match="uid_map: expected"):
            userns.parse(bad, "uid_map")


def test_container_ids_become_the_hosts_and_an_unmapped_one_is_refused() -> None:
    ids = userns.IdMap.of({"userns": REMAPPED})
    assert ids is not None and ids.base() == (BASE, BASE + 7)
    assert ids.on_host("65532:65532") == f"{BASE + 65532}:{BASE + 7 + 65532}"
    assert userns.host_owner("65532:65532", ids) == ids.on_host("65532:65532")
    assert userns.host_owner("1000:1000", None) == "1000:1000"
    with pytest.raises(SandbenchError, match="container uid 65536 has no uid on the host"):
        ids.on_host("65536:0")
    with pytest.raises(SandbenchError, match="its mapping was not read"):
        userns.IdMap.of({"url": "unix:///x", "userns": {"remap": True}})
    assert userns.IdMap.of({"userns": {"remap": False}}) is None
    assert userns.IdMap.of({}) is None  # facts of a run recorded before
    assert ids.to_json() == {k: v for k, v in REMAPPED.items() if k != "remap"}


def test_this_process_map_reads_from_the_kernel() -> None:
    ids = userns.read(os.getpid())
    assert ids.uids and ids.gids
    assert ids.on_host(f"{os.getuid()}:{os.getgid()}")  # our own ids are mapped


def test_run_json_records_the_mapping_and_an_older_run_json_stays_as_it_was(
        tmp_path: Path) -> None:
    data = json.loads((GOLDEN / "run.json").read_bytes())
    (engine_id,) = data["engines"]
    # A run.json recorded before engines said whether they remap reads and writes back
    # without the key.
    data["engines"][engine_id].pop("userns", None)
    (tmp_path / "run.json").write_text(json.dumps(data))
    older = json.loads(canonical_json(run_document.read(tmp_path).to_json()))
    assert "userns" not in older["engines"][engine_id]
    data["engines"][engine_id]["userns"] = REMAPPED
    (tmp_path / "run.json").write_text(json.dumps(data))
    doc = run_document.read(tmp_path)
    assert doc.engines is not None and doc.engines[engine_id].userns == REMAPPED
    assert json.loads(canonical_json(doc.to_json()))["engines"][engine_id]["userns"] == REMAPPED
    data["engines"][engine_id]["userns"] = {"remap": True, "uid_map": [[0, BASE]]}
    (tmp_path / "run.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="uid_map"):
        run_document.read(tmp_path)


def _run(engines: dict) -> dict:
    return {"run_id": "r", "date": "2026-01-01", "deviations": [], "suite": {"reps": 1},
            "corpus": {"repo": "o/r", "sha": "a", "tracked_files": 1},
            "host": {"arch": "x86_64", "cores": 2, "memory_bytes": 8 << 30},
            "engines": engines, "arms": {"rg": {"tool_version": "ripgrep 13.0.0"}}}


def test_the_disclosure_names_every_remapping_engine_in_engine_order() -> None:
    facts = {"version": "1", "arch": "x86_64", "cores": 2, "memory_bytes": 8 << 30}
    run = _run({"engine-b": {**facts, "userns": REMAPPED},
                "engine-a": {**facts, "userns": {**REMAPPED, "uid_map": [[0, 5, 10],
                                                                         [10, 100, 1]]}},
                "engine-c": {**facts, "userns": {"remap": False}}, "engine-d": facts})
    env = disclosure(run, "rg", {"rg": "available"}, {"rg": True}, [], [],
                     tool_under_test=None)
    lines = [d for d in env["deviations"] if "userns-remap" in d]
    assert lines == [
        "engine engine-a ran its containers in a user namespace of its own (userns-remap): "
        f"container uids 0-9 as 5-14 and 10-10 as 100-100, gids 0-65535 as {BASE + 7}-"
        f"{BASE + 7 + 65535} of the host; what an arm wrote is owned by those host ids",
        "engine engine-b ran its containers in a user namespace of its own (userns-remap): "
        f"container uids 0-65535 as {BASE}-{BASE + 65535}, gids 0-65535 as {BASE + 7}-"
        f"{BASE + 7 + 65535} of the host; what an arm wrote is owned by those host ids"]
    plain = disclosure(_run({"engine-c": {**facts, "userns": {"remap": False}}}), "rg",
                       {"rg": "available"}, {"rg": True}, [], [], tool_under_test=None)
    assert not any("userns" in d for d in plain["deviations"])


class _NoEngine:
    """An engine that must not be asked anything."""

    def __getattr__(self, name: str) -> None:
        raise AssertionError(f"the engine was asked {name}")


def _member(url: str, found: dict) -> pool.Member:
    facts = {"id": "engine-x", "url": url, "userns": found}
    return pool.Member(url, _NoEngine(), facts)  # type: ignore[arg-type]


def test_learning_the_ids_probes_only_a_remapping_engine_once_and_only_on_this_host(
        tmp_path: Path) -> None:
    settings = Settings(project_root=tmp_path, bench_root=tmp_path / "bench")
    for found in ({"remap": False}, REMAPPED):  # nothing to read, or read already
        member = _member("unix:///nowhere.sock", dict(found))
        pool.learn_ids(member, settings, "65532:65532", "run-x")
        assert member.facts["userns"] == found
    other_host = _member("ssh://build-host", {"remap": True})
    with pytest.raises(SandbenchError, match="ssh://build-host remaps its containers' ids"):
        pool.learn_ids(other_host, settings, "65532:65532", "run-x")
