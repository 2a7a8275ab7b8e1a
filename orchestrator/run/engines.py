"""The engines of run.json: each engine's facts (`engine_pool.facts`) and what making it ready
for the run recorded, written and read back."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

# The placement whose engine makes the arms' file systems (placement.engine_made.KIND): the
# run's work volume and helper path there are recorded.
ENGINE_MADE = "engine-made"
# EngineRecord's fields a run recorded before them lacks.
_LATER_FACTS = ("userns", "rootless", "limits", "dialect", "preparation")


@dataclass
class Preparation:
    """What making a run's engine ready recorded: why it was refused, the images it was sent,
    its placement (None in a run recorded before it was), and where the engine made the
    file systems, the run's work volume and helper there."""

    refused: str | None
    images_imported_s: dict[str, float]
    placement: str | None = None
    work_volume: str | None = None
    helper_path: str | None = None

    @property
    def places(self) -> bool:
        """Whether the run's work volume and helper are recorded (an engine that made the
        file systems; a run recorded before placements were named records them alone)."""
        return self.placement == ENGINE_MADE or (self.placement is None and bool(
            self.work_volume or self.helper_path))


@dataclass
class EngineRecord:
    """One engine of the run: engines.facts(), then what preparing it found."""

    id: str
    url: str
    version: str | None
    api_version: str | None
    kernel: str | None
    os: str | None
    arch: str | None
    cores: int | None
    memory_bytes: int | None
    storage_driver: str | None
    security_options: list[str] | None
    on_this_host: bool
    # Whether it remaps its containers' ids, and how (userns.IdMap); whether it is rootless;
    # the limits it enforces (engine_limits.facts). None in a run recorded before they were.
    userns: dict[str, Any] | None = None
    rootless: bool | None = None
    limits: dict[str, Any] | None = None
    # docker or podman (orchestrator/sandbox/podman.py); None in a run recorded before it was read.
    dialect: str | None = None
    preparation: Preparation | None = None

    @classmethod
    def from_facts(cls, facts: dict[str, Any]) -> EngineRecord:
        return cls(**{f.name: facts[f.name] for f in dataclasses.fields(cls)
                      if f.name in facts or f.name not in _LATER_FACTS})

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name != "preparation" and (f.name not in _LATER_FACTS
                                               or getattr(self, f.name) is not None)}
        if self.preparation is not None:
            p = self.preparation
            out.update({"refused": p.refused, "images_imported_s": p.images_imported_s})
            if p.placement is not None:
                out["placement"] = p.placement
            if p.places:
                out.update({"work_volume": p.work_volume, "helper_path": p.helper_path})
        return out


def engine_record(data: dict[str, Any]) -> EngineRecord:
    """An engine entry of run.json, read back."""
    record = EngineRecord.from_facts(data)
    if "refused" in data or "images_imported_s" in data:
        record.preparation = Preparation(
            data.get("refused"), data.get("images_imported_s", {}), data.get("placement"),
            data.get("work_volume"), data.get("helper_path"))
    return record
