"""sandbench's own containers (the engine agent, its copy holder, the manifest reader) are
created with the hardening the isolation table gives each (folds.own_create), not with a
list of their own: a setting added to the table reaches them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from orchestrator import images
from orchestrator.sandbox import remote
from orchestrator.images import manifests
from orchestrator.isolation import folds, table
from orchestrator.isolation.setting import AGENT, HOLDER, MANIFEST, Setting, own
from orchestrator.settings import Settings

REPO = Path(__file__).resolve().parents[2]

# A setting every own container takes (the holder and the build's RUN steps say why not).
MARKED = Setting("marked", create=lambda s: {}, outside=lambda p, v: [],
                 own=own({"marked": True}, holder={"marked": True}))


class _RecordingEngine:
    """Records what each container is created with; answers as an empty engine would."""

    def __init__(self, answer: bytes = b"") -> None:
        self.created: list[dict[str, Any]] = []
        self.answer = answer

    def run_once(self, spec: dict[str, Any], timeout_s: float = 0) -> bytes:
        self.created.append(spec)
        return self.answer

    def create_container(self, spec: dict[str, Any], what: str = "") -> str:
        self.created.append(spec)
        return "container-id"

    def copy_in(self, container: str, path: str, archive: Any) -> None:
        pass

    def remove_container(self, container: str) -> None:
        pass


def _contains(spec: dict[str, Any], part: dict[str, Any]) -> bool:
    return all(spec.get(k) == v for k, v in part.items())


@pytest.fixture(autouse=True)
def marked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table, "SETTINGS", (*table.SETTINGS, MARKED))


def test_the_engine_agent_and_its_holder_take_their_hardening_from_the_table() -> None:
    engine = _RecordingEngine(b"yes")
    site = remote.RemoteSite(engine, "e1", "run-x", "sha256:" + "a" * 64)  # type: ignore[arg-type]
    assert site.has_filesystems("rg", ["state"])
    site.seed("volume", ["home"], "65532:65532")
    agent, holder = engine.created
    assert agent["marked"] is True and _contains(agent, folds.own_create(AGENT))
    assert holder["marked"] is True and _contains(holder, folds.own_create(HOLDER))
    assert agent["network_mode"] == holder["network_mode"] == "none"


def test_the_manifest_reader_takes_its_hardening_from_the_table(tmp_path: Path) -> None:
    marker_engine = _RecordingEngine()
    recipe = dataclasses.replace(images.load_recipes(REPO / "images")["rg"],
                                 tool_version=("rg", "--version"))
    settings = Settings(project_root=REPO, bench_root=tmp_path / "bench")
    with pytest.raises(Exception, match="not three parts"):
        manifests.read_manifests(marker_engine, settings, recipe,  # type: ignore[arg-type]
                                 "sha256:" + "1" * 64)
    (spec,) = marker_engine.created
    assert spec["marked"] is True and _contains(spec, folds.own_create(MANIFEST))
    assert spec["read_only"] is True and spec["cap_drop"] == ["ALL"]
