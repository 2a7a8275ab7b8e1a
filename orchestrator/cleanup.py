"""Find and remove what sandbench left behind, by label and then by id only: containers
carrying `sandbench.managed`, build-stage or temporary images, and the arms' file systems
that an interrupted run left mounted under the runs directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import docker.errors

from orchestrator import engine as eng
from orchestrator import workfs
from orchestrator.engine import Engine


@dataclass(frozen=True)
class Leftover:
    kind: str  # container | image | mount
    id: str
    name: str
    detail: str


def find(engine: Engine, run_id: str | None = None) -> list[Leftover]:
    label = f"{eng.LABEL_RUN}={run_id}" if run_id else f"{eng.LABEL_MANAGED}=true"
    found = [Leftover("container", c["Id"], (c.get("Names") or ["?"])[0].lstrip("/"),
                      f"{c['State']} arm={c['Labels'].get(eng.LABEL_ARM, '')} "
                      f"run={c['Labels'].get(eng.LABEL_RUN, '')}")
             for c in engine.call("list containers", engine.api.containers, all=True,
                                  filters={"label": label})]
    if run_id is None:
        seen = set()
        for label in (f"{eng.LABEL_STAGE}=build", f"{eng.LABEL_TEMPORARY}=true"):
            for image in engine.call("list images", engine.api.images,
                                     filters={"label": label}):
                if image["Id"] not in seen:
                    seen.add(image["Id"])
                    found.append(Leftover("image", image["Id"],
                                          ",".join(image.get("RepoTags") or []) or "<none>",
                                          label))
    return found


def find_mounts(runs_dir: Path) -> list[Leftover]:
    """Arm file systems still mounted under `runs_dir` (a run killed mid-arm leaves them)."""
    return [Leftover("mount", str(point), point.parent.name, "an arm's file system")
            for point in workfs.leftover_mounts(runs_dir)]


def remove(engine: Engine, leftovers: list[Leftover]) -> list[Leftover]:
    removed = []
    for item in leftovers:
        try:
            if item.kind == "mount":
                workfs.unmount(Path(item.id))
            elif item.kind == "container":
                engine.call("remove container", engine.api.remove_container, item.id,
                            force=True, v=True)
            else:
                engine.call("remove image", engine.api.remove_image, item.id, force=False)
        except docker.errors.NotFound:
            continue
        removed.append(item)
    return removed
